/**
 * docs/spec-gaps.md's Sandbox subsections "OAuth", "Earlier generation (§9)" and "Data, time, faults" held to the
 * sandbox: the lifetimes, names, codes, companies and bounds they give a reader, and the code they cite. The behaviour
 * tests (oauth, legacy, control, seed) count in the constants; these read what the doc states and drive the sandbox.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { LEGACY_API_KEY_CHALLENGE, LEGACY_PREFIX, ACCESS_TOKEN_TTL_SECONDS, AUTHORIZATION_CODE_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { LATEST_SANDBOX_TIME_MS } from "../../sandbox/clock.js";
import { seedCompanies } from "../../sandbox/data/seed.js";
import { round2 } from "../../sandbox/prng.js";
import { TRANSACTION_CATEGORIES } from "../../shared/qashio/schemas/index.js";
import { DEFAULT_REFRESH_SKEW_MS } from "../../shared/qashio/auth/token-expiry.js";
import { firstNumbersSaid, firstTextsSaid, numbersSaid, textsSaid } from "../doc-text.js";
import { ROOT, expectCitationsHold, seconds, specGapsPart } from "../spec-gaps-section.js";
import { BASE, CLIENT, REDIRECT_URI, START, errorCodes, harness, type Harness, type Row } from "./helpers.js";

const OAUTH = specGapsPart("Sandbox", "OAuth");
const LEGACY = specGapsPart("Sandbox", "Earlier generation (§9)");
const DATA = specGapsPart("Sandbox", "Data, time, faults");

/** The bullet of `text` that starts with `opening`. */
function bullet(text: string, opening: string): string {
  const start = text.indexOf(`- ${opening}`);
  expect(start, opening).toBeGreaterThanOrEqual(0);
  const end = text.indexOf(" - ", start + 2);
  return text.slice(start, end < 0 ? undefined : end);
}

const only = (numbers: number[][]): number => {
  expect(numbers).toHaveLength(1);
  return numbers[0]?.[0] ?? Number.NaN;
};

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

const claimsOf = (jwt: string): Row => JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as Row;
const headerOf = (jwt: string): Row => JSON.parse(Buffer.from(jwt.split(".")[0] ?? "", "base64url").toString("utf8")) as Row;

const tokenCall = (body: Record<string, unknown>) => h.json("/oauth2/token", { body, token: null });

const exchange = (code: string, redirectUri: string, secret: string = CLIENT.client_secret) =>
  tokenCall({ grant_type: "authorization_code", client_id: CLIENT.client_id, client_secret: secret, code, redirect_uri: redirectUri });

const codeFor = (redirectUri = REDIRECT_URI, companyId = h.companyId) => h.sandbox.control.issueAuthorizationCode({ companyId, redirectUri });

const control = (path: string, body: unknown) => h.json(`/_sandbox${path}`, { body, token: null });

describe("docs/spec-gaps.md, Sandbox: OAuth", () => {
  it("gives the lifetimes the sandbox issues: access tokens, refresh tokens and codes", async () => {
    const accessMinutes = only(numbersSaid(OAUTH, /lifetime \*\*(\w+) minutes\*\* of sandbox time/));
    const refreshDays = only(numbersSaid(OAUTH, /opaque `rt_…`, single use, (\w+) days/));
    const codeMinutes = only(numbersSaid(OAUTH, /Codes: (\w+) minutes, single use/));
    expect([ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, AUTHORIZATION_CODE_TTL_SECONDS]).toEqual([accessMinutes * 60, refreshDays * 86_400, codeMinutes * 60]);
    const claims = claimsOf(h.tokens.access_token);
    expect([claims.exp - claims.iat, h.tokens.expires_in]).toEqual([accessMinutes * 60, accessMinutes * 60]);
    // A code lapses at exactly its lifetime: the doc's minutes, one second short still exchanges.
    const [fresh, stale] = [codeFor(), codeFor()];
    h.sandbox.control.advanceClock(codeMinutes * 60 - 1);
    expect((await exchange(fresh, REDIRECT_URI)).status).toBe(200);
    h.sandbox.control.advanceClock(1);
    expect((await exchange(stale, REDIRECT_URI)).body).toMatchObject({ error: "invalid_grant" });
    // The bridge refreshes ahead of expiry by the margin the doc gives.
    expect(seconds(DEFAULT_REFRESH_SKEW_MS)).toBe(only(numbersSaid(OAUTH, /ahead of expiry \(the bridge: (\d+) s\)/)));
  });

  it("signs access tokens as the JWT it describes, with exactly the claims it lists, and refresh tokens with its prefix", () => {
    const [alg = "", listed = ""] = firstTextsSaid(OAUTH, /Access tokens: (\w+) JWT \(random key per sandbox instance\) with ([^;]+);/);
    const claims = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect(Object.keys(claimsOf(h.tokens.access_token)).sort()).toEqual(claims.sort());
    expect(headerOf(h.tokens.access_token)).toMatchObject({ alg, typ: "JWT" });
    const [prefix = ""] = firstTextsSaid(OAUTH, /Refresh tokens: opaque `(\w+)…`/);
    expect(h.tokens.refresh_token.startsWith(prefix)).toBe(true);
  });

  it("answers the token endpoint with every status and code its error list names, and no other", async () => {
    const errors = bullet(OAUTH, "Token endpoint error body");
    const stated = new Set(textsSaid(errors, /`(\d{3}) (\w+)`/).map(([status, code]) => `${status} ${code}`));
    const answers = await Promise.all([
      tokenCall({}),
      tokenCall({ grant_type: "password" }),
      exchange(codeFor(), `${REDIRECT_URI}/`),
      exchange(codeFor(), REDIRECT_URI, "wrong-secret"),
      exchange("unknown-code", REDIRECT_URI),
    ]);
    expect(new Set(answers.map((a) => `${a.status} ${String(a.body.error)}`))).toEqual(stated);
  });

  it("refuses the redirect URIs it names as differing text with 400 invalid_grant, the code left unspent for the right one", async () => {
    const scope = bullet(OAUTH, "Scopes, redirect URI, lifetimes");
    expect(scope).toContain("a trailing `/`, `localhost` for `127.0.0.1`, an upper-case host, an explicit `:80` or other percent-encoding is `400 invalid_grant`");
    const variants: [issued: string, sent: string][] = [
      ["http://127.0.0.1:8765/callback", "http://127.0.0.1:8765/callback/"],
      ["http://127.0.0.1:8765/callback", "http://localhost:8765/callback"],
      ["http://localhost:8765/callback", "http://LOCALHOST:8765/callback"],
      ["http://localhost/callback", "http://localhost:80/callback"],
      ["http://localhost/c%61llback", "http://localhost/callback"],
    ];
    for (const [issued, sent] of variants) {
      const code = codeFor(issued);
      const refused = await exchange(code, sent);
      expect([sent, refused.status, refused.body.error]).toEqual([sent, 400, "invalid_grant"]);
      expect([issued, (await exchange(code, issued)).status]).toEqual([issued, 200]);
    }
  });

  it("leaves tokens already issued valid when their code is reused or their family refreshed, as it says", async () => {
    expect(bullet(OAUTH, "Token set adds")).toContain("reusing a code does not revoke its tokens");
    expect(bullet(OAUTH, "Scopes, redirect URI, lifetimes")).toContain("A refresh leaves the access tokens issued before it valid until their `exp`, unless the family is revoked");
    const code = codeFor();
    const first = await exchange(code, REDIRECT_URI);
    expect((await exchange(code, REDIRECT_URI)).status).toBe(401);
    const api = (token: unknown) => h.call("/public/v1/erp/cards", { token: String(token) });
    expect((await api(first.body.access_token)).status).toBe(200);
    const refreshed = await tokenCall({ grant_type: "refresh_token", ...CLIENT, refresh_token: first.body.refresh_token });
    expect([(await api(first.body.access_token)).status, (await api(refreshed.body.access_token)).status]).toEqual([200, 200]);
  });

  it("answers validate with the fields, error codes and challenge it gives", async () => {
    const validate = bullet(OAUTH, "Validate:");
    const [fields = ""] = firstTextsSaid(validate, /`200 \{ active: true, ([\w, ]+) \}`/);
    const [unauthorized = "", challenge = ""] = firstTextsSaid(validate, /`401 \{ error: "(\w+)" \}` with `WWW-Authenticate: ([^`]+)`/);
    const [forbidden = ""] = firstTextsSaid(validate, /`403 \{ error: "(\w+)" \}` when the company's API access is disabled/);
    const call = async (token: string) => {
      const res = await h.call("/oauth2/validate", { token });
      return { status: res.status, body: (await res.json()) as Row, challenge: res.headers.get("www-authenticate") };
    };
    const ok = await call(h.tokens.access_token);
    expect([ok.status, Object.keys(ok.body)]).toEqual([200, ["active", ...fields.split(", ")]]);
    expect(ok.body.active).toBe(true);
    const refused = await call("not.a.token");
    expect([refused.status, refused.body.error, refused.challenge]).toEqual([401, unauthorized, challenge]);
    // The API's own challenge: the same text on a 401 of the bearer-protected API.
    expect((await h.call("/public/v1/erp/cards", { token: "not.a.token" })).headers.get("www-authenticate")).toBe(challenge);
    const disabled = await tokenCall({ grant_type: "authorization_code", ...CLIENT, code: codeFor(REDIRECT_URI, h.disabledCompanyId), redirect_uri: REDIRECT_URI });
    const denied = await call(String(disabled.body.access_token));
    expect([denied.status, denied.body.error]).toEqual([403, forbidden]);
  });

  it("redirects each of the authorize screen's refusals with the error it names for it", async () => {
    const page = bullet(OAUTH, "Authorize page");
    const [repeated = ""] = firstTextsSaid(page, /Another of its parameters sent twice \(RFC 6749 §3\.1, [^)]*\) redirects with `error=(\w+)`/);
    const [unsupported = "", absent = ""] = firstTextsSaid(page, /`response_type` other than `code`: redirect with `error=(\w+)`, none \(or empty\): `error=(\w+)`/);
    const [unknownScope = ""] = firstTextsSaid(page, /unknown scope: `error=(\w+)`/);
    const [denied = ""] = firstTextsSaid(page, /Deny redirects with `error=(\w+)` and the `state`/);
    const screen = (params: Record<string, string | string[]>) => {
      const query = new URLSearchParams();
      for (const [name, values] of Object.entries(params)) for (const value of [values].flat()) query.append(name, value);
      return h.sandbox.fetch(`${BASE}/oauth2/authorize?${query.toString()}`, { redirect: "manual" });
    };
    const base = { client_id: CLIENT.client_id, redirect_uri: REDIRECT_URI, state: "s1" };
    const deny = () =>
      h.sandbox.fetch(`${BASE}/oauth2/authorize`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ ...base, response_type: "code", decision: "deny", company_id: h.companyId }).toString(),
        redirect: "manual",
      });
    const cases: [what: string, answer: () => Promise<Response>, error: string][] = [
      ["scope twice", () => screen({ ...base, response_type: "code", scope: ["cards:read", "cards:read"] }), repeated],
      ["response_type token", () => screen({ ...base, response_type: "token" }), unsupported],
      ["no response_type", () => screen(base), absent],
      ["empty response_type", () => screen({ ...base, response_type: "" }), absent],
      ["unknown scope", () => screen({ ...base, response_type: "code", scope: "Cards:Read" }), unknownScope],
      ["deny", deny, denied],
    ];
    for (const [what, answer, error] of cases) {
      const res = await answer();
      const location = new URL(res.headers.get("location") ?? "about:blank");
      expect([what, res.status, location.searchParams.get("error"), location.searchParams.get("state")]).toEqual([what, 302, error, "s1"]);
    }
  });

  it("names the seeded company whose API access is disabled, whose grants are still made and refreshed", async () => {
    const [name = ""] = firstTextsSaid(bullet(OAUTH, "A seeded company with API access disabled"), /disabled \("([^"]+)"\) answers `403`/);
    const disabled = h.sandbox.control.companies().filter((c) => !c.apiAccessEnabled);
    expect(disabled.map((c) => [c.id, c.name])).toEqual([[h.disabledCompanyId, name]]);
    const tokens = await exchange(codeFor(REDIRECT_URI, h.disabledCompanyId), REDIRECT_URI);
    expect(tokens.status).toBe(200);
    expect((await tokenCall({ grant_type: "refresh_token", ...CLIENT, refresh_token: tokens.body.refresh_token })).status).toBe(200);
    expect((await h.call("/public/v1/erp/cards", { token: String(tokens.body.access_token) })).status).toBe(403);
  });
});

describe("docs/spec-gaps.md, Sandbox: Earlier generation (§9)", () => {
  const legacy = (path: string, headers: Record<string, string>) => h.call(path, { token: null, headers });

  it("serves every path it names under the prefix, single reads included, with the company's key", async () => {
    const paths = textsSaid(bullet(LEGACY, "Served at the prefix"), /`(\/legacy\/[\w/{}-]+)`/).map(([path = ""]) => path);
    expect(paths.every((path) => path.startsWith(`${LEGACY_PREFIX}/`))).toBe(true);
    const company = h.sandbox.control.company(h.companyId);
    const ids: Record<string, string> = {
      "erp-transactions": String(company?.transactions.all()[0]?.id),
      cards: String(company?.cards[0]?.id),
      statements: String(company?.statements[0]?.account.accountExternalId),
    };
    const key = { "x-api-key": h.sandbox.control.companies()[0]?.apiKey ?? "" };
    for (const path of paths) {
      const concrete = path.replace(/^\/legacy\/([\w-]+)\/\{id\}$/, (_, resource: string) => `/legacy/${resource}/${ids[resource] ?? "?"}`);
      expect([path, (await legacy(`${concrete}?companyId=${h.companyId}`, key)).status]).toEqual([path, 200]);
    }
  });

  it("refuses a missing or doubled companyId with the codes it names, and a missing key with the challenge it quotes", async () => {
    const credential = bullet(LEGACY, "Credential:");
    const [missing = "", doubled = ""] = firstTextsSaid(credential, /missing `companyId` `400 (\w+)`, sent twice `400 (\w+)`/);
    const [challenge = ""] = firstTextsSaid(credential, /`WWW-Authenticate: ([^`]+)`/);
    expect(challenge).toBe(LEGACY_API_KEY_CHALLENGE);
    const key = { "x-api-key": h.sandbox.control.companies()[0]?.apiKey ?? "" };
    const codes = async (query: string) => errorCodes((await (await legacy(`/legacy/erp-transactions${query}`, key)).json()) as Row);
    expect(await codes("")).toEqual([`companyId:${missing}`]);
    expect(await codes(`?companyId=${h.companyId}&companyId=${h.companyId}`)).toEqual([`companyId:${doubled}`]);
    const keyless = await legacy(`/legacy/erp-transactions?companyId=${h.companyId}`, {});
    expect([keyless.status, keyless.headers.get("www-authenticate")]).toEqual([401, challenge]);
  });
});

describe("docs/spec-gaps.md, Sandbox: Data, time, faults", () => {
  const seeded = (seed: number, backlog?: number) => seedCompanies({ seed, nowMs: Date.parse(START), backlog });

  it("seeds the three companies it names, with their currencies, transaction counts and the one without API access", () => {
    const said = textsSaid(bullet(DATA, "Seeded data"), /(?:Three companies: |, )([A-Z][\w ]+?) \(([A-Z]{3}), (\d+)(?: transactions)?(, API access disabled)?\)/);
    const stated = said.map(([name, currency, count, disabled]) => [name, currency, Number(count), disabled === ""]);
    expect(stated).toHaveLength(3);
    for (const seed of [1, 7]) {
      expect(seeded(seed).map((d) => [d.company.name, d.company.currency, d.transactions.size, d.company.apiAccessEnabled])).toEqual(stated);
    }
  });

  it("gives statements for the full months before the seed it counts, and none for a card made this month", () => {
    const months = only(numbersSaid(bullet(DATA, "Statements:"), /Statements: the (\w+) full months before the seed's start time/));
    const start = new Date(START);
    const expected = Array.from({ length: months }, (_, i) => new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() - months + i, 1)).toISOString().slice(0, 7));
    for (const data of seeded(1)) {
      expect([...new Set(data.statements.map((s) => s.month))].sort()).toEqual(expected);
      const madeThisMonth = data.cards.filter((card) => card.createdAt >= `${START.slice(0, 7)}-01`).map((card) => card.accountExternalId);
      expect(data.statements.filter((s) => madeThisMonth.includes(s.account.accountExternalId))).toEqual([]);
    }
  });

  it("serves every listed transaction category, the count it gives, in each seeded company with API access", () => {
    const kinds = bullet(DATA, "Transaction kinds:");
    // The kinds §2.2 covers and the values it lists beside them: together every value the sandbox serves.
    const covered = only(numbersSaid(kinds, /§2\.2 names (\w+) kinds as covered/));
    const [listed = ""] = firstTextsSaid(kinds, /yet lists ((?:`\w+`,? (?:and )?)+)among the allowed/);
    const outside = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    for (const category of outside) expect(TRANSACTION_CATEGORIES).toContain(category);
    const count = covered + outside.length;
    expect(TRANSACTION_CATEGORIES).toHaveLength(count);
    for (const seed of [1, 7, 42]) {
      for (const data of seeded(seed).filter((d) => d.company.apiAccessEnabled)) {
        expect([seed, data.company.name, new Set(data.transactions.all().map((tx) => tx.transaction_category)).size]).toEqual([seed, data.company.name, count]);
      }
    }
  });

  it("charges the fees and VAT at the rates it gives, under the tax names it quotes", () => {
    const values = bullet(DATA, "Values of fields the spec lists none for");
    const [cashRate = 0, cashFixed = 0, foreignRate = 0] = firstNumbersSaid(values, /`fee_charges` (\d+)% of the billing amount plus (\d+) on a cash withdrawal, (\d+)% on a purchase in another currency/);
    const homeTax = Object.fromEntries(textsSaid(values, /`([^`]*?(\d+)%)` in (?:the UAE|Saudi Arabia)/).map(([name = "", rate = ""]) => [name, Number(rate)]));
    const seen = new Set<string>();
    for (const data of seeded(7)) {
      for (const tx of data.transactions.all()) {
        const billing = Number(tx.billing_amount);
        const foreign = tx.transaction_currency !== tx.billing_currency;
        const fee = tx.transaction_category === "cash_withdrawal" ? round2((billing * cashRate) / 100 + cashFixed) : tx.transaction_category === "purchase" && foreign ? round2((billing * foreignRate) / 100) : 0;
        expect([tx.qashio_id, tx.fee_charges]).toEqual([tx.qashio_id, fee]);
        if (tx.transaction_category === "purchase" && tx.merchant_country === data.company.country) {
          const name = String(tx.erp_tax_rate_name);
          const rate = homeTax[name];
          expect([tx.qashio_id, rate !== undefined]).toEqual([tx.qashio_id, true]);
          expect([tx.qashio_id, tx.vat_amount]).toEqual([tx.qashio_id, round2((billing * (rate ?? 0)) / (100 + (rate ?? 0)))]);
          seen.add(name);
        }
        if (fee > 0) seen.add(tx.transaction_category === "cash_withdrawal" ? "cash fee" : "foreign fee");
      }
    }
    expect([...seen].sort()).toEqual([...Object.keys(homeTax), "cash fee", "foreign fee"].sort());
  });

  it("stamps writes of one frozen instant the milliseconds apart it says", async () => {
    expect(bullet(DATA, "No transaction stamp lies after sandbox now")).toContain("later writes of one instant lie 1 ms, 2 ms, … past now");
    const made = await control(`/companies/${h.companyId}/transactions`, { count: 3, transaction_category: "card_loading" });
    expect((made.body.data as Row[]).map((tx) => Date.parse(String(tx.created_at)) - Date.parse(START))).toEqual([0, 1, 2]);
  });

  it("keeps the clock at or before the latest time it gives, the edge taken, and says so when it refuses a millisecond past it", async () => {
    const [latest = ""] = firstTextsSaid(bullet(DATA, "Clock:"), /keep sandbox time at or before (\d{4}-\d\d-\d\dT\d\d:\d\dZ)/);
    expect(Date.parse(latest)).toBe(LATEST_SANDBOX_TIME_MS);
    const toEdge = seconds(Date.parse(latest) - Date.parse(START));
    const past = await control("/clock", { advance_seconds: toEdge + 0.001 });
    expect([past.status, errorCodes(past.body)]).toEqual([400, ["advance_seconds:OUT_OF_RANGE"]]);
    // The edge itself is taken: the refusal must not say the clock stays "before" it.
    expect(past.body.errors[0].message).toContain(`at or before ${new Date(latest).toISOString()}`);
    expect((await control("/clock", { advance_seconds: toEdge })).body.data.now).toBe(new Date(latest).toISOString());
  });

  it("spreads a reset's backlog over the days it gives, the shorter span up to the size it names", () => {
    const [longDays = 0, shortDays = 0, upTo = 0] = firstNumbersSaid(bullet(DATA, "Reset keeps OAuth grants"), /spread over (\d+) days \((\d+) days for (\d+) or fewer/);
    const spanDays = (backlog: number) => {
      const times = seeded(1, backlog)[0]?.transactions.all().map((tx) => Date.parse(tx.transaction_time)) ?? [];
      return (Date.parse(START) - Math.min(...times)) / 86_400_000;
    };
    const [short, long] = [spanDays(upTo), spanDays(upTo + 1)];
    expect(short).toBeLessThanOrEqual(shortDays);
    expect(short).toBeGreaterThan(shortDays - 1);
    expect(long).toBeLessThanOrEqual(longDays);
    expect(long).toBeGreaterThan(longDays - 1);
  });

  it("keeps the refresh tokens it reckons a month at the default access token lifetime", () => {
    const [about = 0, defaultSeconds = 0] = firstNumbersSaid(bullet(DATA, "OAuth records are kept only while"), /\(about (\d+) at the (\d+) s default\)/);
    expect(defaultSeconds).toBe(ACCESS_TOKEN_TTL_SECONDS);
    expect(Math.abs(REFRESH_TOKEN_TTL_SECONDS / defaultSeconds - about) / about).toBeLessThan(0.05);
  });

  it("answers injected faults on the OAuth paths with the codes it names for each status", async () => {
    const faults = bullet(DATA, "Faults never apply");
    const [tokenBad = "", tokenRefused = ""] = firstTextsSaid(faults, /\(token: `400 (\w+)`, `401 (\w+)`/);
    const [validateRefused = "", validateForbidden = "", validateBad = ""] = firstTextsSaid(faults, /validate: `401 (\w+)` with its Bearer challenge, `403 (\w+)`, and `400 (\w+)`/);
    const [busy = ""] = firstTextsSaid(faults, /`429` and `503` `(\w+)`/);
    const [refusal = ""] = firstTextsSaid(faults, /\(a `403` of the token endpoint\) `(\w+)`/);
    const [other = ""] = firstTextsSaid(faults, /any other status `(\w+)`/);
    const cases: [path: string, status: number, error: string][] = [
      ["/oauth2/token", 400, tokenBad],
      ["/oauth2/token", 401, tokenRefused],
      ["/oauth2/token", 403, refusal],
      ["/oauth2/token", 429, busy],
      ["/oauth2/token", 500, other],
      ["/oauth2/validate", 400, validateBad],
      ["/oauth2/validate", 401, validateRefused],
      ["/oauth2/validate", 403, validateForbidden],
      ["/oauth2/validate", 503, busy],
    ];
    for (const [path, status, error] of cases) {
      await control("/faults", { path_prefix: path, status, count: 1 });
      const res = await h.call(path, path === "/oauth2/token" ? { body: "{}", token: null } : {});
      expect([path, res.status, ((await res.json()) as Row).error]).toEqual([path, status, error]);
    }
  });

  it("answers an injected fault on the authorization screen with a page of the status and the words it quotes", async () => {
    const [status = "", words = "", fallback = ""] = firstTextsSaid(bullet(DATA, "Faults never apply"), /\(`(\d{3}) ([A-Z][a-z ]+)`; `([A-Z][a-z ]+)` for a status without words\)/);
    const screen = `${BASE}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: CLIENT.client_id, redirect_uri: REDIRECT_URI })}`;
    for (const [injected, said] of [[Number(status), words], [418, fallback]] as const) {
      await control("/faults", { path_prefix: "/oauth2/authorize", status: injected, count: 1 });
      const res = await h.sandbox.fetch(screen);
      expect([res.status, res.headers.get("content-type")?.startsWith("text/html")]).toEqual([injected, true]);
      expect(await res.text()).toContain(`${injected} ${said}`);
    }
  });
});

describe("docs/spec-gaps.md, Sandbox: OAuth, Earlier generation and Data, time, faults cite code that exists", () => {
  it.each([
    ["OAuth", OAUTH],
    ["Earlier generation", LEGACY],
    ["Data, time, faults", DATA],
  ])("%s: every path-first citation holds the names after it", (_, text) => {
    expect(expectCitationsHold(text)).toBeGreaterThan(0);
  });

  it("names in each (`name`, `path`) citation something the file holds", () => {
    const cited = textsSaid(`${LEGACY} ${DATA}`, /\(`(\w+)`, `((?:sandbox|shared)\/[\w/.-]+\.ts)`/);
    for (const [name = "", path = ""] of cited) expect(new RegExp(`\\b${name}\\b`).test(readFileSync(join(ROOT, path), "utf8")), `${name} in ${path}`).toBe(true);
  });
});
