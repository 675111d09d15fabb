/**
 * End-to-end, in-process: the events `bridge run --once` really writes against the provider sandbox, under every PII
 * mode (full, redact, hash) with card details off and on and card.created enabled, hold to the published contract:
 * each detail validates against docs/events/<type>.json as shipped (a standard JSON Schema validator, as a consumer
 * would check it) and declares no member the schema does not, each line is what an EventBridge target receives, all
 * six types occur, refunds and reversals carry `parent`, personal fields are masked as the mode says, and the rules
 * docs/events.md suggests (Subscribing) pick just the events their prose says.
 */
import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { erpCardDetailView, transactionListView } from "../../sandbox/views.js";
import { EVENT_TYPES, SCHEMA_VERSION } from "../../shared/bridge/events/index.js";
import { PERSONAL_FIELDS } from "../../shared/bridge/pii.js";
import { EXIT } from "../../shared/cli/errors.js";
import type { EventBridgeEnvelope } from "../../shared/local/index.js";
import { matchesPattern, subscriptionPatterns } from "../event-patterns.js";
import { compileJsonSchema } from "../json-schema.js";
import { tokensFor } from "../sandbox/helpers.js";
import { ROOT, readEvents, runInProcess, startHarness } from "./helpers.js";

/** Sandbox time is frozen at this instant (it moves only when the scenario moves it): the same data on every run. */
const START = "2025-06-02T09:00:00.000Z";
const SEED = 1;
const SALT = "events-contract-salt-0123456789";
const MODES = ["full", "redact", "hash"] as const;
type Mode = (typeof MODES)[number];
const CONFIGS = MODES.flatMap((mode) => [false, true].map((cardDetails) => ({ mode, cardDetails })));
type Config = (typeof CONFIGS)[number];
const nameOf = ({ mode, cardDetails }: Config) => `${mode}, card details ${cardDetails ? "on" : "off"}`;

/** Members of an envelope an EventBridge target receives (rule target without input transformer), in order. */
const ENVELOPE_KEYS = ["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** The tenant's event source as docs/events.md's rules spell it (BRIDGE_EVENT_SOURCE). */
const SOURCE = "acme.qashio.bridge";
/** `account` and `region` of every line of the local events file, as docs/events.md (Examples) gives them. */
const LOCAL_ACCOUNT = "000000000000";
const LOCAL_REGION = "local";
/** The amount docs/events.md's "Transactions over an amount" rule starts at; one edit below bills that much or more. */
const LARGE_AMOUNT = 12_000;
/** The masks as docs/events.md ("PII modes") publishes them, spelled out here so a change in the code shows. */
const REDACTED = "[redacted]";
const HASH_PREFIX = "hmac-sha256:";

interface Run {
  /** Transactions the scenario edited after the bridge acknowledged them. */
  readonly edited: readonly string[];
  readonly events: EventBridgeEnvelope[];
  /** Per event (same index), the provider's own view of its subject when the bridge read it. */
  readonly provided: readonly Row[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a provider object is read loosely here
type Row = Record<string, any>;

/**
 * One scenario under `config`: a first run (every seeded not_synced/outdated transaction, every card), provider
 * activity (a refund and a reversal of a purchase, new purchases, edits of acknowledged transactions, a refund and a
 * reversal among them, one respelling its cardholder; through the provider API a renamed card, a spend-limit change,
 * a suspension request, a new card; in the dashboard a termination and an activation), a second run once the
 * suspension committed, a dashboard reactivation of that card and a third run. Sandbox time is fixed and moved only
 * here, so the provider's data is the same in every configuration and on every run of the test.
 */
async function scenario(config: Config): Promise<Run> {
  const harness = await startHarness({ seed: SEED, startTime: START });
  try {
    const { sandbox, eventsFile, dir } = harness;
    const data = sandbox.control.company(harness.companyId)!;
    // A grant of its own for the provider API calls of the scenario, so the bridge's token family is left alone.
    const api = await tokensFor(sandbox, harness.companyId);
    const env = {
      ...harness.env,
      BRIDGE_EVENT_SOURCE: SOURCE,
      BRIDGE_PII_MODE: config.mode,
      ...(config.mode === "hash" ? { BRIDGE_PII_SALT: SALT } : {}),
      BRIDGE_EMIT_CARD_CREATED: "true",
      BRIDGE_CARD_DETAILS: String(config.cardDetails),
    };
    const provided: Row[] = [];
    const run = async () => {
      const outcome = await runInProcess(["run", "--once"], env, undefined, dir);
      expect(outcome.code, outcome.stderr).toBe(EXIT.ok);
      // A run changes nothing at the provider but sync statuses: what the bridge read then, the provider shows now.
      for (const { detail } of (await readEvents(eventsFile)).slice(provided.length)) {
        const { type, id } = detail.subject;
        if (type === "transaction") provided.push(transactionListView(data.transactions.get(id)!));
        else provided.push(erpCardDetailView(data.cards.find((c) => c.id === id)!, data));
      }
    };
    const control = (method: string, path: string, body?: unknown) => harness.control(method, `/companies/{company}${path}`, body);
    const provider = async (method: string, path: string, body: unknown) => {
      const response = await sandbox.fetch(`https://sandbox.local/public/v1/core${path}`, {
        method,
        headers: { "content-type": "application/json", authorization: `Bearer ${api.access_token}` },
        body: JSON.stringify(body),
      });
      expect(response.ok, `${method} ${path}: ${await response.clone().text()}`).toBe(true);
    };

    // What the first run publishes and acknowledges: the rest were synced before the bridge ever ran.
    const listed = data.transactions.all().filter((t) => t.client_sync_status !== "synced");
    await run();

    const purchase = data.transactions.all().find((t) => t.transaction_category === "purchase")!;
    await control("POST", "/transactions", { transaction_category: "refund", parent_qashio_id: purchase.qashio_id });
    await control("POST", "/transactions", { transaction_category: "reversal", parent_qashio_id: purchase.qashio_id });
    await control("POST", "/transactions", { count: 2, transaction_category: "purchase" });
    // Acknowledged in the first run: each edit makes it outdated, so it is listed again, as a change. A refund and a
    // reversal among them, whose transaction.changed carry `parent` too.
    const child = (category: string) => listed.find((t) => t.transaction_category === category && t.parent_qashio_id !== null)!;
    const edited = [child("refund"), child("reversal"), ...listed.filter((t) => t.parent_qashio_id === null).slice(0, 2)];
    for (const t of edited) {
      expect(t.client_sync_status).toBe("synced");
      await control("PATCH", `/transactions/${t.id}`, { memo: `edited ${String(t.qashio_id)}`, approval_status: t.approval_status === "approved" ? "rejected" : "approved" });
    }
    // Billed over the amount rule's threshold, so that rule has an event to pick.
    await control("PATCH", `/transactions/${edited[2]!.id}`, { billing_amount: LARGE_AMOUNT });
    // The same cardholder, written as the provider may also send it: `hash` takes the trimmed value, emails lower-cased.
    const respelled = edited.at(-1)!;
    await control("PATCH", `/transactions/${respelled.id}`, {
      card_holder_name: ` ${String(respelled.card_holder_name)}  `,
      card_holder_email: String(respelled.card_holder_email).toUpperCase(),
    });
    const active = data.cards.filter((c) => c.status === "Active");
    const [renamed, limited, suspended, terminated] = active;
    await provider("PUT", `/cards/${renamed!.id}`, { nickname: "Travel desk" });
    await provider("POST", `/cards/${limited!.id}/update_velocity_limit`, { spend_limit_max_amount: limited!.spendLimit.maxAmount + 500 });
    await provider("PUT", `/cards/${suspended!.id}/change_status`, { status: "suspended", reason: "lost" });
    await provider("POST", "/cards", { nickname: "New hire", card_type: "VIRTUAL", user_id: data.users[0]!.userId });
    await control("POST", `/cards/${terminated!.id}/status`, { status: "Terminated" });
    const inactive = data.cards.find((c) => c.status === "Inactive")!;
    await control("POST", `/cards/${inactive.id}/status`, { status: "Active" });
    // The suspension request commits after the provider's processing delay.
    sandbox.control.advanceClock(31);
    expect(suspended!.status).toBe("Suspended");
    await run();

    await control("POST", `/cards/${suspended!.id}/status`, { status: "Active" });
    await run();

    return { edited: edited.map((t) => t.id), events: await readEvents(eventsFile), provided };
  } finally {
    await harness.close();
  }
}

/** A standard JSON Schema validator per committed docs/events/<type>.json, as shipped. */
async function publishedSchemas(): Promise<Map<string, { schema: SchemaNode; validate: ValidateFunction }>> {
  const schemas = new Map<string, { schema: SchemaNode; validate: ValidateFunction }>();
  for (const type of EVENT_TYPES) {
    const schema = JSON.parse(await readFile(join(ROOT, "docs/events", `${type}.json`), "utf8")) as SchemaNode;
    schemas.set(type, { schema, validate: compileJsonSchema(schema) });
  }
  return schemas;
}

interface SchemaNode {
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly items?: SchemaNode;
}

/** Members of `value` its schema does not declare; `data.object` is the provider's record and open by design. */
function undeclaredMembers(schema: SchemaNode | undefined, value: unknown, at = ""): string[] {
  if (!schema || at === "/data/object" || typeof value !== "object" || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => undeclaredMembers(schema.items, item, `${at}/${i}`));
  const declared = schema.properties;
  if (!declared) return [];
  return Object.entries(value).flatMap(([key, member]) => (key in declared ? undeclaredMembers(declared[key], member, `${at}/${key}`) : [`${at}/${key}`]));
}

/** The values a PERSONAL_FIELDS path names in `object`, each with its concrete path (`a`, `a.b`, `a[i].b`). */
function personalValues(object: Row): [string, unknown][] {
  return PERSONAL_FIELDS.flatMap((field): [string, unknown][] => {
    const [parent = "", member] = field.replace("[]", "").split(".");
    if (member === undefined) return parent in object ? [[parent, object[parent]]] : [];
    const holder: unknown = object[parent];
    if (field.includes("[]")) {
      return Array.isArray(holder) ? holder.flatMap((e: Row, i): [string, unknown][] => (member in e ? [[`${parent}[${i}].${member}`, e[member]]] : [])) : [];
    }
    return holder !== null && typeof holder === "object" && member in holder ? [[`${parent}.${member}`, (holder as Row)[member]]] : [];
  });
}

/** `value` with object keys in sorted order at every level: the order docs/events.md says an object is hashed in. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortedKeys((value as Row)[key])]));
}

/** A personal value as `mode` should publish it, from the provider's value; computed here, not by the bridge. */
function masked(mode: Mode, path: string, value: unknown): unknown {
  if (mode === "full" || value === null || value === undefined || value === "") return value;
  if (mode === "redact") return REDACTED;
  const text = typeof value !== "string" ? JSON.stringify(sortedKeys(value)).normalize("NFC") : path.endsWith("email") ? value.normalize("NFC").trim().toLowerCase() : value.normalize("NFC").trim();
  return HASH_PREFIX + createHmac("sha256", SALT).update(text).digest("hex");
}

const runs = new Map<string, Run>();
let schemas: Awaited<ReturnType<typeof publishedSchemas>>;

beforeAll(async () => {
  schemas = await publishedSchemas();
  for (const config of CONFIGS) runs.set(nameOf(config), await scenario(config));
});
afterAll(() => runs.clear());

describe.each(CONFIGS)("events the bridge writes against the sandbox (PII $mode, card details $cardDetails)", (config) => {
  const events = () => runs.get(nameOf(config))!.events;

  it("are each an EventBridge target payload whose detail validates against docs/events/<type>.json and declares no other member", () => {
    expect(events().length).toBeGreaterThan(0);
    for (const event of events()) {
      const { detail } = event;
      const name = `${detail.type} ${detail.subject.id} #${detail.subject.sequence}`;
      expect(Object.keys(event), name).toEqual(ENVELOPE_KEYS);
      expect(event.version, name).toBe("0");
      expect(event["detail-type"], name).toBe(detail.type);
      expect(event.source, name).toBe(SOURCE);
      expect(event.account, name).toBe(LOCAL_ACCOUNT);
      expect(event.region, name).toBe(LOCAL_REGION);
      expect(event.resources, name).toEqual([]);
      expect(event.id, name).toMatch(UUID);
      expect(event.time, name).toMatch(ISO_TIME);
      expect(detail.schema_version, name).toBe(SCHEMA_VERSION);
      expect(detail.tenant, name).toBe("acme");
      const published = schemas.get(detail.type);
      expect(published, `${name}: no published schema`).toBeDefined();
      expect(published!.validate(detail), `${name}: ${JSON.stringify(published!.validate.errors)}`).toBe(true);
      expect(undeclaredMembers(published!.schema, detail), name).toEqual([]);
    }
  });

  it("cover all six types, each refund and reversal with its parent", () => {
    const types = events().map((e) => e.detail.type);
    for (const type of EVENT_TYPES) expect(types, type).toContain(type);
    const changed = events().filter((e) => e.detail.type === "transaction.changed").map((e) => e.detail.subject.id);
    expect([...changed].sort()).toEqual([...runs.get(nameOf(config))!.edited].sort());
    const children = events().filter((e) => e.detail.subject.type === "transaction" && e.detail.data.object["parent_qashio_id"] != null);
    const kinds = new Set(children.map((e) => `${e.detail.type} ${String(e.detail.data.object["transaction_category"])}`));
    for (const kind of ["transaction.created refund", "transaction.created reversal", "transaction.changed refund", "transaction.changed reversal"]) {
      expect([...kinds], kind).toContain(kind);
    }
    for (const { detail } of children) {
      const parent = detail.data.parent as Row | undefined;
      expect(parent, `${detail.type} ${detail.subject.id}`).toBeDefined();
      expect(parent!["qashio_id"]).toBe(detail.data.object["parent_qashio_id"]);
    }
    // Spend limits are read from the card detail only: with details off, that change is not seen.
    const limitChanges = events().filter((e) => e.detail.type === "card.updated" && (e.detail.data.changes ?? []).some((c) => c.path.startsWith("/purchase_limits")));
    expect(limitChanges.length > 0, "a card.updated with a /purchase_limits change").toBe(config.cardDetails);
  });

  it("are picked by docs/events.md's suggested rules just as its prose says, whatever the PII mode", async () => {
    const envelopes = events().map((e) => JSON.parse(JSON.stringify(e)) as Row);
    const patterns = await subscriptionPatterns();
    const rule = (marker: string) => patterns.find((p) => JSON.stringify(p).includes(marker))!;
    const key = (e: Row) => `${String(e["detail-type"])} ${String(e["detail"].subject.id)} #${String(e["detail"].subject.sequence)}`;
    // What each rule's prose promises, read off the events themselves rather than through a pattern.
    const promised: [pattern: Record<string, unknown>, picks: (detail: Row) => boolean][] = [
      [patterns[0]!, (d) => d["type"].startsWith("transaction.")],
      [rule('"card.suspended"'), (d) => d["type"] === "card.suspended" || (d["type"] === "card.created" && String(d["data"].object.status).trim().toLowerCase() === "suspended")],
      [rule('"numeric"'), (d) => d["type"].startsWith("transaction.") && typeof d["data"].object.billing_amount === "number" && d["data"].object.billing_amount >= 10_000],
      [rule('"/approval_status"'), (d) => d["type"] === "transaction.changed" && (d["data"].changes as Row[]).some((c) => c["path"] === "/approval_status")],
    ];
    for (const [pattern, picks] of promised) {
      const name = JSON.stringify(pattern);
      const expected = envelopes.filter((e) => picks(e["detail"] as Row)).map(key);
      // Not vacuous: each rule has events to pick and events to leave out.
      expect(expected.length, name).toBeGreaterThan(0);
      expect(expected.length, name).toBeLessThan(envelopes.length);
      expect(envelopes.filter((e) => matchesPattern(pattern, e)).map(key), name).toEqual(expected);
    }
    // Both kinds the fraud rule promises occur: a suspension the bridge saw, and a card it first saw suspended.
    const suspended = envelopes.filter((e) => matchesPattern(rule('"card.suspended"'), e)).map((e) => e["detail-type"] as string);
    expect(new Set(suspended)).toEqual(new Set(["card.suspended", "card.created"]));
  });

  it(`carry personal fields as PII mode ${config.mode} says, and no cleartext of them anywhere else`, () => {
    const run = runs.get(nameOf(config))!;
    const seen = new Set<string>();
    const cleartext = new Set<string>();
    for (const [i, { detail }] of run.events.entries()) {
      const name = `${detail.type} ${detail.subject.id}`;
      const provided = personalValues(run.provided[i]!);
      const published = new Map(personalValues(detail.data.object as Row));
      for (const [path, value] of provided) {
        expect(published.get(path), `${name} ${path}`).toEqual(masked(config.mode, path, value));
        if (typeof value === "string" && value.trim() !== "") {
          seen.add(path.replace(/\[\d+\]/, "[]"));
          cleartext.add(value.trim());
        }
      }
    }
    // Not vacuous: the personal fields of both subjects (cardholders, the approver) were there to mask.
    const expected = ["card_holder_name", "card_holder_email", "employee_id", "approved_by.name", "cardholder.name", "cardholder.email", "cardholder.employee_id"];
    expect([...seen].sort()).toEqual(expected.sort());
    if (config.mode === "full") return;
    const text = run.events.map((e) => JSON.stringify(e)).join("\n");
    expect([...cleartext].filter((value) => text.includes(value))).toEqual([]);
  });
});
