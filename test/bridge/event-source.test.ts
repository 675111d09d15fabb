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
});
