/**
 * Behaviours of the tenant config's validation that hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const refusal = (raw: unknown) => thrown(() => parseTenantConfig(raw), TenantConfigError).message;

describe("tenant config: bounds hand mutation found unwatched", () => {
  // Mutant: `!==` between the two "is unset" tests widened to `||` let a tenant through with nowhere to notify.
  it("refuses alarms with neither email nor topicArn: every alarm would fire to no one", () => {
    expect(refusal({ ...minimal, alarms: {} })).toBe('tenant "acme": field alarms: set exactly one of email or topicArn');
    expect(refusal({ ...minimal, alarms: { syncLagThresholdSeconds: 3600 } })).toBe('tenant "acme": field alarms: set exactly one of email or topicArn');
  });

  // Mutants: the account and region patterns without their closing `$` took a value with anything after its digits.
  it.each(["1234567890123", "123456789012 ", "123456789012x"])("refuses the account %j, which is no 12-digit id", (account) => {
    expect(refusal({ ...minimal, account })).toBe('tenant "acme": field account: must be a 12-digit AWS account id');
  });

  it.each(["eu-west-1x", "eu-west-1 ", "eu-west-1/"])("refuses the region %j, which names no region", (region) => {
    expect(refusal({ ...minimal, region })).toBe('tenant "acme": field region: must be an AWS region such as eu-west-1');
  });
});
