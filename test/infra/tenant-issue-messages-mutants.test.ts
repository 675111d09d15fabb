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
});
