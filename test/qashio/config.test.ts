import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { authorizeUrlProblem, baseUrlProblem, isLoopbackHost, resolveAuthorizeUrl, resolveBaseUrl } from "../../shared/qashio/config.js";
import { ClientConfigurationError } from "../../shared/qashio/errors.js";
import { thrown } from "../thrown.js";

const env = {
  QASHIO_PRODUCTION_URL: "https://prod.example.test/",
  QASHIO_EU_URL: "https://eu.example.test",
  QASHIO_SANDBOX_URL: "http://localhost:4010",
};

describe("resolveBaseUrl", () => {
  it.each([
    ["production", "https://prod.example.test"],
    ["eu", "https://eu.example.test"],
    ["sandbox", "http://localhost:4010"],
    ["Sandbox", "http://localhost:4010"],
    [" EU ", "https://eu.example.test"],
    ["https://explicit.example.test/base/", "https://explicit.example.test/base"],
  ])("resolves %s", (target, expected) => {
    expect(resolveBaseUrl(target, env)).toBe(expected);
  });

  it("names the missing variable of a deployment", () => {
    expect(() => resolveBaseUrl("eu", {})).toThrow(/QASHIO_EU_URL/);
  });

  it("names the deployment and its variable when the variable is missing or blank", () => {
    for (const urls of [{}, { QASHIO_EU_URL: " \t" }]) {
      const error = thrown(() => resolveBaseUrl(" EU ", urls));
      expect(error).toBeInstanceOf(ClientConfigurationError);
      // Logs and the CLI show the name: it says a setting is wrong, not the provider.
      expect(error.name).toBe("ClientConfigurationError");
      expect(error.message).toBe('deployment "eu" needs QASHIO_EU_URL to be set to its base URL');
    }
  });

  it.each([
    ["a scheme in capitals", "HTTPS://api.example/base", "https://api.example/base"],
    ["no-break spaces a paste left around it", "\u00a0https://api.example/base\u00a0", "https://api.example/base"],
    ["trailing slashes", "https://api.example/base//", "https://api.example/base"],
  ])("takes a literal URL with %s", (_what, target, expected) => {
    expect(resolveBaseUrl(target, {})).toBe(expected);
  });

  it.each(["constructor", "__proto__"])("takes no member every object has, %s, for a deployment", (target) => {
    expect(() => resolveBaseUrl(target, env)).toThrow("base URL target is neither a deployment (production, eu, sandbox) nor an http(s) URL");
  });

  it("names where a bad value came from and what is wrong, never the value", () => {
    expect(() => resolveBaseUrl("staging", env)).toThrow(ClientConfigurationError);
    expect(() => resolveBaseUrl("staging", env)).toThrow("base URL target is neither a deployment (production, eu, sandbox) nor an http(s) URL");
    expect(() => resolveBaseUrl("sandbox", { QASHIO_SANDBOX_URL: "ftp://x" })).toThrow("QASHIO_SANDBOX_URL (host x) must use https");
    expect(() => resolveBaseUrl("https://x.test/?token=1", env)).toThrow("base URL (host x.test) must not carry a query string or fragment");
  });

  it("refuses port 0, which no server listens on, in a base URL and in a named environment's URL", () => {
    expect(() => resolveBaseUrl("https://x.test:0", env)).toThrow("base URL (host x.test:0) names port 0, on which no server listens");
    expect(() => resolveBaseUrl("sandbox", { QASHIO_SANDBOX_URL: "http://127.0.0.1:0" })).toThrow("QASHIO_SANDBOX_URL (host 127.0.0.1:0) names port 0");
    expect(resolveBaseUrl("https://x.test:8443", env)).toBe("https://x.test:8443");
  });

  it("refuses credentials in a URL without repeating them", () => {
    expect(() => resolveBaseUrl("https://user:pa55word@x.test", env)).toThrow("base URL must not carry credentials (user:password@)");
    expect(() => resolveBaseUrl("https://:pa55word@x.test", env)).toThrow("base URL must not carry credentials (user:password@)");
  });

  it("refuses a user name alone (a token pasted before the host), without repeating it", () => {
    for (const [target, source, urls] of [
      ["https://s3cr3t-tok@x.test", "base URL", {}],
      ["eu", "QASHIO_EU_URL", { QASHIO_EU_URL: "https://s3cr3t-tok@x.test" }],
    ] as const) {
      const error = thrown(() => resolveBaseUrl(target, urls));
      expect(error.message).toBe(`${source} must not carry credentials (user:password@)`);
      expect(error.message).not.toContain("s3cr3t-tok");
    }
  });

  it.each(["https://api.example/v1?", "https://api.example/v1#", "https://api.example/?#"])(
    "refuses %s: an empty query or fragment mark would sit before every request path",
    (url) => {
      expect(baseUrlProblem(url)).toBe("must not carry a query string or fragment");
      expect(() => resolveBaseUrl("eu", { QASHIO_EU_URL: url })).toThrow("QASHIO_EU_URL (host api.example) must not carry a query string or fragment");
      expect(authorizeUrlProblem(url)).toBe("must not carry a query string or fragment");
    },
  );

  it("names no host for a refused value that has none", () => {
    const error = thrown(() => resolveBaseUrl("eu", { QASHIO_EU_URL: "urn:example:api" }));
    expect(error.message).toBe("QASHIO_EU_URL must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)");
  });

  it.each([
    ["a password with /", "https://svcacct:pa/ss@host.example", "is not an absolute http(s) URL", ["pa/ss", "svcacct", "host.example"]],
    ["a password with @", "https://svcacct:p@ss@host.example", "must not carry credentials (user:password@)", ["p@ss", "ss@", "svcacct", "host.example"]],
    ["a password with / and a path", "https://svc:Pr0dS3cret/x@api.example", "is not an absolute http(s) URL", ["Pr0dS3cret", "svc", "api.example"]],
    ["a user name with / (which parses as a host)", "https://tok/en@host.example?x=1", "must not carry a query string or fragment", ["tok", "en@", "host.example"]],
  ])("never shows %s, nor its host", (_what, url, problem, leaks) => {
    for (const [target, source, urls] of [
      [url, "base URL", {}],
      ["production", "QASHIO_PRODUCTION_URL", { QASHIO_PRODUCTION_URL: url }],
    ] as const) {
      const error = thrown(() => resolveBaseUrl(target, urls));
      expect(error).toBeInstanceOf(ClientConfigurationError);
      expect(error.message).toBe(`${source} ${problem}`);
      for (const leak of leaks) expect(error.message).not.toContain(leak);
    }
  });

  it.each([
    ["a query string", "https://api.example/v1?api_key=s3cr3t-q"],
    ["a fragment", "https://api.example/v1#s3cr3t-f"],
    ["both", "https://api.example/v1?k=s3cr3t-q#s3cr3t-f"],
  ])("shows only the host of a base URL rejected for %s", (_label, url) => {
    const error = thrown(() => resolveBaseUrl("eu", { QASHIO_EU_URL: url }));
    expect(error).toBeInstanceOf(ClientConfigurationError);
    expect(error.message).toBe("QASHIO_EU_URL (host api.example) must not carry a query string or fragment");
  });

  it("does not quote a target that is not a URL at all", () => {
    const error = thrown(() => resolveBaseUrl("api.example/v1?token=s3cr3t", env));
    // Refused as a setting problem, not by the URL parser, whose TypeError keeps the whole value as its `input`.
    expect(error).toBeInstanceOf(ClientConfigurationError);
    expect(error.message).toBe("base URL target is neither a deployment (production, eu, sandbox) nor an http(s) URL");
    expect(inspect(error, { depth: 5 })).not.toContain("api.example");
    expect(inspect(error, { depth: 5 })).not.toContain("s3cr3t");
  });
});

describe("https", () => {
  const HTTPS_REQUIRED = "must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)";

  it.each([
    ["http://api.example", "api.example"],
    ["http://sandbox.local", "sandbox.local"],
    ["http://10.0.0.1:4010", "10.0.0.1:4010"],
    ["http://localhost.evil.example", "localhost.evil.example"],
    ["http://127.0.0.1.nip.io", "127.0.0.1.nip.io"],
    ["http://[::2]", "[::2]"],
  ])("refuses %s, naming the setting and that https is required", (url, host) => {
    expect(baseUrlProblem(url)).toBe(HTTPS_REQUIRED);
    expect(() => resolveBaseUrl("eu", { QASHIO_EU_URL: url })).toThrow(`QASHIO_EU_URL (host ${host}) ${HTTPS_REQUIRED}`);
    expect(() => resolveBaseUrl(url, {})).toThrow(`base URL (host ${host}) ${HTTPS_REQUIRED}`);
    expect(() => resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: url })).toThrow(`QASHIO_AUTHORIZE_URL (host ${host}) ${HTTPS_REQUIRED}`);
  });

  it("accepts https, and http for a loopback host as the URL parser writes it", () => {
    for (const host of ["localhost", "127.0.0.1", "127.255.0.9", "[::1]"]) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["localhost.", "128.0.0.1", "[::ffff:7f00:1]", "example.localhost", "0.0.0.0", "a127.0.0.1", "127.0.0.1000"]) expect(isLoopbackHost(host)).toBe(false);
    const accepted = ["http://localhost:4010", "http://LOCALHOST:4010/", "http://127.0.0.1:9", "http://127.1.2.3", "http://127.1:4010", "http://[::1]:4010"];
    for (const url of [...accepted, "http://[0:0:0:0:0:0:0:1]", "https://api.example"]) {
      expect(baseUrlProblem(url)).toBeUndefined();
      expect(resolveBaseUrl("eu", { QASHIO_EU_URL: url })).toBe(new URL(url).href.replace(/\/+$/, ""));
    }
  });

  it.each(["ftp://localhost", "ws://127.0.0.1:4010", "wss://[::1]:4010"])("refuses %s: a loopback host is taken over http alone", (url) => {
    expect(baseUrlProblem(url)).toBe(HTTPS_REQUIRED);
  });
});

describe("the API's own paths", () => {
  const OWN_PATH = "must not hold the API's own path (/public/v1 or /oauth2/token): give the address it follows, such as https://api.example.com";

  it.each([
    "https://api.example/public/v1",
    "https://api.example/public/v1/",
    "https://api.example/public/v1/erp/transactions",
    "https://gw.example/qashio/Public/V1",
    "https://api.example/oauth2/token",
    "https://api.example/oauth2/token/",
  ])("refuses %s, which every request path would then repeat (each call a 404)", (url) => {
    expect(baseUrlProblem(url)).toBe(OWN_PATH);
    expect(() => resolveBaseUrl(url, {})).toThrow(OWN_PATH);
  });

  it("takes a base URL with a path of its own (a gateway's prefix)", () => {
    for (const url of ["https://gw.example/qashio", "https://gw.example/public/v10", "https://gw.example/oauth2-proxy", "https://gw.example/oauth2/token-proxy"]) expect(baseUrlProblem(url)).toBeUndefined();
  });
});

describe("sign-in addresses", () => {
  const SIGN_IN = "must not end with an OAuth path (/oauth2, /oauth2/validate or /oauth2/authorize), as an address pasted from a sign-in page does: give the address the API's paths follow, such as https://api.example.com";

  it.each([
    "https://api.example/oauth2",
    "https://api.example/oauth2/",
    "https://api.example/oauth2/validate",
    "https://gw.example/qashio/OAuth2/Authorize/",
  ])("refuses %s as a base URL, which would fail only at the first call", (url) => {
    expect(baseUrlProblem(url)).toBe(SIGN_IN);
    expect(() => resolveBaseUrl("eu", { QASHIO_EU_URL: url })).toThrow(`QASHIO_EU_URL (host ${new URL(url).host}) ${SIGN_IN}`);
  });

  it("takes them as the authorize screen's address except one ending /oauth2/authorize, which is refused in its own words", () => {
    expect(resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://auth.example/oauth2" })).toBe("https://auth.example/oauth2");
    expect(authorizeUrlProblem("https://auth.example/oauth2/validate")).toBeUndefined();
    expect(authorizeUrlProblem("https://auth.example/oauth2/authorize/sso")).toBeUndefined();
    const problem = "ends with /oauth2/authorize, which authorize appends itself: give the address before it";
    expect(authorizeUrlProblem("https://auth.example/sso/OAuth2/Authorize/")).toBe(problem);
    expect(() => resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://auth.example/oauth2/authorize" })).toThrow(`QASHIO_AUTHORIZE_URL (host auth.example) ${problem}`);
    // The checks every address shares still apply.
    expect(authorizeUrlProblem("https://auth.example/oauth2/token")).toMatch(/^must not hold the API's own path/);
  });
});

describe("resolveAuthorizeUrl", () => {
  it("prefers the explicit URL, else QASHIO_AUTHORIZE_URL", () => {
    expect(resolveAuthorizeUrl("https://a.test/", {})).toBe("https://a.test");
    expect(resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://b.test" })).toBe("https://b.test");
    expect(() => resolveAuthorizeUrl(undefined, {})).toThrow(/QASHIO_AUTHORIZE_URL/);
  });

  it("takes QASHIO_AUTHORIZE_URL for a blank explicit URL, and says which is missing when both are blank", () => {
    for (const explicit of ["", " \t"]) expect(resolveAuthorizeUrl(explicit, { QASHIO_AUTHORIZE_URL: " https://b.test " })).toBe("https://b.test");
    expect(() => resolveAuthorizeUrl(" ", { QASHIO_AUTHORIZE_URL: " " })).toThrow(new ClientConfigurationError("authorize URL needs QASHIO_AUTHORIZE_URL to be set"));
  });

  it("names the explicit URL when it is refused, and QASHIO_AUTHORIZE_URL when the explicit one was blank", () => {
    const problem = "must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)";
    expect(() => resolveAuthorizeUrl("http://a.test", { QASHIO_AUTHORIZE_URL: "https://b.test" })).toThrow(`authorize URL (host a.test) ${problem}`);
    expect(() => resolveAuthorizeUrl(" ", { QASHIO_AUTHORIZE_URL: "http://b.test" })).toThrow(`QASHIO_AUTHORIZE_URL (host b.test) ${problem}`);
  });
});
