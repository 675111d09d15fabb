/**
 * What a refusal of the tenants file as a whole carries, that hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };

describe("tenants document: hand mutation found unwatched", () => {
  // Mutant: a file-level refusal without its field, which the error carries beside its message as a tenant's does.
  it.each([
    [{ tenant: [minimal] }, "tenant"],
    [{ tenants: minimal }, "tenants"],
    [[minimal], "(root)"],
  ])("names the field of a file-level fault on the error, with no tenant", (document, field) => {
    const error = thrown(() => parseTenantsDocument(document), TenantConfigError);
    expect([error.tenant, error.field]).toEqual([undefined, field]);
    expect(error.message).toMatch(new RegExp(`^tenants file: field ${field.replace(/[()]/g, "\\$&")}: `));
  });
});
