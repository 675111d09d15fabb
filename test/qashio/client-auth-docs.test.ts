/**
 * docs/spec-gaps.md's "Provider API client" section, its "Operations whose shape is not shown" and "Authentication"
 * parts, held to the code: the numbers, names, codes and messages they give a reader, what they quote of the provider
 * spec, and the code they cite. The behaviour tests count in the constants; these read what the doc states.
 */
import { describe, expect, it } from "vitest";
import { leaseNames } from "../../shared/aws/keys.js";
import { DEFAULT_SCOPES, checkRequestedScope } from "../../shared/cli/cycle-scopes.js";
import { EXIT, UsageError } from "../../shared/cli/errors.js";
import { QashioClient } from "../../shared/qashio/client.js";
import { AUTHORIZE_PATH, AUTHORIZE_URL_ENV_VAR } from "../../shared/qashio/config.js";
import { buildAuthorizeUrl, createState } from "../../shared/qashio/auth/oauth.js";
import { DEFAULT_LOCK_NAME, DEFAULT_LOCK_POLL_MS, DEFAULT_LOCK_TTL_MS, DEFAULT_LOCK_WAIT_MS, refreshDeadline } from "../../shared/qashio/auth/refresh-lease.js";
import { DEFAULT_REFRESH_SKEW_MS, RefreshSkew, storedTokensOf } from "../../shared/qashio/auth/token-expiry.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { QashioError } from "../../shared/qashio/errors.js";
import { DEFAULT_TIMEOUT_MS } from "../../shared/qashio/http.js";
import { safeErrorToken } from "../../shared/qashio/redact.js";
import { OAUTH_ERROR_CODES, errorForResponse } from "../../shared/qashio/response-errors.js";
import { ERROR_CODES } from "../../shared/qashio/schemas/index.js";
import { numbersSaid, textsSaid } from "../doc-text.js";
import { PROVIDER_SPEC, specSection } from "../provider-spec.js";
import { expectCitationsHold, seconds, specGapsPart } from "../spec-gaps-section.js";
import { fakeClock, json, scriptedFetch } from "./helpers.js";

/** The two parts checked here: "Operations whose shape is not shown" and "Authentication". */
const PART = specGapsPart("Provider API client", "Operations whose shape is not shown", "Authentication");
const OPERATIONS = specGapsPart("Provider API client", "Operations whose shape is not shown");
const AUTH = specGapsPart("Provider API client", "Authentication");

/** A transaction UUID of spec §2.1. */
const TRANSACTION_ID = "7b0e0c52-9a3c-4b8e-8f2a-3c1d2e4f5a6b";

/** One bullet of the part, from its bold title to the next bullet. */
function entry(title: string): string {
  const start = PART.indexOf(`**${title}`);
  expect(start, title).toBeGreaterThanOrEqual(0);
  const end = PART.indexOf(" - **", start + 1);
  return PART.slice(start, end < 0 ? undefined : end);
}


/** The scopes the doc says §5 rule 8 names, as it lists them. */
function specScopesSaid(text: string): string[] {
  const [[named = ""] = []] = textsSaid(text, /\(§5 rule 8: ((?:`[\w:]+`,? ?)+)\)/);
  return [...named.matchAll(/`([\w:]+)`/g)].map((m) => m[1] ?? "");
}

/** A token of the JWT form whose claims are `claims` (signature not checked by the client). */
function jwt(claims: Record<string, number>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "none" })}.${part(claims)}.sig`;
}

describe("docs/spec-gaps.md, Provider API client: citations", () => {
  it("cites files that exist and hold the names it gives", () => {
    expect(expectCitationsHold(PART)).toBeGreaterThan(20);
  });
});

describe("docs/spec-gaps.md, Provider API client: operations whose shape is not shown", () => {
  it("maps token and validate errors by status to the error types it names", () => {
    const text = entry("Validate error shape");
    const pairs = textsSaid(text, /(\d{3}) `(\w+Error)`/);
    expect(pairs.length).toBe(3);
    for (const [status, name] of pairs) {
      const error = errorForResponse(Number(status), new Headers(), "", { method: "GET", path: "/oauth2/validate", errorBody: "oauth", now: 0 });
      expect(error.name, status).toBe(name);
    }
  });

  it("allow-lists exactly the OAuth codes it lists, the §7 envelope's codes besides", () => {
    const text = entry("Validate error shape");
    const listed = textsSaid(text.slice(text.indexOf("allow-list"), text.indexOf("Any other code")), /`([a-z_]+)`/).map(([code = ""]) => code);
    expect(new Set(listed)).toEqual(new Set([...OAUTH_ERROR_CODES].filter((code) => !(ERROR_CODES as readonly string[]).includes(code))));
    const [[other = ""] = []] = textsSaid(text, /Any other code is reported as `(\w+)`/);
    const error = errorForResponse(400, new Headers(), JSON.stringify({ error: "gateway_secret_value" }), { method: "POST", path: "/oauth2/token", errorBody: "oauth", now: 0 });
    expect(error.errors.map((e) => e.code)).toEqual([other]);
    expect(error.message).toContain(`(${other})`);
  });

  it("keeps a field or code only as an identifier of at most the length it gives, sharing no run of a secret as long as it says", () => {
    const text = entry("Complete list of error codes");
    const [[longest = 0] = []] = numbersSaid(text, /at most (\d+) characters/);
    const [[run = 0] = []] = numbersSaid(text, /a run of (\d+)\+ characters/);
    for (const [example = ""] of textsSaid(text, /\(`(page_size)`, `(transaction_ids\.3)`, `(line_items\[0\]\.amount)`, `(NOT_FOUND)`/)) expect(safeErrorToken(example, [])).toBe(example);
    // Dotted, as a long one would be (a part is at most 64 characters).
    const ofLength = (n: number) => `${"a".repeat(64)}.${"b".repeat(n - 65)}`;
    expect(safeErrorToken(ofLength(longest), [])).toBe(ofLength(longest));
    expect(safeErrorToken(ofLength(longest + 1), [])).toBe("?");
    const secret = "Zq7Kp2Xw9Rt4Lm8N";
    expect(safeErrorToken(`field_${secret.slice(0, run)}`, [secret])).toBe("?");
    expect(safeErrorToken(`field_${secret.slice(0, run - 1)}`, [secret])).toBe(`field_${secret.slice(0, run - 1)}`);
  });

  it("words a provider error as it shows, no query string, and cuts the kept message where it says", async () => {
    const text = entry("Provider free text in errors");
    const [[method = "", path = "", status = ""] = []] = textsSaid(text, /\(`(POST) (\/[\w/]+) answered (\d{3})`\)/);
    const [[cut = 0] = []] = numbersSaid(text, /the message cut at (\d+) characters/);
    const body = { status_code: Number(status), message: "x".repeat(cut + 50), errors: [{ field: "transaction_ids.0", code: "INVALID_FORMAT", message: "not a uuid" }] };
    const fetch = scriptedFetch(json(Number(status), body), json(Number(status), body));
    const client = new QashioClient({ baseUrl: "https://api.example.test", fetch, clock: fakeClock(), tokenProvider: new StaticTokenProvider("at") });
    const error = (await client.acknowledgeTransactions([TRANSACTION_ID]).catch((e: unknown) => e)) as QashioError;
    expect(fetch.calls[0]?.url.pathname).toBe(path);
    expect(error.message).toBe(`${method} ${path} answered ${status}`);
    expect(error.providerText?.message).toHaveLength(cut);
    expect(error.errors[0]?.message).toBe("");
    expect(Object.keys(error)).not.toContain("providerText");
    const listed = (await client.listTransactions({ page: 2 }).catch((e: unknown) => e)) as QashioError;
    expect(fetch.calls[1]?.url.searchParams.get("page")).toBe("2");
    expect(listed.message).toMatch(new RegExp(`^GET [\\w/]+ answered ${status}$`));
  });

  it("refuses an empty acknowledge and a CT reference before sending, and takes a 2xx that is not JSON", async () => {
    const text = entry("Acknowledge body and response");
    expect(text).toContain("non-empty, UUIDs only (`CT…` references are refused before sending");
    const [[answer = ""] = []] = textsSaid(text, /text that is not JSON, such as `(\w+)`/);
    const fetch = scriptedFetch(new Response(answer, { status: 200, headers: { "content-type": "text/plain" } }));
    const client = new QashioClient({ baseUrl: "https://api.example.test", fetch, clock: fakeClock(), tokenProvider: new StaticTokenProvider("at") });
    await expect(client.acknowledgeTransactions([])).rejects.toBeInstanceOf(QashioError);
    await expect(client.acknowledgeTransactions(["CT0000000001"])).rejects.toBeInstanceOf(QashioError);
    expect(fetch.calls).toHaveLength(0);
    await expect(client.acknowledgeTransactions([TRANSACTION_ID])).resolves.toMatchObject({ acknowledged: 1 });
  });
});

describe("docs/spec-gaps.md, Provider API client: authentication", () => {
  it("names the scopes §5 rule 8 shows, and the cycles' scopes authorize asks for by default", () => {
    const granted = entry("Granted scope");
    const specNamed = specScopesSaid(granted);
    // Each of them is taken without a warning that it is unknown; another is warned of, not refused.
    for (const scope of specNamed) expect(checkRequestedScope(`${DEFAULT_SCOPES} ${scope}`).warnings).toEqual([]);
    expect(checkRequestedScope(`${DEFAULT_SCOPES} wallet:reed`).warnings.join(" ")).toContain("wallet:read");
    const cycles = textsSaid(granted, /the scopes the cycles call with: `([\w:]+)` \([^)]*\), `([\w:]+)` \([^)]*\), `([\w:]+)` \(/)[0] ?? [];
    expect(cycles.join(" ")).toBe(DEFAULT_SCOPES);
    expect(() => checkRequestedScope("transactions:read,cards:read")).toThrow(/comma/);
    expect(() => checkRequestedScope("users:read")).toThrow(/No sign-in was started/);
    // "exit 2 (a bad argument ...)", both for a grant and for a --scope with which no cycle can read.
    const refused = ((): unknown => {
      try {
        return checkRequestedScope("users:read");
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(UsageError);
    for (const [code] of [...numbersSaid(granted, /\bexit (\d)\b/), ...numbersSaid(granted, /; (\d) \(a bad argument/)]) expect(code).toBe(EXIT.usage);
  });

  it("gives the exit code of a revoked family that it says", () => {
    expect(numbersSaid(entry("Ambiguous refresh failures"), /the re-authorize error \(exit (\d+) locally\)/)).toEqual([[EXIT.reauthorize]]);
  });

  it("builds the authorize address from the variable and path it names, with a state of the bits it gives", () => {
    const text = entry("Authorization screen address");
    const [[variable = "", path = ""] = []] = textsSaid(text, /From `(\w+)` or passed explicitly; path `([\w/]+)` appended/);
    expect(variable).toBe(AUTHORIZE_URL_ENV_VAR);
    expect(path).toBe(AUTHORIZE_PATH);
    const url = new URL(buildAuthorizeUrl({ authorizeUrl: "https://id.example.test/", clientId: "c", redirectUri: "http://127.0.0.1/cb", scope: ["cards:read"], state: "s" }));
    expect(url.pathname).toBe(path);
    const [[bits = 0] = []] = numbersSaid(text, /`state` is (\d+) random bits/);
    expect(Buffer.from(createState(), "base64url").length * 8).toBe(bits);
  });

  it("gives the refresh skew and lease times the code uses", () => {
    const lifetime = entry("Access token lifetime");
    expect(numbersSaid(lifetime, /`refreshSkewMs` \(default (\d+) s\)/)).toEqual([[seconds(DEFAULT_REFRESH_SKEW_MS)]]);
    const lease = entry("Cross-process refresh");
    const [[name = "", perTenant = ""] = []] = textsSaid(lease, /name `([\w-]+)` unless given \(`([^`]+)` on AWS\)/);
    expect(name).toBe(DEFAULT_LOCK_NAME);
    expect(perTenant).toBe(leaseNames.tokenRefresh("<tenant>"));
    expect(numbersSaid(lease, /TTL (\d+) s, polled every (\d+) ms with the injected clock for up to (\d+) s/)).toEqual([
      [seconds(DEFAULT_LOCK_TTL_MS), DEFAULT_LOCK_POLL_MS, seconds(DEFAULT_LOCK_WAIT_MS)],
    ]);
    const outlive = entry("A refresh never outlives its lease");
    expect(numbersSaid(outlive, /half-way through the lease \((\d+) s of (\d+) s\): an attempt starts only when its whole timeout \((\d+) s\)/)).toEqual([
      [seconds(refreshDeadline(0, DEFAULT_LOCK_TTL_MS)), seconds(DEFAULT_LOCK_TTL_MS), seconds(DEFAULT_TIMEOUT_MS)],
    ]);
    // whileHolding renews every third of the lease.
    expect(numbersSaid(outlive, /\(same TTL, every third of it: (\d+) s\)/)).toEqual([[seconds(DEFAULT_LOCK_TTL_MS / 3)]]);
    const failed = entry("Failed token save");
    expect(numbersSaid(failed, /renewed every (\d+) s \(a third of its (\d+) s\)/)).toEqual([[seconds(DEFAULT_LOCK_TTL_MS / 3), seconds(DEFAULT_LOCK_TTL_MS)]]);
  });

  it("dates a token as the lifetime rule says, and caps the skew at half the lifetime", () => {
    const now = Date.UTC(2026, 0, 1);
    const providerBehind = now / 1000 - 20 * 60;
    // exp - iat counted from receipt, whatever the provider's clock says.
    expect(storedTokensOf({ access_token: jwt({ iat: providerBehind, exp: providerBehind + 900 }), token_type: "Bearer", refresh_token: "r" }, now).accessTokenExpiresAt).toBe(now + 900_000);
    // Without iat: expires_in above 0, from receipt; else exp unless past or equal to receipt; else unknown.
    expect(storedTokensOf({ access_token: jwt({ exp: now / 1000 + 60 }), token_type: "Bearer", refresh_token: "r", expires_in: 300 }, now).accessTokenExpiresAt).toBe(now + 300_000);
    expect(storedTokensOf({ access_token: jwt({ exp: now / 1000 + 60 }), token_type: "Bearer", refresh_token: "r", expires_in: 0 }, now).accessTokenExpiresAt).toBe(now + 60_000);
    expect(storedTokensOf({ access_token: jwt({ exp: now / 1000 }), token_type: "Bearer", refresh_token: "r" }, now).accessTokenExpiresAt).toBeUndefined();
    // Past the last time a Date holds (an exp in microseconds): skipped.
    const [[year = 0] = []] = numbersSaid(entry("Access token lifetime"), /the last time a `Date` holds \(\+(\d+):/);
    expect(new Date(8.64e15).getUTCFullYear()).toBe(year);
    expect(storedTokensOf({ access_token: jwt({ exp: (now / 1000) * 1e6 }), token_type: "Bearer", refresh_token: "r" }, now).accessTokenExpiresAt).toBeUndefined();
    const skew = new RefreshSkew(undefined);
    expect(skew.of(jwt({ iat: 0, exp: 60 }))).toBe(30_000);
    expect(skew.of(jwt({ iat: 0, exp: 3600 }))).toBe(DEFAULT_REFRESH_SKEW_MS);
  });
});

// The provider spec lives beside the repository (/work/shared/spec); where it is not there, these have nothing to read.
describe.skipIf(PROVIDER_SPEC === "")("docs/spec-gaps.md, Provider API client: what it says of the provider spec", () => {
  it("quotes the spec's examples of the card write values it lets through", () => {
    const text = entry("`velocity_period`");
    const [[velocity = "", usage = "", period = ""] = []] = textsSaid(text, /\(`(\w+)`, `(\w+)`, `([\w`/]+)`\)/);
    const cards = specSection("4.9");
    expect(cards).toContain(`\`velocity_period\` | string | top-up period, for example \`${velocity}\``);
    expect(cards).toContain(`\`card_usage_type\` | string | funding model, for example \`${usage}\``);
    expect(cards).toContain(`reset period, for example ${period.split("`/`").map((p) => `\`${p.replace(/`/g, "")}\``).join(", ")}`);
  });

  it.each([
    ["4.3", OPERATIONS, "acknowledge** - marks transactions as pulled, moving `client_sync_status` to `synced`. Request body shape and response shape: not shown."],
    ["4.8", OPERATIONS, "Query, response fields and errors: not shown."],
    ["4.9", OPERATIONS, "**POST /public/v1/core/cards** - issues a card. Request and response shapes: not shown."],
    ["6", OPERATIONS, "Events, notifications sent to clients, or callbacks: not shown."],
    ["2.2", OPERATIONS, "`sync_errors` and `receipts` entries: appear with the same generic six-key shape"],
    ["3.2", OPERATIONS, "other than the suspension above: not shown."],
    ["7", OPERATIONS, "The token and validate operations do not use the error envelope; the body shape of their errors: not shown."],
    ["5 rule 11", AUTH, "Access token lifetime: not shown."],
    ["5 rule 10", AUTH, "which operation needs which scope: not shown"],
    ["5 rule 6", AUTH, "every refresh returns a new refresh token"],
    ["3.1", AUTH, "within ten minutes"],
    ["2.8", AUTH, "`refresh_token` | string | single use"],
    ["4.2", AUTH, "`400` for missing or unsupported parameters, for a `redirect_uri` mismatch, or for an invalid grant; `401` for an invalid or expired or already-used code, invalid client credentials"],
    ["4.2", AUTH, "Response `200`: `{ active: true }`"],
  ])("cites §%s for what the spec says there", (section, part, said) => {
    expect(part).toContain(`§${section}`);
    expect(specSection(section)).toContain(said);
  });

  it("lists the scopes §5 rule 8 shows, and counts the §7 codes it allow-lists", () => {
    const specNamed = specScopesSaid(entry("Granted scope"));
    expect(specSection("5 rule 8")).toContain(`Scope strings seen: ${specNamed.map((scope) => `\`${scope}\``).join(", ")}.`);
    const [[seen = ""] = []] = textsSaid(specSection("7"), /Codes seen: ((?:`[A-Z_]+`,? ?)+)/);
    const specCodes = [...seen.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1] ?? "");
    expect(specCodes.length).toBe(numbersSaid(entry("Validate error shape"), /the (\w+) §7 lists/)[0]?.[0]);
    for (const code of specCodes) expect(OAUTH_ERROR_CODES.has(code), code).toBe(true);
  });
});
