/**
 * Provider URL behaviours hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { providerUrlsFrom, resolveProviderUrl } from "../../infra/provider-urls.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { thrown } from "../thrown.js";

describe("provider URL: hand mutation found unwatched", () => {
  // Mutant: the plain-http check without its leading `\s*` let a context URL led by a blank through, and the URL parser,
  // which drops leading blanks, then took http:// for a loopback host: a stack whose Lambdas call what they cannot reach.
  it("refuses a plain-http loopback URL from the cdk context even led by blanks", () => {
    const prod = parseTenantConfig({ id: "acme", environment: "production", alarms: { email: "ops@acme.test" } });
    expect(thrown(() => resolveProviderUrl(prod, providerUrlsFrom({ production: " http://127.0.0.1:4010" }, {})), TenantConfigError).message).toBe(
      'tenant "acme": field environment: "production" in the cdk context qashioUrls must be an https:// URL for an AWS stack (http:// is for a local sandbox only)',
    );
  });

  // Mutant: a URL record not built by providerUrlsFrom (the app builder's option) named "environment", a setting the
  // operator never wrote, instead of the deployment's variable.
  it("names the deployment's variable for a URL record given directly, with the tenant and field on the error", () => {
    const prod = parseTenantConfig({ id: "acme", environment: "production", alarms: { email: "ops@acme.test" } });
    const error = thrown(() => resolveProviderUrl(prod, { production: "http://api.provider.example" }), TenantConfigError);
    expect(error.message).toBe(
      'tenant "acme": field environment: QASHIO_PRODUCTION_URL must be an https:// URL for an AWS stack (http:// is for a local sandbox only)',
    );
    // Mutants: the error without its field (here and for a missing URL), or without the refusal it wraps as its cause.
    expect([error.tenant, error.field]).toEqual(["acme", "environment"]);
    expect((error.cause as Error).message).toBe("QASHIO_PRODUCTION_URL must be an https:// URL for an AWS stack (http:// is for a local sandbox only)");
    const missing = thrown(() => resolveProviderUrl(prod, {}), TenantConfigError);
    expect([missing.tenant, missing.field]).toEqual(["acme", "environment"]);
  });

  // Mutant: "got no object" for every value that is no object left the operator to guess what -c passed.
  it.each([
    ["5", "number"],
    ["true", "boolean"],
  ])("names the kind of a qashioUrls given as %s on the command line", (text, kind) => {
    expect(thrown(() => providerUrlsFrom(text, {}), TenantConfigError).message).toMatch(new RegExp(`; got ${kind}$`));
  });
});
