/** The EventBridge source rules (shared/bridge/events/source.ts) that the tenants file, the functions and local mode share. */
import { describe, expect, it } from "vitest";
import { eventSourceProblem } from "../../shared/bridge/events/source.js";

describe("eventSourceProblem", () => {
  it("refuses only the aws. namespace, not a source that merely begins with those letters", () => {
    expect(eventSourceProblem("aws.qashio")).toBe("must not start with aws.");
    expect(eventSourceProblem("awsome.qashio.bridge")).toBeUndefined();
    expect(eventSourceProblem("aws-team.bridge")).toBeUndefined();
  });

  it("names the first rule a source breaks, in the order they are checked", () => {
    expect(eventSourceProblem("aws./bridge")).toBe("must be an EventBridge source such as qashio.bridge");
  });

  it("takes only letters, digits, '.', '-' and '_' after a leading letter or digit, so every registry schema name <source>@<type> is one the registry takes", () => {
    for (const source of ["_acme.bridge", ".acme", "acme:bridge", "acme@bridge", "acme bridge", "acme/bridge", "acmé.bridge"]) {
      expect(eventSourceProblem(source), source).toBe("must be an EventBridge source such as qashio.bridge");
    }
    for (const source of ["acme_eu-1.qashio.bridge", "9acme", "A"]) expect(eventSourceProblem(source), source).toBeUndefined();
  });
});
