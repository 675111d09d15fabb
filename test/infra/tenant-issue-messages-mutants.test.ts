/**
 * How a tenant's zod issues are worded, where hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const refusal = (raw: unknown) => thrown(() => parseTenantConfig(raw), TenantConfigError).message;

describe("tenant issue messages: hand mutation found unwatched", () => {
  // Mutant: a misspelt key three edits from a field got that field as a hint, a guess too far to be likely.
  it("suggests no field three edits from a misspelt key, and one two edits from it", () => {
    expect(refusal({ ...minimal, piiMxxx: "hash" })).toBe('tenant "acme": field piiMxxx: Unrecognized key: "piiMxxx"');
    expect(refusal({ ...minimal, piiMoxx: "hash" })).toBe('tenant "acme": field piiMoxx: Unrecognized key: "piiMoxx" (did you mean "piiMode"?)');
  });

  // Mutant: a webhook auth type given as null was called required, though the file does set it.
  it("says a webhook auth type given as null is no valid type, not that it is required", () => {
    const account = { account: "123456789012", region: "eu-west-1" };
    const password = { secretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf" };
    const webhooks = [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: null, username: "u", password } }];
    expect(refusal({ ...minimal, ...account, webhooks })).toBe(
      `tenant "acme": field webhooks[0].auth.type: Invalid discriminator value. Expected 'apiKey' | 'basic' | 'oauthClientCredentials'`,
    );
  });
});
