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
});
