import { describe, expect, it } from "vitest";
import { resolveAuthorizeUrl, resolveBaseUrl } from "../../shared/qashio/config.js";
import { ConfigurationError } from "../../shared/qashio/errors.js";

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
    ["https://explicit.example.test/base/", "https://explicit.example.test/base"],
  ])("resolves %s", (target, expected) => {
    expect(resolveBaseUrl(target, env)).toBe(expected);
  });

  it("names the missing variable of a deployment", () => {
    expect(() => resolveBaseUrl("eu", {})).toThrow(/QASHIO_EU_URL/);
  });

  it("names where a bad value came from and what is wrong, never the value", () => {
    expect(() => resolveBaseUrl("staging", env)).toThrow(ConfigurationError);
    expect(() => resolveBaseUrl("staging", env)).toThrow("base URL target is neither a deployment (production, eu, sandbox) nor an http(s) URL");
    expect(() => resolveBaseUrl("sandbox", { QASHIO_SANDBOX_URL: "ftp://x" })).toThrow("QASHIO_SANDBOX_URL (host x) must use http or https");
    expect(() => resolveBaseUrl("https://x.test/?token=1", env)).toThrow("base URL (host x.test) must not carry a query string or fragment");
  });

  it("refuses credentials in a URL without repeating them", () => {
    expect(() => resolveBaseUrl("https://user:pa55word@x.test", env)).toThrow("base URL must not carry credentials (user:password@)");
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
      const error = errorOf(() => resolveBaseUrl(target, urls));
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error.message).toBe(`${source} ${problem}`);
      for (const leak of leaks) expect(error.message).not.toContain(leak);
    }
  });

  it.each([
    ["a query string", "https://api.example/v1?api_key=s3cr3t-q"],
    ["a fragment", "https://api.example/v1#s3cr3t-f"],
    ["both", "https://api.example/v1?k=s3cr3t-q#s3cr3t-f"],
  ])("shows only the host of a base URL rejected for %s", (_label, url) => {
    const error = errorOf(() => resolveBaseUrl("eu", { QASHIO_EU_URL: url }));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error.message).toBe("QASHIO_EU_URL (host api.example) must not carry a query string or fragment");
  });

  it("does not quote a target that is not a URL at all", () => {
    const error = errorOf(() => resolveBaseUrl("api.example/v1?token=s3cr3t", env));
    expect(error.message).not.toContain("api.example");
    expect(error.message).not.toContain("s3cr3t");
  });
});

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a throw");
}

describe("resolveAuthorizeUrl", () => {
  it("prefers the explicit URL, else QASHIO_AUTHORIZE_URL", () => {
    expect(resolveAuthorizeUrl("https://a.test/", {})).toBe("https://a.test");
    expect(resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://b.test" })).toBe("https://b.test");
    expect(() => resolveAuthorizeUrl(undefined, {})).toThrow(/QASHIO_AUTHORIZE_URL/);
  });
});
