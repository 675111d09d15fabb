import { beforeEach, describe, expect, it } from "vitest";
import { TokenSetSchema, ValidateResponseSchema } from "../../shared/qashio/schemas/index.js";
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, SANDBOX_SCOPES, createSandbox } from "../../sandbox/index.js";
import { BASE, CLIENT, REDIRECT_URI, harness, type Harness, type Row } from "./helpers.js";

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

async function token(body: Record<string, unknown>, headers: Record<string, string> = { "content-type": "application/json" }) {
  const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Row, headers: res.headers };
}

function code(companyId = h.companyId, redirectUri = REDIRECT_URI, scope?: string): string {
  return h.sandbox.control.issueAuthorizationCode({ companyId, redirectUri, scope });
}

const exchange = (c: string, redirectUri = REDIRECT_URI) => token({ grant_type: "authorization_code", ...CLIENT, code: c, redirect_uri: redirectUri });
const refresh = (refreshToken: string) => token({ grant_type: "refresh_token", ...CLIENT, refresh_token: refreshToken });
const api = (accessToken: string) => h.json("/public/v1/erp/cards", { token: accessToken });

function claims(jwt: string): Row {
  return JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as Row;
}

describe("POST /oauth2/token, authorization_code grant", () => {
  it("issues a Bearer token set whose access token is a JWT with exp 15 minutes ahead", async () => {
    const { status, body, headers } = await exchange(code());
    expect(status).toBe(200);
    const set = TokenSetSchema.parse(body);
    expect(set.token_type).toBe("Bearer");
    expect(set.scope?.split(" ")).toContain("transactions:read");
    expect(body).not.toHaveProperty("status_code");
    expect(headers.get("cache-control")).toBe("no-store");
    const c = claims(set.access_token);
    expect(c.exp - c.iat).toBe(ACCESS_TOKEN_TTL_SECONDS);
    expect(ACCESS_TOKEN_TTL_SECONDS).toBe(15 * 60);
    expect(c.company_id).toBe(h.companyId);
    expect((await api(set.access_token)).status).toBe(200);
  });

  it("issues access tokens of the lifetime it was created with, refused once it is over", async () => {
    h = await harness({ accessTokenTtlSeconds: 30 });
    const set = TokenSetSchema.parse((await exchange(code())).body);
    const c = claims(set.access_token);
    expect([c.exp - c.iat, set.expires_in]).toEqual([30, 30]);
    h.sandbox.control.advanceClock(29);
    expect((await api(set.access_token)).status).toBe(200);
    h.sandbox.control.advanceClock(1);
    expect((await api(set.access_token)).status).toBe(401);
    expect(() => createSandbox({ accessTokenTtlSeconds: 0 })).toThrow(/accessTokenTtlSeconds must be a positive integer/);
  });

  it("lapses an access token at its whole-second exp: issued mid-second, it lives less than expires_in by that fraction", async () => {
    h = await harness({ startTime: "2025-03-15T12:00:00.700Z", accessTokenTtlSeconds: 30 });
    const set = TokenSetSchema.parse((await exchange(code())).body);
    expect([claims(set.access_token).exp - claims(set.access_token).iat, set.expires_in]).toEqual([30, 30]);
    h.sandbox.control.advanceClock(29.299);
    expect((await api(set.access_token)).status).toBe(200);
    h.sandbox.control.advanceClock(0.001);
    expect((await api(set.access_token)).status).toBe(401);
  });

  it("answers every token set, of either grant, uncacheable: Cache-Control no-store and Pragma no-cache (RFC 6749 §5.1)", async () => {
    const first = await exchange(code());
    const second = await refresh(first.body.refresh_token as string);
    for (const { status, headers } of [first, second]) {
      expect(status).toBe(200);
      expect(headers.get("cache-control")).toBe("no-store");
      expect(headers.get("pragma")).toBe("no-cache");
    }
  });

  it("grants only the requested scopes", async () => {
    const { body } = await exchange(code(h.companyId, REDIRECT_URI, "cards:read transactions:read"));
    expect(body.scope).toBe("cards:read transactions:read");
  });

  it("grants every scope for a blank scope, and drops a repeated scope keeping the order asked", async () => {
    expect((await exchange(code(h.companyId, REDIRECT_URI, " \t "))).body.scope).toBe(SANDBOX_SCOPES.join(" "));
    const repeated = await exchange(code(h.companyId, REDIRECT_URI, "transactions:read  cards:read transactions:read"));
    expect(repeated.body.scope).toBe("transactions:read cards:read");
  });

  it("splits the requested scope on any whitespace, a tab or a newline included (spec-gaps, OAuth: scopes)", async () => {
    const { body } = await exchange(code(h.companyId, REDIRECT_URI, "cards:read\ttransactions:read\nwallet:read"));
    expect(body.scope).toBe("cards:read transactions:read wallet:read");
  });

  it("takes scope names case-sensitively: Cards:Read is invalid_scope on the authorize page and for a code (spec-gaps, OAuth: scopes)", async () => {
    const query = new URLSearchParams({ response_type: "code", client_id: CLIENT.client_id, redirect_uri: REDIRECT_URI, scope: "Cards:Read", state: "s" });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query.toString()}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location") ?? "").searchParams.get("error")).toBe("invalid_scope");
    expect(() => code(h.companyId, REDIRECT_URI, "Cards:Read")).toThrow(/unknown scope: Cards:Read/);
  });

  it("refuses a code used twice with 401", async () => {
    const c = code();
    expect((await exchange(c)).status).toBe(200);
    const again = await exchange(c);
    expect(again.status).toBe(401);
    expect(again.body).toEqual({ error: "invalid_grant", error_description: expect.any(String) });
  });

  it("accepts a code until ten minutes of sandbox time have passed, then answers 401", async () => {
    const fresh = code();
    const stale = code();
    h.sandbox.control.advanceClock(599);
    expect((await exchange(fresh)).status).toBe(200);
    h.sandbox.control.advanceClock(1);
    const late = await exchange(stale);
    expect(late.status).toBe(401);
    expect(late.body.error).toBe("invalid_grant");
  });

  it("answers 400 when redirect_uri differs from the one the code was issued for, by as little as a slash", async () => {
    const c = code();
    const { status, body } = await exchange(c, `${REDIRECT_URI}/`);
    expect(status).toBe(400);
    expect(body.error).toBe("invalid_grant");
    expect((await exchange(c)).status).toBe(200);
  });

  it("answers a used or expired code 401 even with a mismatched redirect_uri: the code is judged before the redirect (§4.2 401 for a used or expired code)", async () => {
    const used = code();
    const stale = code();
    expect((await exchange(used)).status).toBe(200);
    const reused = await exchange(used, `${REDIRECT_URI}/`);
    expect([reused.status, reused.body.error]).toEqual([401, "invalid_grant"]);
    h.sandbox.control.advanceClock(600);
    const late = await exchange(stale, `${REDIRECT_URI}/`);
    expect([late.status, late.body.error]).toEqual([401, "invalid_grant"]);
  });

  it("answers 401 for wrong client credentials and an unknown code", async () => {
    const wrongSecret = await token({ grant_type: "authorization_code", client_id: "sandbox-client", client_secret: "nope", code: code(), redirect_uri: REDIRECT_URI });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error).toBe("invalid_client");
    expect((await exchange("no-such-code")).status).toBe(401);
  });

  it.each([
    [{ ...CLIENT, code: "x", redirect_uri: REDIRECT_URI }, "invalid_request"],
    [{ grant_type: "password", ...CLIENT }, "unsupported_grant_type"],
    [{ grant_type: "authorization_code", ...CLIENT, redirect_uri: REDIRECT_URI }, "invalid_request"],
    [{ grant_type: "refresh_token", ...CLIENT }, "invalid_request"],
  ])("answers 400 for missing or unsupported parameters %j", async (body, error) => {
    const res = await token(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
  });

  it("answers 400 invalid_request saying the body must be a JSON object to a JSON body that is none, an array included (spec-gaps, OAuth: token errors)", async () => {
    for (const body of ["[]", JSON.stringify([{ grant_type: "authorization_code", ...CLIENT }]), "null", '"x"', "{"]) {
      const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body });
      expect([res.status, await res.json()], body).toEqual([400, { error: "invalid_request", error_description: "request body must be a JSON object" }]);
    }
  });

  it("reads an empty or blank body as no parameters: 400 invalid_request saying grant_type is required", async () => {
    for (const body of ["", " \n"]) {
      const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body });
      expect([res.status, await res.json()], JSON.stringify(body)).toEqual([400, { error: "invalid_request", error_description: "grant_type is required" }]);
    }
  });

  it("answers 400 invalid_request to an empty client_id or client_secret in the body, JSON or form (a missing parameter, §4.2), without spending the code", async () => {
    const c = code();
    const form = (fields: Record<string, string>) =>
      h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() });
    for (const empty of ["client_id", "client_secret"] as const) {
      const fields = { grant_type: "authorization_code", ...CLIENT, code: c, redirect_uri: REDIRECT_URI, [empty]: "" };
      const json = await token(fields);
      expect([json.status, json.body.error, json.headers.get("www-authenticate")]).toEqual([400, "invalid_request", null]);
      expect(json.body.error_description).toBe(`missing or invalid parameters: ${empty}`);
      const encoded = await form(fields);
      expect([encoded.status, ((await encoded.json()) as Row).error]).toEqual([400, "invalid_request"]);
    }
    expect((await exchange(c)).status).toBe(200);
  });

  it("answers 400 naming parameters the grant does not take, before the code or refresh token is spent", async () => {
    const c = code();
    const withVerifier = await token({ grant_type: "authorization_code", ...CLIENT, code: c, redirect_uri: REDIRECT_URI, code_verifier: "v" });
    expect(withVerifier.status).toBe(400);
    expect(withVerifier.body).toEqual({ error: "invalid_request", error_description: "unsupported parameters for grant_type authorization_code: code_verifier" });
    const { body: set } = await exchange(c);
    const rt = set.refresh_token as string;
    // `code` and `redirect_uri` belong to the other grant: "not sent" with a refresh (§4.2).
    const withCode = await token({ grant_type: "refresh_token", ...CLIENT, refresh_token: rt, scope: "cards:read", code: "x" });
    expect(withCode.status).toBe(400);
    expect(withCode.body.error_description).toBe("unsupported parameters for grant_type refresh_token: scope, code");
    expect((await refresh(rt)).status).toBe(200);
  });

  it("accepts a form-encoded request too", async () => {
    const params = new URLSearchParams({ grant_type: "authorization_code", ...CLIENT, code: code(), redirect_uri: REDIRECT_URI });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: params.toString(),
    });
    expect(res.status).toBe(200);
  });

  it("accepts a form-encoded request whose content type carries a charset", async () => {
    const params = new URLSearchParams({ grant_type: "authorization_code", ...CLIENT, code: code(), redirect_uri: REDIRECT_URI });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" }, body: params.toString() });
    expect(res.status).toBe(200);
  });

  // RFC 9110 §8.3.1: a media type's type and subtype are case-insensitive, as the authorization screen reads them too.
  it("accepts a form-encoded request whose content type is written in another letter case", async () => {
    for (const type of ["Application/X-WWW-Form-Urlencoded", "APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8"]) {
      const params = new URLSearchParams({ grant_type: "authorization_code", ...CLIENT, code: code(), redirect_uri: REDIRECT_URI });
      const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": type }, body: params.toString() });
      expect(res.status).toBe(200);
    }
  });

  it("answers a form-encoded request 400 invalid_request for a repeated parameter, and reads an empty one as absent (RFC 6749 §3.2)", async () => {
    const post = (form: string) =>
      h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form });
    const base = new URLSearchParams({ grant_type: "authorization_code", ...CLIENT, code: code(), redirect_uri: REDIRECT_URI });
    const repeated = new URLSearchParams(base);
    repeated.append("code", code());
    const twice = await post(repeated.toString());
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as Row).error).toBe("invalid_request");
    // `scope=` is no parameter at all, not one the grant does not take.
    expect((await post(`${base.toString()}&scope=`)).status).toBe(200);
  });
});

describe("POST /oauth2/token, client authentication with HTTP Basic (RFC 6749 §2.3.1)", () => {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
  const exchangeWith = (authorization: string, body: Record<string, unknown> = {}) =>
    token({ grant_type: "authorization_code", code: code(), redirect_uri: REDIRECT_URI, ...body }, { "content-type": "application/json", authorization });

  it("authenticates the client from the header, its id and secret form-urlencoded", async () => {
    expect((await exchangeWith(basic(CLIENT.client_id, CLIENT.client_secret))).status).toBe(200);
    expect((await exchangeWith(basic(encodeURIComponent("sandbox%2Dclient"), CLIENT.client_secret))).status).toBe(401);
    expect((await exchangeWith(basic("sandbox%2Dclient", "sandbox%2Dsecret"))).status).toBe(200);
  });

  it("reads the scheme name case-insensitively (RFC 7235 §2.1)", async () => {
    expect((await exchangeWith(basic(CLIENT.client_id, CLIENT.client_secret).replace(/^Basic/, "basic"))).status).toBe(200);
  });

  it("challenges for Basic only a client that authenticated with it: a wrong secret in the body gets no WWW-Authenticate", async () => {
    const res = await token({ grant_type: "authorization_code", client_id: CLIENT.client_id, client_secret: "nope", code: code(), redirect_uri: REDIRECT_URI });
    expect([res.status, res.body.error, res.headers.get("www-authenticate")]).toEqual([401, "invalid_client", null]);
  });

  it("takes the whole password after the first colon: a secret with a suffix is a wrong secret", async () => {
    const res = await exchangeWith(basic(CLIENT.client_id, `${CLIENT.client_secret}:extra`));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_client");
  });

  it("reads the header's client id up to the first colon: a body client_id naming that part is the same client, refused only for the wrong secret (RFC 6749 §2.3.1)", async () => {
    const header = basic(CLIENT.client_id, `${CLIENT.client_secret}:extra`);
    const same = await exchangeWith(header, { client_id: CLIENT.client_id });
    expect([same.status, same.body.error]).toEqual([401, "invalid_client"]);
    const whole = await exchangeWith(header, { client_id: `${CLIENT.client_id}:${CLIENT.client_secret}` });
    expect([whole.status, whole.body.error]).toEqual([400, "invalid_request"]);
  });

  it("reads a + in the header's client id as a space, as form-urlencoding writes it (RFC 6749 §2.3.1)", async () => {
    const header = basic("sandbox+client", CLIENT.client_secret);
    const spaced = await exchangeWith(header, { client_id: "sandbox client" });
    expect([spaced.status, spaced.body.error]).toEqual([401, "invalid_client"]);
    const plus = await exchangeWith(header, { client_id: "sandbox+client" });
    expect([plus.status, plus.body.error]).toEqual([400, "invalid_request"]);
  });

  it("answers 401 invalid_client with a WWW-Authenticate challenge for the Basic scheme", async () => {
    const res = await exchangeWith(basic(CLIENT.client_id, "nope"));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_client");
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
  });

  it("answers 401 invalid_client with the challenge to Basic credentials without the colon between id and secret", async () => {
    const res = await exchangeWith(`Basic ${Buffer.from(`${CLIENT.client_id}${CLIENT.client_secret}`).toString("base64")}`, { client_id: CLIENT.client_id });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_client");
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
  });

  it("answers 401 invalid_client with the challenge to Basic credentials with an empty secret or id, as to any wrong one (§4.2)", async () => {
    for (const [id, secret] of [[CLIENT.client_id, ""], ["", CLIENT.client_secret], ["", ""]] as const) {
      const res = await exchangeWith(basic(id, secret));
      expect(res.status).toBe(401);
      expect(res.body.error).toBe("invalid_client");
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
    }
  });

  it("answers 400 invalid_request to credentials sent both in the header and in the body", async () => {
    const res = await exchangeWith(basic(CLIENT.client_id, CLIENT.client_secret), { client_secret: CLIENT.client_secret });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });

  it("takes a client_id in the body that names the client the header authenticates (no second method), and refuses another", async () => {
    const header = basic(CLIENT.client_id, CLIENT.client_secret);
    expect((await exchangeWith(header, { client_id: CLIENT.client_id })).status).toBe(200);
    const other = await exchangeWith(header, { client_id: "another-client" });
    expect(other.status).toBe(400);
    expect(other.body.error).toBe("invalid_request");
  });

  it("answers a client authenticated with Basic that presents a spent code or refresh token 401 invalid_grant, without the Basic challenge: the grant is refused, not the client", async () => {
    const header = basic(CLIENT.client_id, CLIENT.client_secret);
    const c = code();
    const set = (await exchangeWith(header, { code: c })).body;
    const spentCode = await exchangeWith(header, { code: c });
    expect([spentCode.status, spentCode.body.error, spentCode.headers.get("www-authenticate")]).toEqual([401, "invalid_grant", null]);
    const refreshWith = (refreshToken: unknown) => token({ grant_type: "refresh_token", refresh_token: refreshToken }, { "content-type": "application/json", authorization: header });
    expect((await refreshWith(set.refresh_token)).status).toBe(200);
    const reused = await refreshWith(set.refresh_token);
    expect([reused.status, reused.body.error, reused.headers.get("www-authenticate")]).toEqual([401, "invalid_grant", null]);
  });
});

describe("POST /oauth2/token, refresh_token grant", () => {
  it("rotates: a refresh returns a new refresh token and the old one is consumed", async () => {
    const first = (await exchange(code())).body;
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(second.body.access_token).not.toBe(first.access_token);
    expect((await refresh(second.body.refresh_token)).status).toBe(200);
  });

  it("revokes the whole family when a consumed refresh token is presented again", async () => {
    const first = (await exchange(code())).body;
    const second = (await refresh(first.refresh_token)).body;
    const third = (await refresh(second.refresh_token)).body;
    const reuse = await refresh(first.refresh_token);
    expect(reuse.status).toBe(401);
    expect(reuse.body.error).toBe("invalid_grant");
    expect((await refresh(third.refresh_token)).status).toBe(401);
    expect((await api(third.access_token)).status).toBe(401);
    expect((await api(first.access_token)).status).toBe(401);
  });

  it("rotates the refresh token of a refresh whose answer an applied fault lost: presented again, it revokes the family", async () => {
    const first = (await exchange(code())).body;
    await h.json("/_sandbox/faults", { body: { path_prefix: "/oauth2/token", status: 502, applied: true, count: 1 }, token: null });
    const lost = await refresh(first.refresh_token as string);
    expect(lost.status).toBe(502);
    expect(lost.body).toEqual({ error: "server_error", error_description: expect.any(String) });
    // The caller never saw the rotated token: all it can present is the one the provider consumed.
    const retried = await refresh(first.refresh_token as string);
    expect(retried.status).toBe(401);
    expect(retried.body.error).toBe("invalid_grant");
    expect((await api(first.access_token as string)).status).toBe(401);
  });

  it("leaves other families untouched when one family is revoked", async () => {
    const a = (await exchange(code())).body;
    const b = (await exchange(code())).body;
    await refresh(a.refresh_token);
    await refresh(a.refresh_token);
    expect((await api(b.access_token)).status).toBe(200);
    expect((await refresh(b.refresh_token)).status).toBe(200);
  });

  it("takes a refresh token until its lifetime has passed in sandbox time, then answers 401 invalid_grant (§4.2)", async () => {
    const early = (await exchange(code())).body;
    const late = (await exchange(code())).body;
    h.sandbox.control.advanceClock(REFRESH_TOKEN_TTL_SECONDS - 1);
    expect((await refresh(early.refresh_token)).status).toBe(200);
    h.sandbox.control.advanceClock(1);
    const expired = await refresh(late.refresh_token);
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: "invalid_grant", error_description: expect.any(String) });
  });

  it("lives 30 days, and an expired refresh token presented again is refused as expired without revoking its family", async () => {
    expect(REFRESH_TOKEN_TTL_SECONDS).toBe(30 * 86_400);
    // Access tokens outliving the refresh token, so the family's revocation would show on them.
    h = await harness({ accessTokenTtlSeconds: 2 * REFRESH_TOKEN_TTL_SECONDS });
    const set = (await exchange(code())).body;
    h.sandbox.control.advanceClock(REFRESH_TOKEN_TTL_SECONDS);
    for (const attempt of [await refresh(set.refresh_token), await refresh(set.refresh_token)]) {
      expect(attempt.status).toBe(401);
      expect(attempt.body).toEqual({ error: "invalid_grant", error_description: expect.stringMatching(/expired/) });
    }
    expect((await api(set.access_token)).status).toBe(200);
  });

  it("judges a spent refresh token presented after its lifetime the same whether or not another grant ran meanwhile: expired, family untouched", async () => {
    const outcomes: unknown[] = [];
    const descriptions: unknown[] = [];
    for (const otherGrantMeanwhile of [false, true]) {
      h = await harness({ accessTokenTtlSeconds: 2 * REFRESH_TOKEN_TTL_SECONDS });
      const spent = (await exchange(code())).body.refresh_token as string;
      h.sandbox.control.advanceClock(REFRESH_TOKEN_TTL_SECONDS - 86_400);
      const current = (await refresh(spent)).body;
      h.sandbox.control.advanceClock(86_400);
      // Another company's grant issues tokens, which forgets what expired: nothing to do with this family.
      if (otherGrantMeanwhile) expect((await exchange(code(h.otherCompanyId))).status).toBe(200);
      const replay = await refresh(spent);
      descriptions.push(replay.body.error_description);
      outcomes.push({
        // The description may differ: a token forgotten is unknown to the sandbox, one still held is known expired.
        replay: [replay.status, replay.body.error],
        current: (await api(current.access_token as string)).status,
        rotated: (await refresh(current.refresh_token as string)).status,
      });
    }
    expect(outcomes[0]).toEqual(outcomes[1]);
    expect(outcomes[0]).toEqual({ replay: [401, "invalid_grant"], current: 200, rotated: 200 });
    expect(descriptions[0]).toMatch(/expired/);
  });

  it("keeps the scopes of the grant through rotation: a refreshed token is no wider than the code's (RFC 6749 §6)", async () => {
    const first = (await exchange(code(h.companyId, REDIRECT_URI, "cards:read"))).body;
    const second = await refresh(first.refresh_token);
    expect(second.body.scope).toBe("cards:read");
    expect(claims(second.body.access_token).scope).toBe("cards:read");
    expect((await h.json("/public/v1/erp/transactions", { token: second.body.access_token })).status).toBe(403);
  });

  it("answers 401 for an unknown refresh token", async () => {
    expect((await refresh("rt_unknown")).status).toBe(401);
  });

  it("answers 401 invalid_client to a live refresh token sent with a wrong client secret, and neither spends it nor revokes its family", async () => {
    const set = (await exchange(code())).body;
    const wrongSecret = await token({ grant_type: "refresh_token", client_id: CLIENT.client_id, client_secret: "nope", refresh_token: set.refresh_token });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error).toBe("invalid_client");
    expect((await refresh(set.refresh_token)).status).toBe(200);
  });
});

describe("access token expiry and GET /oauth2/validate", () => {
  it("validates a live token, then answers 401 once it expired in sandbox time", async () => {
    const validate = (t: string) => h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: `Bearer ${t}` } });
    const live = await validate(h.tokens.access_token);
    expect(live.status).toBe(200);
    expect(ValidateResponseSchema.parse(await live.json()).active).toBe(true);
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS);
    const expired = await validate(h.tokens.access_token);
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ error: "invalid_token" });
    expect((await api(h.tokens.access_token)).status).toBe(401);
    expect((await refresh(h.tokens.refresh_token)).status).toBe(200);
  });

  it("answers validate with the grant's company, client and scope (space-separated, as granted) and the access token's exp", async () => {
    const set = (await exchange(code(h.companyId, REDIRECT_URI, "cards:read transactions:read"))).body;
    const res = await h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: `Bearer ${set.access_token}` } });
    expect(await res.json()).toEqual({ active: true, company_id: h.companyId, client_id: CLIENT.client_id, scope: "cards:read transactions:read", exp: claims(set.access_token).exp });
  });

  it("answers 401 for an access token whose signature text differs from the one issued, even if it decodes the same", async () => {
    const validate = (t: string) => h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: `Bearer ${t}` } });
    const [header, payload, signature] = h.tokens.access_token.split(".") as [string, string, string];
    // base64url decoding skips characters outside its alphabet and trailing padding: these decode to the same bytes.
    for (const forged of [`${signature}!!`, `${signature}=`, `${signature.slice(0, 4)}*${signature.slice(4)}`]) {
      expect(Buffer.from(forged, "base64url").equals(Buffer.from(signature, "base64url"))).toBe(true);
      expect((await validate(`${header}.${payload}.${forged}`)).status).toBe(401);
      expect((await api(`${header}.${payload}.${forged}`)).status).toBe(401);
    }
    expect((await validate(h.tokens.access_token)).status).toBe(200);
  });

  // §4.2 validate and §5 rule 9: a malformed token is a 401, never passed and never a 500.
  it("answers 401 for a token that is not three dot-separated parts: one with a part added after the signature, or one without its signature", async () => {
    const validate = (t: string) => h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: `Bearer ${t}` } });
    const [header, payload] = h.tokens.access_token.split(".") as [string, string, string];
    for (const malformed of [`${h.tokens.access_token}.extra`, `${header}.${payload}`]) {
      const res = await validate(malformed);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: "invalid_token" });
      expect((await api(malformed)).status).toBe(401);
    }
  });

  // RFC 6750 §3 (validate is a bearer-protected resource) and RFC 9110 §15.5.2: a 401 carries the challenge, the same
  // the API's own 401 gives for the same token, whatever its cause.
  it("answers each 401 with the Bearer challenge the API gives the same token", async () => {
    const validate = (authorization?: string) => h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: authorization === undefined ? {} : { authorization } });
    const [header, payload] = h.tokens.access_token.split(".") as [string, string, string];
    const refused = [undefined, "Basic abc", `Bearer ${header}.${payload}`, `Bearer ${header}.${payload}.forged`];
    for (const authorization of refused) {
      const res = await validate(authorization);
      expect(res.status).toBe(401);
      const challenge = (await h.call("/public/v1/erp/cards", { token: null, headers: authorization === undefined ? {} : { authorization } })).headers.get("www-authenticate");
      expect(challenge).toBe('Bearer realm="sandbox"');
      expect(res.headers.get("www-authenticate")).toBe(challenge);
    }
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS);
    const expired = await validate(`Bearer ${h.tokens.access_token}`);
    expect(expired.status).toBe(401);
    expect(expired.headers.get("www-authenticate")).toBe('Bearer realm="sandbox"');
  });

  it("answers 401 without a token and 403 when the company's API access is disabled", async () => {
    expect((await h.sandbox.fetch(`${BASE}/oauth2/validate`)).status).toBe(401);
    const disabled = (await exchange(code(h.disabledCompanyId))).body;
    const res = await h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: `Bearer ${disabled.access_token}` } });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: "access_denied" });
  });
});

describe("GET and POST /oauth2/authorize", () => {
  const query = (over: Record<string, string> = {}) =>
    new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "transactions:read", state: "xyz", ...over }).toString();

  it("shows an HTML page with every company to pick and approve/deny buttons", async () => {
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query()}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    for (const c of h.sandbox.control.companies()) expect(html).toContain(`value="${c.id}"`);
    expect(html).toContain('value="approve"');
    expect(html).toContain('value="deny"');
  });

  it("marks the company whose API access is disabled on the page, and offers it all the same (spec-gaps, OAuth: disabled company)", async () => {
    const html = await (await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query()}`)).text();
    const label = (id: string) => html.split("\n").find((line) => line.includes(`value="${id}"`)) ?? "";
    expect(label(h.disabledCompanyId)).toContain("(API access disabled)");
    expect(label(h.companyId)).not.toContain("API access disabled");
  });

  it("preselects the first company on the page, and only it, so an approval without a pick names one company", async () => {
    const html = await (await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query()}`)).text();
    const checked = html.split("\n").filter((line) => line.includes('name="company_id"') && line.includes(" checked"));
    const [first] = h.sandbox.control.companies();
    expect(checked).toHaveLength(1);
    expect(checked[0]).toContain(`value="${first?.id}"`);
  });

  it("lists on the page the scopes the grant will hold: each sandbox scope for none or a blank one, a repeated one once (spec-gaps, OAuth: no scope, all scopes)", async () => {
    const listed = async (scope: string | undefined) => {
      const params = new URLSearchParams(query());
      if (scope === undefined) params.delete("scope");
      else params.set("scope", scope);
      const html = await (await h.sandbox.fetch(`${BASE}/oauth2/authorize?${params.toString()}`)).text();
      return [...(/<ul id="scopes">(.*?)<\/ul>/.exec(html)?.[1] ?? "").matchAll(/<li>(.*?)<\/li>/g)].map((m) => m[1]);
    };
    expect(await listed(undefined)).toEqual([...SANDBOX_SCOPES]);
    expect(await listed(" \t ")).toEqual([...SANDBOX_SCOPES]);
    expect(await listed("transactions:read  cards:read transactions:read")).toEqual(["transactions:read", "cards:read"]);
  });

  it("carries an unknown scope in the decision back as error=invalid_scope with the state, issuing no code (spec-gaps, OAuth: unknown scope)", async () => {
    const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "admin:all", state: "s-9", company_id: h.companyId, decision: "approve" });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location") ?? "");
    expect(location.searchParams.get("error")).toBe("invalid_scope");
    expect(location.searchParams.get("state")).toBe("s-9");
    expect(location.searchParams.has("code")).toBe(false);
  });

  it("redirects with code and state on approval, and the code exchanges for a token of the picked company", async () => {
    const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "transactions:read", state: "s-1", company_id: h.otherCompanyId, decision: "approve" });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location") ?? "");
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get("state")).toBe("s-1");
    const set = (await exchange(location.searchParams.get("code") ?? "")).body;
    expect(claims(set.access_token).company_id).toBe(h.otherCompanyId);
    expect(set.scope).toBe("transactions:read");
  });

  it("issues no code on approval unless the request asks for the code flow", async () => {
    // RFC 6749 §4.1.2.1: another type is unsupported; none at all (§3.1: an empty value is no value) is a missing parameter.
    for (const [responseType, error] of [["token", "unsupported_response_type"], ["", "invalid_request"]] as const) {
      const form = new URLSearchParams({ response_type: responseType, client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "transactions:read", state: "s-3", company_id: h.companyId, decision: "approve" });
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
      const location = new URL(res.headers.get("location") ?? "");
      expect(location.searchParams.get("error")).toBe(error);
      expect(location.searchParams.get("state")).toBe("s-3");
      expect(location.searchParams.has("code")).toBe(false);
    }
  });

  it("redirects with error=access_denied and the state on denial", async () => {
    const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, state: "s-2", company_id: h.companyId, decision: "deny" });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString() });
    const location = new URL(res.headers.get("location") ?? "");
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("s-2");
    expect(location.searchParams.has("code")).toBe(false);
  });

  it("issues a code only on an explicit approval: a decision missing or unknown is a denial (§4.2)", async () => {
    for (const decision of [undefined, "", "yes"]) {
      const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, state: "s-4", company_id: h.companyId });
      if (decision !== undefined) form.set("decision", decision);
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
      const location = new URL(res.headers.get("location") ?? "");
      expect(location.searchParams.get("error"), String(decision)).toBe("access_denied");
      expect(location.searchParams.get("state")).toBe("s-4");
      expect(location.searchParams.has("code")).toBe(false);
    }
  });

  it("takes no approval from a decision sent twice, whichever comes first: a denial, issuing no code", async () => {
    for (const decisions of [["approve", "deny"], ["deny", "approve"], ["approve", "approve"]]) {
      const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, state: "s-6", company_id: h.companyId });
      for (const decision of decisions) form.append("decision", decision);
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
      const location = new URL(res.headers.get("location") ?? "");
      expect(location.searchParams.get("error"), decisions.join()).toBe("access_denied");
      expect(location.searchParams.has("code")).toBe(false);
    }
  });

  it("answers an approval naming two companies 400 on the page, issuing no code: the grant's company is in doubt", async () => {
    const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, state: "s-7", decision: "approve" });
    form.append("company_id", h.companyId);
    form.append("company_id", h.otherCompanyId);
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain("Pick one company.");
  });

  it("answers an approval naming no company of the sandbox 400 on the page, issuing no code", async () => {
    for (const companyId of [undefined, "nope"]) {
      const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: REDIRECT_URI, state: "s-5", decision: "approve" });
      if (companyId !== undefined) form.set("company_id", companyId);
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
      expect(res.status, String(companyId)).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain('id="error"');
    }
  });

  it("answers a decision whose form body cannot be read 400 on the page, not a 500 envelope, issuing no code", async () => {
    for (const type of ["multipart/form-data; boundary=x", "multipart/form-data"]) {
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": type }, body: "not a form", redirect: "manual" });
      expect(res.status, type).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain('id="error"');
    }
  });

  it("refuses a parameter sent twice (RFC 6749 §3.1), as the token endpoint does: client_id or redirect_uri on the page, others by redirect", async () => {
    const twice = (name: string, second: string) => {
      const params = new URLSearchParams(query());
      params.append(name, second);
      return params;
    };
    for (const [name, second] of [["redirect_uri", "http://127.0.0.1:9999/other"], ["client_id", "sandbox-client"]] as const) {
      for (const send of [
        () => h.sandbox.fetch(`${BASE}/oauth2/authorize?${twice(name, second).toString()}`, { redirect: "manual" }),
        () => {
          const form = twice(name, second);
          form.set("company_id", h.companyId);
          form.set("decision", "approve");
          return h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
        },
      ]) {
        const res = await send();
        expect(res.status, name).toBe(400);
        expect(res.headers.get("location"), name).toBeNull();
      }
    }
    for (const [name, second, state] of [["scope", "cards:read", "xyz"], ["response_type", "code", "xyz"], ["state", "other", null]] as const) {
      const page = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${twice(name, second).toString()}`, { redirect: "manual" });
      const form = twice(name, second);
      form.set("company_id", h.companyId);
      form.set("decision", "approve");
      const decision = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
      for (const res of [page, decision]) {
        expect(res.status, name).toBe(302);
        const location = new URL(res.headers.get("location") ?? "");
        expect(location.searchParams.get("error"), name).toBe("invalid_request");
        expect(location.searchParams.get("state"), name).toBe(state);
        expect(location.searchParams.has("code"), name).toBe(false);
      }
    }
  });

  it("never redirects to an unregistered redirect_uri or for an unknown client, and the page says which was refused", async () => {
    const overrides: [Record<string, string>, string][] = [
      [{ redirect_uri: "https://evil.example/cb" }, "redirect_uri is not registered for this client."],
      [{ client_id: "other" }, "Unknown client_id."],
    ];
    for (const [over, message] of overrides) {
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query(over)}`);
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toContain(`<p id="error">${message}</p>`);
    }
  });

  it("keeps the redirect URI's own query and sets code and state over parameters of the same name, one of each (spec-gaps, OAuth: redirect)", async () => {
    const redirectUri = `${REDIRECT_URI}?tenant=t1&state=old&code=old`;
    const form = new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: redirectUri, state: "s-8", company_id: h.companyId, decision: "approve" });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form.toString(), redirect: "manual" });
    const location = new URL(res.headers.get("location") ?? "");
    expect(location.searchParams.getAll("tenant")).toEqual(["t1"]);
    expect(location.searchParams.getAll("state")).toEqual(["s-8"]);
    const codes = location.searchParams.getAll("code");
    expect(codes).toHaveLength(1);
    expect((await exchange(codes[0] ?? "", redirectUri)).status).toBe(200);
  });

  it("refuses a redirect_uri with a fragment, an empty one included, or with credentials, a password alone included (RFC 6749 §3.1.2)", async () => {
    for (const redirectUri of ["http://127.0.0.1:8765/callback#", "http://127.0.0.1:8765/callback#x", "http://:pw@127.0.0.1:8765/callback", "http://u@127.0.0.1:8765/callback"]) {
      const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query({ redirect_uri: redirectUri })}`);
      expect(res.status, redirectUri).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(() => code(h.companyId, redirectUri)).toThrow();
    }
  });

  it("accepts localhost redirect URIs on any port", async () => {
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query({ redirect_uri: "http://localhost:49152/oauth/callback" })}`);
    expect(res.status).toBe(200);
  });

  it("refuses an https loopback redirect_uri: the registered redirects are http only", async () => {
    const res = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query({ redirect_uri: "https://127.0.0.1:8765/callback" })}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  it("redirects with an error for a wrong response_type or an unknown scope", async () => {
    const wrongType = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query({ response_type: "token" })}`);
    expect(new URL(wrongType.headers.get("location") ?? "").searchParams.get("error")).toBe("unsupported_response_type");
    const noType = new URLSearchParams(query());
    noType.delete("response_type");
    const missingType = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${noType.toString()}`);
    expect(new URL(missingType.headers.get("location") ?? "").searchParams.get("error")).toBe("invalid_request");
    const wrongScope = await h.sandbox.fetch(`${BASE}/oauth2/authorize?${query({ scope: "admin:all" })}`);
    expect(new URL(wrongScope.headers.get("location") ?? "").searchParams.get("error")).toBe("invalid_scope");
    expect(new URL(wrongScope.headers.get("location") ?? "").searchParams.get("state")).toBe("xyz");
  });
});
