import { describe, expect, it } from "vitest";
import { baseUrlHint } from "../../shared/cli/base-url-hint.js";
import { TOKEN_PATH } from "../../shared/qashio/auth/oauth.js";
import { InvalidResponseError, NetworkError, NotFoundError, QashioError } from "../../shared/qashio/errors.js";

/** The client's error for a token request the endpoint answered `status`, wrapped as a failed cycle wraps it. */
function tokenAnswer(status: number): Error {
  const answer = new QashioError(`POST ${TOKEN_PATH} answered ${status}`, { status, method: "POST", path: TOKEN_PATH });
  return new Error("transactions cycle stopped", { cause: answer });
}

/** The client's error for a connection that failed for `reason`, before any answer. */
function unanswered(reason: string): NetworkError {
  return new NetworkError(`POST ${TOKEN_PATH} failed before a response (${reason})`, { method: "POST", path: TOKEN_PATH, reason });
}

const NO_OAUTH_SERVER = "; the token endpoint answered as no OAuth server does: is QASHIO_BASE_URL (https://provider.example) the provider's API?";

describe("baseUrlHint: what the token endpoint answered", () => {
  // Redirects (a web site moving to https or www., a sign-in page), nothing there, no POST taken there.
  it.each([301, 302, 303, 307, 308, 404, 405, 501])("takes a token endpoint answering %i for one that is no OAuth server", (status) => {
    expect(baseUrlHint(tokenAnswer(status), "https://provider.example")).toBe(NO_OAUTH_SERVER);
  });

  // Answers an OAuth server gives too (RFC 6749 §5.2 refusals, outages): they say nothing of the base URL.
  it.each([400, 401, 403, 429, 500, 502, 503])("says nothing of the base URL for a token endpoint answering %i", (status) => {
    expect(baseUrlHint(tokenAnswer(status), "https://provider.example")).toBe("");
  });

  it("says nothing of the base URL for a 404 or an unreadable body of another path: the API answered there", () => {
    const missing = new NotFoundError("GET /transactions/tx-1 answered 404", { status: 404, method: "GET", path: "/transactions/tx-1" });
    const unreadable = new InvalidResponseError("GET /transactions answered 200 with a body that is not JSON", { status: 200, method: "GET", path: "/transactions" });
    expect(baseUrlHint(missing, "https://provider.example")).toBe("");
    expect(baseUrlHint(unreadable, "https://provider.example")).toBe("");
  });
});

describe("baseUrlHint: a connection with no TLS handshake", () => {
  it("says nothing of the sandbox for a host that is not this machine", () => {
    expect(baseUrlHint(unanswered("EPROTO"), "https://provider.example")).toBe(
      "; provider.example:443, where QASHIO_BASE_URL points, completed no TLS handshake: does its port serve https, with TLS 1.2 or later?",
    );
  });

  // A certificate the client does not trust comes from a port that does speak TLS.
  it.each(["CERT_HAS_EXPIRED", "DEPTH_ZERO_SELF_SIGNED_CERT", "ERR_TLS_CERT_ALTNAME_INVALID"])("says nothing of the base URL for %s", (reason) => {
    expect(baseUrlHint(unanswered(reason), "https://127.0.0.1:4010")).toBe("");
  });
});

describe("baseUrlHint: the setting named", () => {
  it.each([
    ["EPROTO", "https://127.0.0.1:4010", "; 127.0.0.1:4010, where QASHIO_EU_URL points, completed no TLS handshake"],
    ["ECONNREFUSED", "http://127.0.0.1:4010", "; nothing listens on 127.0.0.1:4010, where QASHIO_EU_URL points: is the sandbox running?"],
  ])("names the QASHIO_*_URL a named environment reads for %s, not QASHIO_BASE_URL", (reason, baseUrl, start) => {
    const hint = baseUrlHint(unanswered(reason), baseUrl, "QASHIO_EU_URL");
    expect(hint).toContain(start);
    expect(hint).not.toContain("QASHIO_BASE_URL");
  });
});

describe("baseUrlHint: a base URL that does not parse", () => {
  // The hint rides on another failure's message: it must not throw in its place.
  it.each(["EPROTO", "ECONNREFUSED"])("gives no hint for %s, and throws nothing", (reason) => {
    expect(baseUrlHint(unanswered(reason), "not a url")).toBe("");
  });
});
