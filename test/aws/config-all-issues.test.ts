import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/aws/config.js";
import { ConfigurationError } from "../../shared/aws/errors.js";

const valid = {
  TENANT_ID: "acme",
  QASHIO_BASE_URL: "https://api.example.com/",
  TABLE_NAME: "bridge",
  SECRET_ID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-AbCdEf",
  EVENT_BUS_NAME: "bridge-bus",
  PII_MODE: "hash",
};

function issuesOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).issues.map((i) => i.variable).sort();
  }
  throw new Error("no error");
}

describe("loadConfig reports every bad setting in one error", () => {
  it("names a bad QASHIO_BASE_URL together with the other bad variables, not only once they are fixed", () => {
    expect(issuesOf({ ...valid, TABLE_NAME: undefined, QASHIO_BASE_URL: "http://api.example.com" })).toEqual(["QASHIO_BASE_URL", "TABLE_NAME"]);
    expect(issuesOf({ ...valid, PII_MODE: "sometimes", QASHIO_BASE_URL: "production" })).toEqual(["PII_MODE", "QASHIO_BASE_URL"]);
  });
});
