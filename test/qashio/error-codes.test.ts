/**
 * Codes and field names the provider sends back are carried on errors (and so reach logs) only when they are fixed
 * words: OAuth codes from an allow-list, envelope `field`/`code` identifiers that hold no secret of the request.
 */
import { describe, expect, it } from "vitest";
import { refresh } from "../../shared/qashio/auth/oauth.js";
import { isInvalidClient, isRejectedGrant, StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { QashioClient } from "../../shared/qashio/client.js";
import { BadRequestError, QashioError } from "../../shared/qashio/errors.js";
import { redactSecrets, safeErrorToken, safeRequestId, secretsOf } from "../../shared/qashio/redact.js";
import { codingNote, OAUTH_ERROR_CODES } from "../../shared/qashio/response-errors.js";
import { ERROR_CODES } from "../../shared/qashio/schemas/index.js";
import { isLogToken, logToken } from "../../shared/log-token.js";
import { fakeClock, json, scriptedFetch } from "./helpers.js";

const BASE_URL = "https://api.example.test";
const CLIENT_SECRET = "s3cr3t_Client_Value_123";
const REFRESH_TOKEN = "rt_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const BEARER = "at_0a1b2c3d4e5f60718293a4b5c6d7e8f9";

async function refreshAnswered(status: number, body: unknown): Promise<QashioError> {
  const options = { baseUrl: BASE_URL, clientId: "client-1", clientSecret: CLIENT_SECRET, fetch: scriptedFetch(json(status, body)), clock: fakeClock() };
  const error = await refresh(options, REFRESH_TOKEN).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(QashioError);
  return error as QashioError;
}

describe("OAuth error codes", () => {
  it.each([
    ["the refresh token sent, as error", 400, { error: REFRESH_TOKEN }],
    ["the client secret, as code", 401, { code: CLIENT_SECRET }],
    ["a code outside the allow-list", 400, { error: "server_busy", error_description: "try later" }],
    ["an upper-case variant of a standard code", 400, { error: "INVALID_GRANT" }],
  ])("reports %s as unknown_error", async (_what, status, body) => {
    const error = await refreshAnswered(status, body);
    expect(error.message).toBe(`POST /oauth2/token answered ${status} (unknown_error)`);
    expect(error.errors).toEqual([{ field: null, code: "unknown_error", message: "" }]);
    for (const text of [error.message, JSON.stringify(error)]) {
      for (const secret of [REFRESH_TOKEN, CLIENT_SECRET, "server_busy"]) expect(text).not.toContain(secret);
    }
  });

  it("reports RFC 6749 §5.2 and spec §7 codes as they are, so a refused client is still told from a refused grant", async () => {
    const rfc = ["invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope"];
    const spec = ["NOT_FOUND", "INVALID_ENUM", "OUT_OF_RANGE", "UNAUTHORIZED"];
    for (const code of [...rfc, ...spec]) {
      expect(OAUTH_ERROR_CODES.has(code)).toBe(true);
      const error = await refreshAnswered(400, { error: code });
      expect(error.message).toBe(`POST /oauth2/token answered 400 (${code})`);
      expect(error.errors).toEqual([{ field: null, code, message: "" }]);
    }
    // Every code of the §7 envelope, spec and project alike, from the one list the schemas use.
    for (const code of ERROR_CODES) expect(OAUTH_ERROR_CODES.has(code)).toBe(true);
    expect(isInvalidClient(await refreshAnswered(401, { error: "invalid_client" }))).toBe(true);
    expect(isRejectedGrant(await refreshAnswered(400, { code: "invalid_grant" }))).toBe(true);
    expect(isRejectedGrant(await refreshAnswered(400, { error: REFRESH_TOKEN }))).toBe(false);
  });

  it("reports the RFC 6750 §3.1 codes and RFC 6749 §4.1.2.1's (the sandbox's 403 on validate, its 429 and 5xx) as they are", async () => {
    for (const code of ["invalid_token", "insufficient_scope", "access_denied", "server_error", "temporarily_unavailable"]) {
      const error = await refreshAnswered(403, { error: code });
      expect(error.message).toBe(`POST /oauth2/token answered 403 (${code})`);
      expect(error.errors).toEqual([{ field: null, code, message: "" }]);
    }
  });

  it("reads error before code when a body has both: a string code beside it, or a gateway's numeric one", async () => {
    const both = await refreshAnswered(400, { error: "invalid_grant", code: "server_error" });
    expect(both.message).toBe("POST /oauth2/token answered 400 (invalid_grant)");
    expect(both.errors).toEqual([{ field: null, code: "invalid_grant", message: "" }]);
    expect((await refreshAnswered(401, { error: "invalid_client", code: 401 })).message).toBe("POST /oauth2/token answered 401 (invalid_client)");
  });

  it("takes a refused grant only from a 401, or a 400 naming invalid_grant: a 403 naming it leaves the token family alone", async () => {
    expect(isRejectedGrant(await refreshAnswered(400, { error: "invalid_grant" }))).toBe(true);
    expect(isRejectedGrant(await refreshAnswered(403, { error: "invalid_grant" }))).toBe(false);
  });

  it("reports no code for an empty one: the answer names none", async () => {
    const error = await refreshAnswered(400, { error: "" });
    expect(error.message).toBe("POST /oauth2/token answered 400");
    expect(error.errors).toEqual([]);
  });

  it("keeps none of a token endpoint's free text, not even on providerText", async () => {
    const error = await refreshAnswered(400, { error: "invalid_grant", error_description: `refresh token ${REFRESH_TOKEN} revoked`, message: `refresh token ${REFRESH_TOKEN} revoked` });
    expect(error.providerText).toBeUndefined();
  });
});

describe("envelope errors[] field and code", () => {
  it("keeps identifiers, replaces free text and anything holding the bearer token sent by ?", async () => {
    const body = {
      status_code: 400,
      message: "rejected",
      errors: [
        { field: "transaction_ids.3", code: "NOT_FOUND", message: "" },
        { field: "page_size", code: "OUT_OF_RANGE", message: "" },
        { field: "line_items[0].amount", code: "INVALID_FORMAT", message: "" },
        { field: null, code: "UNAUTHORIZED", message: "" },
        { field: BEARER, code: "INVALID_TOKEN", message: "" },
        { field: "authorization", code: `x_${BEARER}`, message: "" },
        { field: BEARER.slice(0, 20), code: "TRUNCATED", message: "" },
        { field: "card holder", code: "khalid.fernandes@falcongate.ae", message: "" },
        { field: "q", code: encodeURIComponent(`Bearer ${BEARER}`), message: "" },
      ],
    };
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(BEARER), fetch: scriptedFetch(json(400, body)), clock: fakeClock() });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.errors.map((e) => [e.field, e.code])).toEqual([
      ["transaction_ids.3", "NOT_FOUND"],
      ["page_size", "OUT_OF_RANGE"],
      ["line_items[0].amount", "INVALID_FORMAT"],
      [null, "UNAUTHORIZED"],
      ["?", "INVALID_TOKEN"],
      ["authorization", "?"],
      ["?", "TRUNCATED"],
      ["?", "?"],
      ["q", "?"],
    ]);
    const text = JSON.stringify(error);
    for (const leak of [BEARER, BEARER.slice(0, 20), "khalid", "card holder"]) expect(text).not.toContain(leak);
  });

  it("names no OAuth code in a data endpoint's message, even when its body carries error or code: only a token endpoint's is read so", async () => {
    const body = { status_code: 400, message: "rejected", errors: [], error: "invalid_request", code: "NOT_FOUND" };
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(BEARER), fetch: scriptedFetch(json(400, body)), clock: fakeClock() });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toBe("GET /public/v1/erp/company/summary answered 400");
    expect(error.errors).toEqual([]);
  });

  it("logToken, the rule the client and the engine share, keeps identifiers up to 128 characters and nothing else", () => {
    for (const token of ["NOT_FOUND", "page_size", "transaction_ids.12", "line_items[0].amount", `a${".b".repeat(63)}`]) expect(logToken(token)).toBe(token);
    for (const value of ["", "abc-def", "card holder", "ann@example.com", "1abc", `a${".b".repeat(64)}`, 7, null, undefined]) {
      expect(logToken(value)).toBe("?");
      expect(isLogToken(value)).toBe(false);
    }
  });

  it("safeErrorToken checks the pattern, the length and every form of each secret", () => {
    expect(safeErrorToken("transaction_ids.12", ["tok"])).toBe("transaction_ids.12");
    expect(safeErrorToken("a".repeat(129), [])).toBe("?");
    expect(safeErrorToken("abc-def", [])).toBe("?");
    expect(safeErrorToken("my_token_x", ["token"])).toBe("?");
    expect(safeErrorToken("tok_abcdefgh", ["xx tok_abcdefgh yy"])).toBe("?");
  });

  it("drops a request id that quotes a secret in any of its encoded forms", () => {
    const secret = "cs/with+plus=";
    expect(safeRequestId("req-0001", [secret])).toBe("req-0001");
    expect(safeRequestId(`req-${encodeURIComponent(secret)}`, [secret])).toBeUndefined();
    expect(safeRequestId(`req-${encodeURIComponent(secret).toLowerCase()}`, [secret])).toBeUndefined();
    expect(safeRequestId(`req-${JSON.stringify('cs"q').slice(1, -1)}`, ['cs"q'])).toBeUndefined();
  });

  it("keeps a field name under 8 characters that occurs inside a secret (too short to give it away), not one of 8", () => {
    expect(safeErrorToken("page", ["at_xpage7f"])).toBe("page");
    expect(safeErrorToken("status", [`${BEARER}status`])).toBe("status");
    expect(safeErrorToken("card_id", ["xcard_idx"])).toBe("card_id");
    expect(safeErrorToken("card_ids", ["xcard_idsx"])).toBe("?");
  });

  it("takes a piece of 8+ characters of a secret for the secret even with other text around it, in a field or a request id", () => {
    const piece = BEARER.slice(3, 15);
    expect(safeErrorToken(`field_${piece}`, [BEARER])).toBe("?");
    expect(safeErrorToken(`${BEARER.slice(0, 8)}_x`, [BEARER])).toBe("?");
    expect(safeRequestId(`req-${piece}-7`, [BEARER])).toBeUndefined();
    expect(safeRequestId(`req-${REFRESH_TOKEN.slice(-8)}`, [REFRESH_TOKEN])).toBeUndefined();
    // Seven characters in common are not a piece: a field or an id that merely shares a short run with a token stays.
    expect(safeErrorToken(`field${BEARER.slice(3, 10)}`, [BEARER])).toBe(`field${BEARER.slice(3, 10)}`);
    expect(safeRequestId(`req-${REFRESH_TOKEN.slice(-7)}`, [REFRESH_TOKEN])).toBe(`req-${REFRESH_TOKEN.slice(-7)}`);
  });

  it("takes an empty secret (a body's empty credential) for none: it neither hides every field nor drops the request id", () => {
    expect(safeErrorToken("page_size", [""])).toBe("page_size");
    expect(safeRequestId("req-0001", [""])).toBe("req-0001");
  });

  it("redacts nothing for an empty secret: the provider's text is kept as it came, the real secrets beside it still go", () => {
    const secrets = secretsOf({ body: { client_secret: "", refresh_token: REFRESH_TOKEN } }, [BEARER]);
    expect(redactSecrets(`no such card; token ${BEARER}, grant ${REFRESH_TOKEN}`, secrets)).toBe("no such card; token ***, grant ***");
  });

  it("keeps errors[] codes of a body that breaks the envelope's schema, still passed through safeErrorToken", async () => {
    // No status_code and a numeric field: read tolerantly, not as a body without errors.
    const body = { message: "rejected", errors: [{ field: 7, code: "OUT_OF_RANGE" }, { field: "page", code: BEARER }] };
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(BEARER), fetch: scriptedFetch(json(400, body)), clock: fakeClock() });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.errors.map((e) => [e.field, e.code])).toEqual([
      [null, "OUT_OF_RANGE"],
      ["page", "?"],
    ]);
  });

  it("reads a broken envelope's errors[] entries that are objects only: a missing code as UNKNOWN, a missing message as empty text", async () => {
    const body = { message: "rejected", errors: [{ field: "page", message: "too big" }, "oops", null, 7, ["NOT_FOUND"], { code: "OUT_OF_RANGE", message: 7 }] };
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(BEARER), fetch: scriptedFetch(json(400, body)), clock: fakeClock() });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.errors).toEqual([
      { field: "page", code: "UNKNOWN", message: "" },
      { field: null, code: "OUT_OF_RANGE", message: "" },
    ]);
    expect(error.providerText?.errors).toEqual(["too big", ""]);
  });

  it("reads an otherwise well-formed envelope's entry without a code as UNKNOWN, like a broken envelope's", async () => {
    const body = { status_code: 400, message: "rejected", errors: [{ field: "page", message: "too big" }] };
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(BEARER), fetch: scriptedFetch(json(400, body)), clock: fakeClock() });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.errors).toEqual([{ field: "page", code: "UNKNOWN", message: "" }]);
  });
});

describe("secretsOf", () => {
  it("counts every token-endpoint credential a request body carries, the bearer tokens sent beside them, and nothing else", () => {
    const body = { client_secret: "cs-1", refresh_token: "rt-1", code: "code-1", access_token: "at-1", grant_type: "refresh_token", page: 2 };
    expect(secretsOf({ body }, ["bearer-1"]).sort()).toEqual(["at-1", "bearer-1", "code-1", "cs-1", "rt-1"]);
    expect(secretsOf({}, ["bearer-1"])).toEqual(["bearer-1"]);
  });
});

describe("codingNote", () => {
  const headers = (coding?: string) => new Headers(coding === undefined ? {} : { "content-encoding": coding });

  it("says nothing for identity, in any case, or no Content-Encoding: the body came as asked", () => {
    for (const coding of [undefined, "identity", "Identity", " IDENTITY "]) expect(codingNote(headers(coding))).toBe("");
  });

  it("names a coding the transport did not undo, and quotes only what reads as a coding list", () => {
    expect(codingNote(headers("gzip"))).toBe(": it came in Content-Encoding gzip, though identity was asked for (a proxy compressing on its own?)");
    expect(codingNote(headers("<script>"))).toContain("it came in a Content-Encoding, though");
  });

  it("quotes a list of up to four codings, and no longer one", () => {
    expect(codingNote(headers("gzip, br, deflate, zstd"))).toContain("it came in Content-Encoding gzip, br, deflate, zstd, though");
    expect(codingNote(headers("gzip, br, deflate, zstd, gzip"))).toContain("it came in a Content-Encoding, though");
  });

  it("quotes a coding name of up to 32 characters, and no longer one", () => {
    const name = "x-coding.".padEnd(32, "z");
    expect(codingNote(headers(name))).toContain(`it came in Content-Encoding ${name}, though`);
    expect(codingNote(headers(`${name}z`))).toContain("it came in a Content-Encoding, though");
    expect(codingNote(headers(`gzip, ${name}z`))).toContain("it came in a Content-Encoding, though");
  });
});
