/**
 * docs/spec-gaps.md's "Sandbox" subsections "Lists and validation", "Acknowledge" and "Cards and users" held to the
 * sandbox: the bounds, value sets, messages and fixed values they give a reader, read from the doc and compared with
 * the code's constants or with what the sandbox answers, and the code they cite for each choice.
 */
import { describe, expect, it } from "vitest";
import { MAX_DEPOSIT } from "../../sandbox/routes/control.js";
import {
  CARD_USAGE_TYPES,
  IMMEDIATE_INVITATION_LIMIT,
  ISSUER_MAX_SPEND_LIMIT,
  MAX_INVITATIONS,
  POOL_CARD_USAGE_TYPE,
  SPEND_LIMIT_PERIODS,
  VELOCITY_PERIODS,
} from "../../sandbox/routes/core.js";
import { MAX_ACKNOWLEDGE_BATCH, MAX_PAGE_SIZE, SUSPENSION_PROCESSING_SECONDS } from "../../sandbox/state.js";
import { numbersSaid, textsSaid } from "../doc-text.js";
import { expectCitationsHold, specGapsPart } from "../spec-gaps-section.js";
import { errorCodes, harness, type Harness, type Row } from "./helpers.js";

/** The three subsections, "Lists and validation" through "Cards and users", line breaks read as spaces. */
const PART = specGapsPart("Sandbox", "Lists and validation", "Cards and users");

const said = (pattern: RegExp): number[][] => numbersSaid(PART, pattern);
const quoted = (pattern: RegExp): string[][] => textsSaid(PART, pattern);
/** A `A, B, C and D` or `A, B, C` list of back-quoted names as the names. */
const names = (list: string): string[] => [...list.matchAll(/`?([A-Z_]+)`?/g)].map((m) => m[1] ?? "");

const ERP = "/public/v1/erp";
const CORE = "/public/v1/core";

async function coreCards(h: Harness): Promise<Row[]> {
  return (await h.json(`${CORE}/cards?limit=100`)).body.data.cards as Row[];
}

describe("docs/spec-gaps.md, Sandbox lists, acknowledge, cards and users: the code it cites", () => {
  it("names files that exist and hold each name cited", () => {
    expect(PART).toContain("### Cards and users");
    expect(expectCitationsHold(PART)).toBeGreaterThanOrEqual(10);
  });
});

describe("docs/spec-gaps.md, Sandbox lists, acknowledge, cards and users: bounds and value sets", () => {
  it("caps page_size and limit where it says, and answers a larger one 400 OUT_OF_RANGE", async () => {
    expect(said(/Maximum `page_size` \(and `limit` on core cards\) is \*\*(\d+)\*\*; more is `400 OUT_OF_RANGE`/)).toEqual([[MAX_PAGE_SIZE]]);
    const [[cap = 0] = []] = said(/both are still checked, each at most (\d+)/);
    const h = await harness();
    expect(errorCodes((await h.json(`${ERP}/transactions?page_size=${cap + 1}`)).body)).toEqual(["page_size:OUT_OF_RANGE"]);
    expect(errorCodes((await h.json(`${CORE}/cards?limit=${cap + 1}`)).body)).toEqual(["limit:OUT_OF_RANGE"]);
    expect((await h.json(`${CORE}/cards?limit=${cap}`)).status).toBe(200);
  });

  it("caps acknowledge and invitation lists as it says, wherever it says", () => {
    expect(said(/list caps: (\d+) acknowledge ids, (\d+) invitation addresses/)).toEqual([[MAX_ACKNOWLEDGE_BATCH, MAX_INVITATIONS]]);
    expect(said(/`\{"transaction_ids": \[uuid, \.\.\.\]\}`, 1 to (\d+) ids/)).toEqual([[MAX_ACKNOWLEDGE_BATCH]]);
    expect(said(/more than (\d+) well-formed ids, `OUT_OF_RANGE` on `transaction_ids`/)).toEqual([[MAX_ACKNOWLEDGE_BATCH]]);
    expect(said(/at most (\d+) addresses are processed at once \(with `summary`\); (\d+) to (\d+) are queued \(no `summary`\); more than (\d+) is `400 OUT_OF_RANGE`/)).toEqual([
      [IMMEDIATE_INVITATION_LIMIT, IMMEDIATE_INVITATION_LIMIT + 1, MAX_INVITATIONS, MAX_INVITATIONS],
    ]);
  });

  it("commits a suspension after the sandbox time it says", () => {
    expect(said(/Commit after \*\*(\d+) s of sandbox time\*\*/)).toEqual([[SUSPENSION_PROCESSING_SECONDS]]);
  });

  it("gives the issuer's spend-limit maximum and the deposit bound it says", () => {
    expect(said(/refuses `spend_limit_max_amount` > (\d+)/)).toEqual([[ISSUER_MAX_SPEND_LIMIT]]);
    expect(said(/at most the issuer's ([\d,]+)/)).toEqual([[ISSUER_MAX_SPEND_LIMIT]]);
    expect(said(/to the cent \(`1234\.56`\), at most ([\d,]+), else `400` on `amount`/)).toEqual([[MAX_DEPOSIT]]);
  });

  it("lists the funding-update and velocity-limit value sets the routes take", () => {
    const [[velocity = ""] = []] = quoted(/`velocity_period` ∈ ([A-Z, ]+);/);
    expect(names(velocity)).toEqual([...VELOCITY_PERIODS]);
    const [[spend = ""] = []] = quoted(/`spend_limit_period` ∈ ([A-Z_, ]+)\./);
    expect(names(spend)).toEqual([...SPEND_LIMIT_PERIODS]);
    const [[usage = "", pool = ""] = []] = quoted(/`card_usage_type` ∈ ([A-Z_, ]+) for a card with its own account, (\w+) \(the value/);
    expect(names(usage)).toEqual([...CARD_USAGE_TYPES]);
    expect(pool).toBe(POOL_CARD_USAGE_TYPE);
  });
});

describe("docs/spec-gaps.md, Sandbox lists, acknowledge, cards and users: what the sandbox answers", () => {
  it("answers the messages and challenge it quotes for a body that is not JSON and a missing or malformed token", async () => {
    const h = await harness();
    const [[notJson = ""] = []] = quoted(/A body that is not JSON is `400` "([^"]+)" with one `INVALID_FORMAT`/);
    const bad = await h.json(`${ERP}/transactions/acknowledge`, { method: "POST", body: "{not json" });
    expect([bad.status, bad.body.message, errorCodes(bad.body)]).toEqual([400, notJson, ["null:INVALID_FORMAT"]]);

    const [[challenge = ""] = []] = quoted(/`WWW-Authenticate: (Bearer realm="sandbox")`/);
    const [[missing = "", malformed = ""] = []] = quoted(/`Bearer` alone is "([^"]+)", a header of another\s+form \(another scheme, a bare token, text after the token\) "([^"]+)"/);
    for (const authorization of [undefined, "Bearer"]) {
      const res = await h.json(`${ERP}/transactions`, { token: null, headers: authorization ? { authorization } : {} });
      expect([res.status, res.headers.get("www-authenticate"), res.body.errors[0].message]).toEqual([401, challenge, missing]);
    }
    for (const authorization of ["Basic abc", "abc", `Bearer ${h.tokens.access_token} extra`]) {
      const res = await h.json(`${ERP}/transactions`, { token: null, headers: { authorization } });
      expect([res.status, errorCodes(res.body)]).toEqual([401, ["null:UNAUTHORIZED"]]);
      expect(res.body.errors[0].message).toMatch(new RegExp(`^${malformed}`));
    }
  });

  it("reads an empty filter value as it says: every record, none, 404 or 400 by the kind of filter", async () => {
    const h = await harness();
    const all = (await h.json(`${ERP}/transactions?page_size=100`)).body.data as Row[];
    expect((await h.json(`${ERP}/transactions?page_size=100&remote_name=`)).body.data).toHaveLength(all.length);
    expect((await h.json(`${ERP}/transactions?qashio_id=`)).body.data).toEqual([]);
    expect((await h.json(`${ERP}/cards?user_id=`)).status).toBe(404);
    expect((await h.json(`${ERP}/pool_accounts?manager_id=`)).status).toBe(404);
    expect((await h.json(`${ERP}/transactions?card_last_four=`)).status).toBe(400);
  });

  it("answers pool statuses and ranges as it says", async () => {
    const h = await harness();
    const unfiltered = (await h.json(`${ERP}/pool_accounts`)).body.data as Row[];
    expect((await h.json(`${ERP}/pool_accounts?status=all`)).body.data).toEqual(unfiltered);
    for (const status of ["suspended", "Active"]) expect(errorCodes((await h.json(`${ERP}/pool_accounts?status=${status}`)).body)).toEqual(["status:INVALID_ENUM"]);
    const inverted = await h.json(`${ERP}/pool_accounts?created_time_from=2025-03-10&created_time_to=2025-03-01`);
    expect(errorCodes(inverted.body)).toEqual(["created_time_to:INVALID_RANGE"]);
  });

  it("bounds the core card page by the offset it says, and answers page_info at the ends as it says", async () => {
    const [[page = 0, limit = 0] = []] = said(/\(`page=(\d+)&limit=(\d+)`\) is `400 OUT_OF_RANGE` on `page`/);
    const h = await harness();
    expect(errorCodes((await h.json(`${CORE}/cards?page=${page}&limit=${limit}`)).body)).toEqual(["page:OUT_OF_RANGE"]);
    expect(errorCodes((await h.json(`${ERP}/transactions?page=${page + 1}`)).body)).toEqual(["page:OUT_OF_RANGE"]);
    expect((await h.json(`${ERP}/transactions?page=${page}`)).body.data).toEqual([]);
    const past = (await h.json(`${CORE}/cards?page=3&limit=100`)).body.data;
    expect(past.cards).toEqual([]);
    expect(past.page_info).toMatchObject({ next_page: null, previous_page: 2, offset: 200 });
  });

  it("answers acknowledge mistakes with the codes and fields it says, an upper-case UUID unknown", async () => {
    const h = await harness();
    const ack = async (body: unknown) => errorCodes((await h.json(`${ERP}/transactions/acknowledge`, { method: "POST", body })).body);
    const [tx] = (await h.json(`${ERP}/transactions`)).body.data as Row[];
    expect(await ack("[]")).toEqual(["null:INVALID_FORMAT"]);
    expect(await ack("")).toEqual(["transaction_ids:REQUIRED"]);
    expect(await ack({ transaction_ids: [] })).toEqual(["transaction_ids:REQUIRED"]);
    expect(await ack({ transaction_ids: "x" })).toEqual(["transaction_ids:INVALID_FORMAT"]);
    expect(await ack({ transaction_ids: [tx?.id, tx?.qashio_id] })).toEqual(["transaction_ids.1:INVALID_FORMAT"]);
    expect(await ack({ transaction_ids: [String(tx?.id).toUpperCase()] })).toEqual(["transaction_ids.0:NOT_FOUND"]);
    expect((await h.json(`${ERP}/transactions/${String(tx?.id).toUpperCase()}`)).status).toBe(404);
    expect(errorCodes((await h.json(`${ERP}/transactions/acknowledge`)).body)).toEqual(["transactionId:INVALID_FORMAT"]);
  });

  it("answers an empty card-balance nickname with the code and message it quotes, a nickname in another case finding nothing", async () => {
    const [[message = ""] = []] = quoted(/`400 REQUIRED` on `nickname` \("([^"]+)"\)/);
    const h = await harness();
    for (const query of ["nickname=", "nickname=&last_four=1234"]) {
      const res = await h.json(`${CORE}/cards/balance?${query}`);
      expect([res.status, errorCodes(res.body)]).toEqual([400, ["nickname:REQUIRED"]]);
      expect(res.body.errors[0].message).toContain(message);
    }
    const [card] = await coreCards(h);
    const upper = await h.json(`${CORE}/cards/balance?nickname=${encodeURIComponent(String(card?.nickname).toUpperCase())}`);
    expect([upper.status, upper.body.data.cards]).toEqual([200, []]);
  });

  it("issues a card with the defaults, states and name rules it says", async () => {
    const [[defaultMax = 0] = []] = said(/default (\d+), or the pool's `allowed_max_balance` for a pool card/);
    const [[longest = 0] = []] = said(/`nickname` \(required, not blank, ≤ (\d+) once trimmed, kept trimmed\)/);
    const [[longestUpdate = 0] = []] = said(/`nickname` not blank \(`400 REQUIRED`, as when issuing a card\) and ≤ (\d+) characters/);
    expect(longestUpdate).toBe(longest);
    const h = await harness();
    const [card] = await coreCards(h);
    const user = card?.user_profile.user_id as string;
    const issue = (body: Row) => h.json(`${CORE}/cards`, { method: "POST", body });
    const virtual = await issue({ nickname: ` ${"v".repeat(longest)} `, card_type: "VIRTUAL", user_id: user });
    expect(virtual.status).toBe(201);
    expect(virtual.body.data.card).toMatchObject({ status: "active", nickname: "v".repeat(longest), card_usage_type_amount: defaultMax.toFixed(2) });
    expect((await issue({ nickname: "P", card_type: "PHYSICAL", user_id: user })).body.data.card.status).toBe("inactive");
    expect(errorCodes((await issue({ nickname: "v".repeat(longest + 1), card_type: "VIRTUAL", user_id: user })).body)).toEqual(["nickname:OUT_OF_RANGE"]);
    expect(errorCodes((await issue({ nickname: "  ", card_type: "VIRTUAL", user_id: user })).body)).toEqual(["nickname:REQUIRED"]);
    expect(errorCodes((await issue({ nickname: "P", card_type: "VIRTUAL", user_id: user, pool_account_id: "PA1" })).body)).toEqual(["account_type:REQUIRED"]);
    expect(errorCodes((await issue({ nickname: "P", card_type: "VIRTUAL", user_id: user, account_type: "RELOADABLE", pool_account_id: "PA1" })).body)).toEqual(["account_type:INVALID_ENUM"]);
    for (const amount of ["3000", 1.5, true]) expect(errorCodes((await issue({ nickname: "P", card_type: "VIRTUAL", user_id: user, card_usage_type_amount: amount })).body)).toEqual(["card_usage_type_amount:INVALID_FORMAT"]);
    for (const amount of [0, -1]) expect(errorCodes((await issue({ nickname: "P", card_type: "VIRTUAL", user_id: user, card_usage_type_amount: amount })).body)).toEqual(["card_usage_type_amount:OUT_OF_RANGE"]);
  });

  it("takes card issuance's card_type and account_type in any letter case, as it says", async () => {
    const [[issuance = ""] = []] = quoted(/(Card issuance `POST \/core\/cards` body: .+?) Answer `201`/);
    expect(issuance).toMatch(/`card_type` and `account_type` are compared case-insensitively/);
    const h = await harness();
    const [card] = await coreCards(h);
    const pool = ((await h.json(`${ERP}/pool_accounts?status=active`)).body.data as Row[])[0];
    const issued = await h.json(`${CORE}/cards`, {
      method: "POST",
      body: { nickname: "Lower", card_type: "physical", account_type: "pool", pool_account_id: pool?.id, user_id: card?.user_profile.user_id },
    });
    expect([issued.status, String(issued.body.data.card.card_type).toUpperCase(), issued.body.data.card.account_type]).toEqual([201, "PHYSICAL", "POOL"]);
  });

  it("shows the fixed values it names on the core card, its spend limit and card product", async () => {
    const [[issuer = ""] = []] = quoted(/`issuer` `"([\w-]+)"`/);
    const [[product = "", productExternal = ""] = []] = quoted(/one fixed product, `([\w-]+)` \(`external_id` `(\w+)`\)/);
    const [[line1 = "", city = ""] = []] = quoted(/`([^`]+)`, (\w+), for a UAE company/);
    const h = await harness();
    const cards = await coreCards(h);
    expect(new Set(cards.map((c) => c.issuer))).toEqual(new Set([issuer]));
    const physical = cards.find((c) => String(c.card_type).toUpperCase() === "PHYSICAL");
    expect(physical?.shipping_address).toMatchObject({ line1, city, country: "AE" });
    const card = cards.find((c) => c.status === "active") as Row;
    const written = await h.json(`${CORE}/cards/${card.id}/update_velocity_limit`, {
      method: "POST",
      body: { spend_limit_active: true, spend_limit_max_amount: 100, spend_limit_period: "daily", spend_limit_frequency: 1 },
    });
    const [[created = ""] = []] = quoted(/Velocity limit: `201`, message "([^"]+)"/);
    expect([written.status, written.body.message]).toEqual([201, created]);
    const view = written.body.data.card as Row;
    expect(view.spend_limit).toMatchObject({
      id: `SL-${card.id}`,
      external_id: `SL${String(card.id).slice(2)}`,
      name: `${card.nickname} spend limit`,
      limit_type: "SPEND",
      transaction_scope: "ALL",
      period: "DAILY",
    });
    expect(view.card_product).toMatchObject({ id: product, external_id: productExternal, name: `${view.card_type} corporate card` });
  });

  it("lists the Software category with the MCCs it says on the single ERP card read", async () => {
    const [mccs] = said(/a fixed Software of MCCs (\d+), (\d+) and (\d+)/);
    const h = await harness();
    const [card] = (await h.json(`${ERP}/cards`)).body.data as Row[];
    const detail = (await h.json(`${ERP}/cards/${card?.id}`)).body.data as Row;
    const software = (detail.merchant_category_limits.categories as Row[]).find((c) => c.name === "Software");
    expect(software?.mcc_codes).toEqual(mccs?.map(String));
  });

  it("answers invitations as it says: queued past the immediate limit, failed copies and malformed addresses, unknown keys ignored", async () => {
    const [[queued = ""] = []] = quoted(/11 to 100 are queued \(no `(\w+)`\)/);
    const h = await harness();
    const invite = (body: Row) => h.json(`${CORE}/user_profiles/invite`, { method: "POST", body });
    const many = await invite({ end_user: Array.from({ length: IMMEDIATE_INVITATION_LIMIT + 1 }, (_, i) => `q${i}@example.co`) });
    expect([many.status, queued in many.body.data]).toEqual([201, false]);
    const [malformed] = quoted(/so\s+`([^`]+)`, `([^`]+)`, `([^`]+)`, `([^`]+)` and `([^`]+)` are malformed/);
    const mixed = await invite({ end_user: [...(malformed ?? []), "", "Q1@EXAMPLE.CO", " fresh@example.co ", "FRESH@example.co"], admin: ["boss@example.co"] });
    expect(mixed.body.data.summary.success_emails.end_user).toEqual(["fresh@example.co"]);
    expect(mixed.body.data.summary.failed_emails.end_user).toEqual([...(malformed ?? []), "", "Q1@EXAMPLE.CO", "FRESH@example.co"]);
    expect(errorCodes((await invite({ end_user: malformed })).body)).toEqual(["end_user:INVALID_FORMAT"]);
  });
});

/**
 * The back-quoted field paths of a doc list, read on `card`: a bare name the card does not carry at its top, after a
 * dotted one, is of that one's object (`wallets_status.google_pay` and `samsung_pay`).
 */
function fieldsOf(list: string, card: Row): [string, unknown][] {
  let parent: string[] = [];
  return [...list.matchAll(/`([\w.]+)`/g)].map((m) => {
    const named = (m[1] ?? "").split(".");
    if (named.length > 1) parent = named.slice(0, -1);
    const path = named.length > 1 || named[0] === undefined || named[0] in card ? named : [...parent, ...named];
    return [path.join("."), path.reduce<unknown>((value, key) => (value as Row | undefined)?.[key], card)];
  });
}

describe("docs/spec-gaps.md, Sandbox cards: the core card fields it says are held fixed", () => {
  it("serves every listed and written core card with the null, empty, false and true fields it lists", async () => {
    const [[nulls = "", empties = "", falses = "", stringFalses = "", trues = ""] = []] = quoted(
      /Always `null`: (.+?)\. Always empty: (.+?), so the entry shape .+? Always `false`: (.+?), and (`return_card` and `is_manager`) \(`"false"` on the string-typed cards, see Core card list\); `true`: (.+?);/,
    );
    const h = await harness();
    const listed = await coreCards(h);
    const active = listed.find((c) => c.status === "active") as Row;
    const written = (await h.json(`${CORE}/cards/${active.id}`, { method: "PUT", body: { velocity_period: "MONTHLY" } })).body.data.card as Row;
    expect([nulls, empties, falses, trues].flatMap((list) => fieldsOf(list, written)).length).toBeGreaterThanOrEqual(20);
    for (const card of [...listed, written]) {
      for (const [path, value] of fieldsOf(nulls, card)) expect(value, path).toBeNull();
      for (const [path, value] of fieldsOf(empties, card)) expect(value, path).toEqual([]);
      for (const [path, value] of fieldsOf(falses, card)) expect(value, path).toBe(false);
      for (const [path, value] of fieldsOf(stringFalses, card)) expect([false, "false"], path).toContain(value);
      for (const [path, value] of fieldsOf(trues, card)) expect(value, path).toBe(true);
    }
  });
});

describe("docs/spec-gaps.md, Sandbox lists: statements and request ids", () => {
  it("orders a month's statements as it says and keeps the seeded Terminated card's months it gives, 0 to 0", async () => {
    const [[order = ""] = []] = quoted(/Within a month the list keeps one fixed\s+order: (.+?) \(`sandbox\/data\/seed\.ts`/);
    const expected = [
      ["funding account", "CompanyFundAccount"],
      ["pool accounts", "PoolAccount"],
      ["reloadable cards", "Card"],
      ["subsidiary", "Subsidiary"],
    ].filter(([phrase]) => order.includes(phrase ?? "")).map(([, type]) => type);
    expect(expected).toHaveLength(4);
    const h = await harness();
    const statements = (await h.json(`${ERP}/statements?page_size=100`)).body.data as Row[];
    const month = statements.filter((s) => s.statement_period.month === statements[0]?.statement_period.month).map((s) => s.account_type as string);
    expect(month.filter((type, i) => type !== month[i - 1])).toEqual(expected);

    const [[days = 0, months = 0] = []] = said(/closed about (\d+) days before the start, has all (\w+)\)/);
    const terminated = ((await h.json(`${ERP}/cards?page_size=100`)).body.data as Row[]).find((c) => c.status === "Terminated") as Row;
    const detail = (await h.json(`${ERP}/cards/${terminated.id}`)).body.data as Row;
    const now = Date.parse((await (await h.call("/_sandbox/clock", { token: null })).json() as Row).data.now as string);
    expect(Math.round((now - Date.parse(detail.terminated_at as string)) / 86_400_000)).toBe(days);
    const own = (await h.json(`${ERP}/statements/${detail.account_external_id ?? terminated.account_external_id}`)).body.data.data as Row[];
    expect(own.map((s) => [s.opening_balance, s.closing_balance])).toEqual(Array.from({ length: months }, () => [0, 0]));
  });

  it("sends x-request-id on every answer, OAuth, faults and the control surface included, as meta.request_id in envelopes", async () => {
    const h = await harness();
    const answers = [
      await h.call(`${ERP}/transactions`),
      await h.call(`${ERP}/transactions`, { token: null }),
      await h.call("/oauth2/token"),
      await h.call("/oauth2/token", { body: {} }),
      await h.call("/_sandbox/companies", { token: null }),
    ];
    await h.call("/_sandbox/faults", { token: null, body: { path_prefix: "/public/v1/erp/cards", status: 429, count: 1 } });
    const limited = await h.call(`${ERP}/cards`);
    expect([limited.status, limited.headers.get("retry-after")]).toEqual([429, null]);
    for (const res of [...answers, limited]) {
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const body = (await res.json()) as Row;
      if ("meta" in body) expect(body.meta.request_id).toBe(id);
    }
    expect(new Set(answers.map((res) => res.headers.get("x-request-id"))).size).toBe(answers.length);
  });
});

describe("docs/spec-gaps.md, Sandbox lists: paths and statements by account", () => {
  it("answers HEAD as GET without a body, and an unknown API path without a token 401", async () => {
    const h = await harness();
    const head = await h.call(`${ERP}/transactions`, { method: "HEAD" });
    expect([head.status, await head.text()]).toEqual([200, ""]);
    expect((await h.call(`${ERP}/no-such-list`, { token: null })).status).toBe(401);
    expect((await h.call(`${CORE}/no-such-list`)).status).toBe(404);
  });

  it("gives an inverted month range an empty page, a card id 404, and lets page_size win over limit", async () => {
    const h = await harness();
    const [funding] = (await h.json(`${ERP}/statements`)).body.data as Row[];
    const inverted = await h.json(`${ERP}/statements/${funding?.account_external_id}?from_month=2025-03&to_month=2025-01`);
    expect([inverted.status, inverted.body.data.data]).toEqual([200, []]);
    const [card] = (await h.json(`${ERP}/cards`)).body.data as Row[];
    expect((await h.json(`${ERP}/statements/${card?.id}`)).status).toBe(404);
    expect((await h.json(`${CORE}/cards?page_size=2&limit=5`)).body.data.page_info.per_page).toBe(2);
    expect(errorCodes((await h.json(`${CORE}/cards?page_size=2&limit=${MAX_PAGE_SIZE + 1}`)).body)).toEqual(["limit:OUT_OF_RANGE"]);
  });
});
