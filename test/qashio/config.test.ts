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

  it("names a bad value and where it came from", () => {
    expect(() => resolveBaseUrl("staging", env)).toThrow(ConfigurationError);
    expect(() => resolveBaseUrl("staging", env)).toThrow(/"staging"/);
    expect(() => resolveBaseUrl("sandbox", { QASHIO_SANDBOX_URL: "ftp://x" })).toThrow(/QASHIO_SANDBOX_URL "ftp:\/\/x"/);
    expect(() => resolveBaseUrl("https://x.test/?token=1", env)).toThrow(/query string/);
  });

  it("refuses credentials in a URL without repeating them", () => {
    const error = (() => {
      try {
        resolveBaseUrl("https://user:pa55word@x.test", env);
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error?.message).not.toContain("pa55word");
  });

  it.each([
    ["a query string", "https://api.example/v1?api_key=s3cr3t-q", "https://api.example/v1?***"],
    ["a fragment", "https://api.example/v1#s3cr3t-f", "https://api.example/v1#***"],
    ["both", "https://api.example/v1?k=s3cr3t-q#s3cr3t-f", "https://api.example/v1?***#***"],
  ])("masks %s of a rejected base URL", (_label, url, shown) => {
    const error = (() => {
      try {
        resolveBaseUrl("eu", { QASHIO_EU_URL: url });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect(error?.message).toContain(`QASHIO_EU_URL "${shown}"`);
    expect(error?.message).not.toMatch(/s3cr3t/);
  });

  it("masks the query string of a target that is not a URL at all", () => {
    expect(() => resolveBaseUrl("api.example/v1?token=s3cr3t", env)).toThrow(/"api\.example\/v1\?\*\*\*"/);
  });
});

describe("resolveAuthorizeUrl", () => {
  it("prefers the explicit URL, else QASHIO_AUTHORIZE_URL", () => {
    expect(resolveAuthorizeUrl("https://a.test/", {})).toBe("https://a.test");
    expect(resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://b.test" })).toBe("https://b.test");
    expect(() => resolveAuthorizeUrl(undefined, {})).toThrow(/QASHIO_AUTHORIZE_URL/);
  });
});
