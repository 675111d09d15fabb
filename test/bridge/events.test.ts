import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { describe, expect, it, vi } from "vitest";
import { detailJson, detailJsonParts, EVENT_TYPES, parseEventDetail, SCHEMA_VERSION, type EventType } from "../../shared/bridge/events/index.js";
import { renderEventJsonSchemas, writeEventJsonSchemas } from "../../shared/bridge/events/json-schema.js";
import { DEFAULT_SOURCE, pollCards, pollTransactions, type BridgeEvent, type EventPublisher } from "../../shared/bridge/index.js";
import { cardChangedAt } from "../../shared/bridge/cards.js";
import { lastModified } from "../../shared/bridge/versions.js";
import { eventId } from "../../shared/bridge/hash.js";
import type { Snapshot } from "../../shared/bridge/ports.js";
import { toEventBridgeEnvelope } from "../../shared/local/jsonl-publisher.js";
import { SETTINGS } from "../../shared/cli/config.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { TRUNCATED_SNAPSHOT_OBJECT } from "../../shared/aws/snapshot-store.js";
import { reduceDetail } from "../../shared/aws/event-size.js";
import { conformSnapshots } from "../../shared/bridge/conform.js";
import { compileJsonSchema } from "../json-schema.js";
import { matchesPattern, subscriptionPatterns } from "../event-patterns.js";
import { quotedNames } from "../doc-text.js";
import { makeRig, type FakeTransaction } from "./fakes.js";
import { clientOverFake } from "./provider-client.js";

const docs = path.resolve(import.meta.dirname, "../../docs");

/** docs/events.md's "Rare cases", whitespace collapsed. */
async function rareCases(): Promise<string> {
  const catalog = await readFile(path.join(docs, "events.md"), "utf8");
  const start = catalog.indexOf("### Rare cases");
  return catalog.slice(start, catalog.indexOf("\n### ", start + 1)).replace(/\s+/g, " ");
}

/**
 * Events of every type, as the engine publishes them: a refund with its parent, changes, cards in every move. Copies,
 * as the recording publisher keeps them; `publisher` sees the engine's own.
 */
async function oneOfEachType(publisher?: EventPublisher, as: { readonly tenant?: string; readonly source?: string } = {}): Promise<BridgeEvent[]> {
  const rig = makeRig({ emitCardCreated: true, ...(as.tenant === undefined ? {} : { tenant: as.tenant }) }, {
    ...(publisher ? { publisher } : {}),
    ...(as.source === undefined ? {} : { source: as.source }),
  });
  const purchase = rig.provider.addTransaction();
  const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_id: purchase.id, parent_qashio_id: purchase.qashio_id });
  const card = rig.provider.addCard();
  const other = rig.provider.addCard();
  await pollTransactions(rig.deps);
  await pollCards(rig.deps);
  rig.provider.changeTransaction(purchase.id, { memo: "lunch" });
  // A changed refund: changes and parent both, whose order in the detail's JSON is the engine's.
  rig.provider.changeTransaction(refund.id, { memo: "returned" });
  rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
  rig.provider.changeCard(other["id"] as string, { card_nickname: "Travel" });
  await pollTransactions(rig.deps);
  await pollCards(rig.deps);
  rig.provider.changeCard(card["id"] as string, { status: "Terminated" });
  await pollCards(rig.deps);
  return rig.publisher.events;
}

interface JsonSchemaNode {
  readonly type?: unknown;
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>;
  readonly items?: JsonSchemaNode;
  readonly additionalProperties?: unknown;
}

/** A standard JSON Schema validator per committed docs/events/<type>.json: what a consumer would check events with. */
async function publishedValidators(): Promise<Map<string, ValidateFunction>> {
  const validators = new Map<string, ValidateFunction>();
  for (const type of EVENT_TYPES) {
    validators.set(type, compileJsonSchema(JSON.parse(await readFile(path.join(docs, "events", `${type}.json`), "utf8")) as object));
  }
  return validators;
}

/** Every object node of a JSON Schema document, with its JSON Pointer. */
function objectNodes(node: unknown, at = ""): { at: string; node: JsonSchemaNode }[] {
  if (typeof node !== "object" || node === null) return [];
  const children = Object.entries(node).flatMap(([key, child]) => objectNodes(child, `${at}/${key}`));
  return (node as JsonSchemaNode).type === "object" ? [{ at, node: node as JsonSchemaNode }, ...children] : children;
}

/** Members of `value` its schema does not declare; `data.object` is the provider's record and open by design. */
function undeclaredMembers(schema: JsonSchemaNode | undefined, value: unknown, at = ""): string[] {
  if (!schema || at === "/data/object" || typeof value !== "object" || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item, i) => undeclaredMembers(schema.items, item, `${at}/${i}`));
  const declared = schema.properties;
  if (!declared) return [];
  return Object.entries(value).flatMap(([key, member]) =>
    key in declared ? undeclaredMembers(declared[key], member, `${at}/${key}`) : [`${at}/${key}`],
  );
}

/** A member to set, by JSON Pointer (without escapes), to a value; `undefined` removes it. */
type Edit = readonly [pointer: string, member: unknown];

/** A copy of `value` with the member at `pointer` set to `member`, or removed when that is undefined. */
function withMember(value: unknown, pointer: string, member: unknown): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const keys = pointer.split("/").slice(1);
  const last = keys.pop()!;
  const parent = keys.reduce((node, key) => node[key] as Record<string, unknown>, copy);
  if (member === undefined) delete parent[last];
  else parent[last] = member;
  return copy;
}

interface CatalogExample {
  readonly [member: string]: unknown;
  readonly "detail-type": string;
  readonly source: string;
  readonly time: string;
  readonly detail: BridgeEvent["detail"];
}

/** Every JSON example of docs/events.md: each an EventBridge target payload (the subscription pattern is `text`). */
function catalogExamples(catalog: string): CatalogExample[] {
  return [...catalog.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as CatalogExample);
}

/**
 * The contract each `schema_version` stands for: sha-256 of the committed docs/events/*.json with their prose (`title`,
 * which names the version, and every `description`) left out. A schema change under the same version fails here: bump
 * SCHEMA_VERSION (docs/events.md, Versioning: a minor only adds) and pin the new version's digest beside the old.
 */
const CONTRACT_DIGESTS: Readonly<Record<string, string>> = {
  "1.1": "97ad1c145f173822c149fa7d25cbfa1d127eef11504e8e734556a374f7b3a60b",
};

/** {@link CONTRACT_DIGESTS}'s digest of rendered schema files (name to text). */
function contractDigest(files: ReadonlyMap<string, string>): string {
  // The keywords only: a member named `title` or `description` (a key of `properties`) is contract.
  const withoutProse = (node: unknown, keysAreMembers = false): unknown => {
    if (Array.isArray(node)) return node.map((item) => withoutProse(item));
    if (typeof node !== "object" || node === null) return node;
    const kept = Object.entries(node).filter(([key]) => keysAreMembers || (key !== "title" && key !== "description"));
    const sorted = kept.sort(([a], [b]) => (a < b ? -1 : 1));
    return Object.fromEntries(sorted.map(([key, value]) => [key, withoutProse(value, !keysAreMembers && (key === "properties" || key === "$defs"))]));
  };
  const contract = [...files].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, text]) => [name, withoutProse(JSON.parse(text))]);
  return createHash("sha256").update(JSON.stringify(contract)).digest("hex");
}

describe("event schemas", () => {
  it("match the committed JSON Schema files in docs/events (regenerate: npx tsx shared/bridge/events/json-schema.ts)", async () => {
    const rendered = renderEventJsonSchemas();
    const committed = (await readdir(path.join(docs, "events"))).filter((f) => f.endsWith(".json")).sort();
    expect(committed).toEqual([...rendered.keys()].sort());
    for (const [name, text] of rendered) expect(await readFile(path.join(docs, "events", name), "utf8"), name).toBe(text);
  });

  it("are written by the generator into a directory it creates, one file per type, each path returned", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "event-schemas-"));
    const dir = path.join(root, "docs", "events");
    const rendered = renderEventJsonSchemas();
    const written = await writeEventJsonSchemas(dir);
    expect(written.sort()).toEqual([...rendered.keys()].map((name) => path.join(dir, name)).sort());
    for (const [name, text] of rendered) expect(await readFile(path.join(dir, name), "utf8"), name).toBe(text);
    await rm(root, { recursive: true });
  });

  it("change only with schema_version: the committed schemas' contract is the one pinned for the current version", () => {
    const digest = contractDigest(renderEventJsonSchemas());
    expect(CONTRACT_DIGESTS, `pin ${SCHEMA_VERSION}'s digest`).toHaveProperty([SCHEMA_VERSION]);
    expect(digest, `the event schemas changed under schema_version ${SCHEMA_VERSION}: bump SCHEMA_VERSION and pin the new digest`).toBe(
      CONTRACT_DIGESTS[SCHEMA_VERSION],
    );
    // Prose is no contract: a description edited alone keeps the digest, a member added changes it.
    const [name, text] = [...renderEventJsonSchemas()][0]!;
    const schema = JSON.parse(text) as { description: string; properties: Record<string, unknown> };
    const reworded = { ...schema, description: `${schema.description}, reworded` };
    const extended = { ...schema, properties: { ...schema.properties, trace_id: { type: "string" } } };
    expect(contractDigest(new Map([...renderEventJsonSchemas(), [name, JSON.stringify(reworded)]]))).toBe(digest);
    expect(contractDigest(new Map([...renderEventJsonSchemas(), [name, JSON.stringify(extended)]]))).not.toBe(digest);
  });

  it("are each documented in docs/events.md: every example an envelope as the bridge writes it, its detail as the engine emits it", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const examples = catalogExamples(catalog);
    const [event] = await oneOfEachType();
    const envelopeKeys = Object.keys(toEventBridgeEnvelope(event!, { account: "123456789012", region: "eu-west-1", id: "x" }));
    const schemas = new Map([...renderEventJsonSchemas()].map(([name, text]) => [name, JSON.parse(text) as JsonSchemaNode]));
    const published = await publishedValidators();
    expect(new Set(examples.map((e) => e.detail.type))).toEqual(new Set(EVENT_TYPES));
    for (const example of examples) {
      const { detail } = example;
      const name = `${detail.type} example ${detail.subject.id} #${detail.subject.sequence}`;
      expect(Object.keys(example), name).toEqual(envelopeKeys);
      expect(example["detail-type"], name).toBe(detail.type);
      expect(example.source, name).toBe(DEFAULT_SOURCE);
      expect(detail.schema_version, name).toBe(SCHEMA_VERSION);
      expect(parseEventDetail(detail).success, name).toBe(true);
      const validate = published.get(detail.type);
      expect(validate, name).toBeDefined();
      expect(validate!(detail), `${name}: ${JSON.stringify(validate!.errors)}`).toBe(true);
      expect(undeclaredMembers(schemas.get(`${detail.type}.json`), detail), name).toEqual([]);
    }
    expect(examples.some((e) => e.detail.data.parent)).toBe(true);
    // The catalog table names exactly the types, and the Versioning section the current version.
    const table = catalog.slice(0, catalog.indexOf("\n## "));
    const tabled = [...table.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]);
    expect([...tabled].sort()).toEqual([...EVENT_TYPES].sort());
    expect(catalog).toContain(`currently \`${SCHEMA_VERSION}\``);
  });

  it("are documented with examples a run could produce: a subject's times rise with its sequence, occurred_at as the engine takes it", async () => {
    const examples = catalogExamples(await readFile(path.join(docs, "events.md"), "utf8"));
    const bySubject = new Map<string, CatalogExample[]>();
    for (const e of examples) bySubject.set(e.detail.subject.id, [...(bySubject.get(e.detail.subject.id) ?? []), e]);
    for (const [subject, events] of bySubject) {
      const ordered = [...events].sort((a, b) => (a.detail.subject.sequence ?? 0) - (b.detail.subject.sequence ?? 0));
      // Each later event of a subject is stamped after the snapshot its predecessor stored (and so after its time).
      for (let i = 1; i < ordered.length; i++) {
        expect(ordered[i]!.detail.subject.sequence, subject).toBe(ordered[i - 1]!.detail.subject.sequence! + 1);
        expect(Date.parse(ordered[i]!.time), `${subject} #${ordered[i]!.detail.subject.sequence}`).toBeGreaterThan(Date.parse(ordered[i - 1]!.time));
      }
    }
    for (const { time, detail } of examples) {
      const { object, changes } = detail.data;
      const stamped =
        detail.subject.type === "transaction" ? lastModified(object) : cardChangedAt(object, changes);
      // Without a timestamp of the object's own, the detection time: the clock reading `time` is taken from too.
      expect(detail.occurred_at, `${detail.type} ${detail.subject.id}`).toBe(new Date(stamped ?? Date.parse(time)).toISOString());
      expect(Date.parse(detail.occurred_at)).toBeLessThanOrEqual(Date.parse(time));
    }
  });

  it("are documented with examples the engine emits from their objects: subject, sequence, changes, parent and times alike", async () => {
    const examples = catalogExamples(await readFile(path.join(docs, "events.md"), "utf8"));
    // The examples are of a redact tenant: their "[redacted]" values come out of the engine as they go in.
    const rig = makeRig({ pii: { mode: "redact" }, emitCardCreated: true });
    const seen = new Set<string>();
    // Each example's object, listed alone when its time comes: the provider's state for that poll.
    for (const { time, detail } of [...examples].sort((a, b) => Date.parse(a.time) - Date.parse(b.time))) {
      rig.clock.ms = Date.parse(time);
      const object = structuredClone(detail.data.object);
      rig.provider.transactions.length = 0;
      rig.provider.cards.length = 0;
      if (detail.subject.type === "card") {
        rig.provider.cards.push(object);
        await pollCards(rig.deps);
      } else {
        const status = seen.has(detail.subject.id) ? "outdated" : "not_synced";
        rig.provider.transactions.push({ ...object, client_sync_status: status } as FakeTransaction);
        await pollTransactions(rig.deps);
      }
      seen.add(detail.subject.id);
    }
    const emitted = rig.publisher.events.map((e) => JSON.parse(JSON.stringify({ time: e.time, detail: e.detail })) as CatalogExample);
    // The ids are illustrative (they hash the snapshot the engine stored, whose time the catalog does not show).
    const comparable = (e: CatalogExample) => ({ time: e.time, detail: { ...e.detail, id: "(id)" } });
    const documented = [...examples].sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
    expect(emitted.map(comparable)).toEqual(documented.map(comparable));
  });

  it("accept what docs/events.md documents and refuse what it rules out, the zod schemas and the published JSON Schemas alike", async () => {
    const examples = catalogExamples(await readFile(path.join(docs, "events.md"), "utf8"));
    const published = await publishedValidators();
    const trim = (total: number, kept: number): Edit => ["/data/object/_truncated", [{ path: "/data/object/segments", total, kept }]];
    const cases: [string, EventType, Edit[], boolean][] = [
      // Versioning: consumers accept any 1.x; a 1.0 event is a 1.1 event without subject.sequence.
      ["a later minor", "transaction.changed", [["/schema_version", "1.10"]], true],
      ["a 1.0 event", "card.suspended", [["/schema_version", "1.0"], ["/subject/sequence", undefined]], true],
      ["another major", "transaction.changed", [["/schema_version", "2.0"]], false],
      ["a version without its minor", "transaction.changed", [["/schema_version", "1."]], false],
      ["a version with a prefix", "transaction.changed", [["/schema_version", "v1.1"]], false],
      // subject.sequence is 1 for a subject's first event, one more for each later one.
      ["sequence 0", "card.updated", [["/subject/sequence", 0]], false],
      ["a fractional sequence", "card.updated", [["/subject/sequence", 1.5]], false],
      ["an empty tenant", "card.created", [["/tenant", ""]], false],
      ["an id that is no UUID", "card.created", [["/id", "card-1-created"]], false],
      ["occurred_at with an offset", "transaction.created", [["/occurred_at", "2025-01-15T13:00:02+04:00"]], true],
      ["occurred_at without a zone", "transaction.created", [["/occurred_at", "2025-01-15T09:00:02"]], false],
      // A change event says what changed: one change at least.
      ["a transaction.changed without changes", "transaction.changed", [["/data/changes", undefined]], false],
      ["a card.updated without changes", "card.updated", [["/data/changes", undefined]], false],
      ["empty changes", "card.status_changed", [["/data/changes", []]], false],
      // A card always carries a string status, of any value the provider sends.
      ["a card without status", "card.suspended", [["/data/object/status", undefined]], false],
      ["a status the spec does not list", "card.status_changed", [["/data/object/status", "Frozen"]], true],
      // A personal field the provider sends null stays null in every PII mode.
      ["a null personal field", "transaction.created", [["/data/object/card_holder_name", null]], true],
      ["a null cardholder", "card.created", [["/data/object/cardholder", null]], true],
      ["a null approver", "transaction.created", [["/data/object/approved_by", null]], true],
      // A number field the provider sends empty is null.
      ["an amount sent empty", "transaction.created", [["/data/object/transaction_amount", null]], true],
      // _truncated: {path, total, kept}, the array's length and how many of its first elements the event carries.
      ["an array trimmed to nothing", "transaction.created", [trim(3, 0)], true],
      ["a trim of an empty array", "transaction.created", [trim(0, 0)], false],
      ["a negative kept", "transaction.created", [trim(3, -1)], false],
    ];
    for (const [name, type, edits, accepted] of cases) {
      const example = examples.find((e) => e.detail.type === type)!.detail;
      const detail = edits.reduce<unknown>((value, [pointer, member]) => withMember(value, pointer, member), example);
      expect({ zod: parseEventDetail(detail).success, json: published.get(type)!(detail) }, name).toEqual({ zod: accepted, json: accepted });
    }
  });

  it("hold to their _truncated when the provider sends a member of that name: the bridge's trim marker, so the provider's is left out", async () => {
    const published = await publishedValidators();
    const rig = makeRig({ emitCardCreated: true });
    // Not the marker's shape, and the marker's shape: either, published, would tell consumers the event is partial.
    const transaction = rig.provider.addTransaction({ _truncated: true });
    const card = rig.provider.addCard({ _truncated: [{ path: "/data/object/segments", total: 2, kept: 1 }] })["id"] as string;
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    rig.provider.changeTransaction(transaction.id, { memo: "lunch", _truncated: "cut" });
    rig.provider.changeCard(card, { status: "Suspended" });
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    const events = rig.publisher.events;
    expect(events.map((e) => e.detailType).sort()).toEqual(["card.created", "card.suspended", "transaction.changed", "transaction.created"]);
    // As a consumer receives them: the detail's JSON text.
    for (const detail of events.map((e) => JSON.parse(detailJson(e.detail)) as BridgeEvent["detail"])) {
      expect(Object.hasOwn(detail.data.object, "_truncated"), detail.type).toBe(false);
      expect(published.get(detail.type)!(detail), detail.type).toBe(true);
      expect(detail.data.changes?.map((c) => c.path) ?? [], detail.type).not.toContain("/_truncated");
    }
  });

  it("let consumers accept any 1.x: no object in docs/events/*.json forbids members a minor version may add", async () => {
    for (const type of EVENT_TYPES) {
      const schema: unknown = JSON.parse(await readFile(path.join(docs, "events", `${type}.json`), "utf8"));
      const closed = objectNodes(schema).filter(({ node }) => node.additionalProperties === false);
      expect(closed.map(({ at }) => at), type).toEqual([]);
    }
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const changed = [...catalog.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((m) => (JSON.parse(m[1]!) as { detail: { type: string; subject: object; data: { changes: object[] } } }).detail)
      .find((d) => d.type === "transaction.changed")!;
    const later = {
      ...changed,
      schema_version: "1.2",
      trace_id: "t-1",
      subject: { ...changed.subject, url: "https://example.com" },
      data: { ...changed.data, reason: "edit", changes: changed.data.changes.map((c) => ({ ...c, by: "u-1" })) },
    };
    expect(parseEventDetail(later).success).toBe(true);
  });

  it("mark as personal data every personal field of the objects they carry (docs/events.md, PII modes)", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const start = catalog.indexOf("## PII modes");
    const section = catalog.slice(start, catalog.indexOf("\n## ", start + 1));
    // The table's rows of the published objects: | spec | object | masked | kept |.
    const masked = (object: string): string[] => {
      const row = section.split("\n").find((line) => line.split("|")[2]?.trim() === object);
      return quotedNames(row?.split("|")[3] ?? "");
    };
    const personal = { transaction: masked("transaction"), card: masked("ERP card") };
    expect(personal.transaction.length).toBeGreaterThan(0);
    expect(personal.card.length).toBeGreaterThan(0);
    /** The node a schema gives `member` of an object node, looking into a nullable one's object branch. */
    const memberOf = (node: JsonSchemaNode | undefined, member: string): (JsonSchemaNode & { description?: string }) | undefined => {
      const branches = (node as { anyOf?: JsonSchemaNode[] } | undefined)?.anyOf ?? (node ? [node] : []);
      return branches.map((branch) => branch.properties?.[member]).find((found) => found !== undefined);
    };
    for (const type of EVENT_TYPES) {
      const schema = JSON.parse(await readFile(path.join(docs, "events", `${type}.json`), "utf8")) as JsonSchemaNode;
      const object = memberOf(memberOf(schema, "data"), "object");
      for (const field of type.startsWith("card.") ? personal.card : personal.transaction) {
        const node = field.split(".").reduce<ReturnType<typeof memberOf>>((at, member) => memberOf(at, member), object);
        expect(node?.description ?? "(not declared)", `${type}: ${field}`).toMatch(/^Personal data/);
      }
    }
  });

  it("are what the engine emits, member for member, outside the provider's object", async () => {
    const events = await oneOfEachType();
    const schemas = new Map([...renderEventJsonSchemas()].map(([name, text]) => [name, JSON.parse(text) as JsonSchemaNode]));
    expect(new Set(events.map((e) => e.detail.type))).toEqual(new Set(EVENT_TYPES));
    const published = await publishedValidators();
    for (const { detail } of events) {
      expect(parseEventDetail(detail).success, detail.type).toBe(true);
      const validate = published.get(detail.type)!;
      expect(validate(detail), `${detail.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(undeclaredMembers(schemas.get(`${detail.type}.json`), detail), detail.type).toEqual([]);
    }
    expect(events.some((e) => e.detail.data.parent)).toBe(true);
  });

  it("take their id from tenant, type, subject, the snapshot diffed against (hash and version) and the content hash after", async () => {
    const rig = makeRig({ tenant: "globex", emitCardCreated: true });
    const txn = rig.provider.addTransaction();
    const cardId = rig.provider.addCard()["id"] as string;
    const stored = (): { txn: Snapshot; card: Snapshot } => ({
      txn: rig.snapshots.data.get(`transaction:${txn.id}`)!,
      card: rig.snapshots.data.get(`card:${cardId}`)!,
    });
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    const first = stored();
    rig.clock.advance(60_000);
    rig.provider.changeTransaction(txn.id, { memo: "lunch" });
    rig.provider.changeCard(cardId, { card_nickname: "Travel" });
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    const second = stored();
    const id = (type: string, subjectId: string, before: Snapshot | undefined, after: Snapshot): string =>
      eventId({ tenant: "globex", type, subjectId, beforeHash: before?.hash ?? "", beforeVersion: before?.updatedAt ?? "", afterHash: after.hash });
    expect(rig.publisher.events.map((e) => [e.detail.type, e.detail.id])).toEqual([
      ["transaction.created", id("transaction.created", txn.id, undefined, first.txn)],
      ["card.created", id("card.created", cardId, undefined, first.card)],
      ["transaction.changed", id("transaction.changed", txn.id, first.txn, second.txn)],
      ["card.updated", id("card.updated", cardId, first.card, second.card)],
    ]);
    expect(rig.publisher.events.map((e) => e.detail.tenant)).toEqual(["globex", "globex", "globex", "globex"]);
  });

  it("keep occurred_at a date-time when the provider's timestamp lies past year 9999 (or is a bare number): detection time", async () => {
    const published = await publishedValidators();
    const rig = makeRig({ emitCardCreated: true });
    // Strings the client takes as timestamps (it does not enforce their format) and Date.parse reads as years 10000+.
    rig.provider.addTransaction({ updated_at: "99999" });
    rig.provider.addTransaction({ updated_at: null, modified_date: "+010000-01-01T00:00:00Z" });
    const card = rig.provider.addCard({ created_at: "12345" });
    await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Terminated", terminated_at: "-000001-01-01T00:00:00Z" });
    await pollCards(rig.deps);
    const details = rig.publisher.events.map((e) => e.detail);
    expect(details.map((d) => d.type)).toEqual(["transaction.created", "transaction.created", "card.created", "card.status_changed"]);
    for (const detail of details) {
      const validate = published.get(detail.type)!;
      expect(validate(detail), `${detail.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(detail.occurred_at, detail.type).toBe(new Date(rig.clock.now()).toISOString());
    }
  });

  it("take a card's placeholder timestamps (year 1, the Unix epoch, 9999) for none: the next one, else detection time", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const placeholder = rig.provider.addCard({ created_at: "0001-01-01T00:00:00Z", issued_at: "1970-01-01T00:00:00Z" });
    const issued = rig.provider.addCard({ created_at: "0001-01-01T00:00:00Z", issued_at: "2025-01-10T08:00:00.000Z" });
    await pollCards(rig.deps);
    rig.provider.changeCard(placeholder["id"] as string, { status: "Terminated", terminated_at: "9999-12-31T23:59:59Z" });
    await pollCards(rig.deps);
    const at = new Map(rig.publisher.events.map((e) => [`${e.detail.type} ${e.detail.subject.id}`, e.detail.occurred_at]));
    const detected = new Date(rig.clock.now()).toISOString();
    expect(at.get(`card.created ${placeholder["id"] as string}`)).toBe(detected);
    expect(at.get(`card.created ${issued["id"] as string}`)).toBe("2025-01-10T08:00:00.000Z");
    expect(at.get(`card.status_changed ${placeholder["id"] as string}`)).toBe(detected);
  });

  it("serialise to their JSON, reusing the object text the engine made to hash it", async () => {
    const stringify = vi.spyOn(JSON, "stringify");
    /** Whether JSON.stringify was called on the object since the last mockClear. */
    const serialised = (object: unknown) => stringify.mock.calls.some(([value]) => value === object);
    const texts: { type: string; text: string; reserialised: boolean; expected: string }[] = [];
    const publisher: EventPublisher = {
      publish: async (events) => {
        for (const { detail } of events) {
          stringify.mockClear();
          const text = detailJson(detail);
          texts.push({ type: detail.type, text, reserialised: serialised(detail.data.object), expected: JSON.stringify(detail) });
        }
        return { failed: [] };
      },
    };
    await oneOfEachType(publisher);
    expect(new Set(texts.map((t) => t.type))).toEqual(new Set(EVENT_TYPES));
    for (const { type, text, reserialised, expected } of texts) {
      expect(JSON.parse(text), type).toEqual(JSON.parse(expected));
      // A transaction's text keeps the provider's key order; a card's is the sorted text it was hashed as.
      if (type.startsWith("transaction.")) expect(text, type).toBe(expected);
      expect(reserialised, type).toBe(false);
    }
    // An object the engine did not hash (a publisher's reduced copy) is serialised.
    const [event] = await oneOfEachType();
    const { detail } = event as BridgeEvent;
    const edited = { ...detail, data: { ...detail.data, object: { ...detail.data.object, memo: "edited" } } };
    expect((JSON.parse(detailJson(edited)) as BridgeEvent["detail"]).data.object["memo"]).toBe("edited");
    expect(detailJsonParts(edited)[1]).toBe(JSON.stringify(edited.data.object));
  });

  it("reject a detail of an unknown type or with a missing member", () => {
    expect(parseEventDetail({ type: "transaction.deleted" }).success).toBe(false);
    expect(parseEventDetail({ type: "card.updated", id: "x" }).success).toBe(false);
  });

  it("reject, without throwing, a detail whose type names a member every object inherits", () => {
    for (const type of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expect(parseEventDetail({ type }).success, type).toBe(false);
    }
  });
});

describe("docs/events.md", () => {
  it("lists among the rare cases a card re-send whose detail read fails: a new id, the same sequence, the configuration as stored", async () => {
    const limits = (amount: number) => ({ enabled: true, amount, frequency: "MONTHLY" });
    const rig = makeRig({}, { cardDetails: true });
    const id = rig.provider.addCard({ purchase_limits: limits(500) })["id"] as string;
    await pollCards(rig.deps);
    rig.provider.changeCard(id, { status: "Suspended", purchase_limits: limits(900) });
    const { putMany } = rig.snapshots;
    rig.deps.snapshots.putMany = () => Promise.reject(new Error("crash after publish"));
    await expect(pollCards(rig.deps)).rejects.toThrow();
    rig.deps.snapshots.putMany = putMany;
    const failing = Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw failing;
    };
    await pollCards(rig.deps);
    rig.provider.beforeCall = () => undefined;
    await pollCards(rig.deps);
    const [sent, resent, later] = rig.publisher.events.map((e) => e.detail);
    expect([sent?.type, resent?.type, later?.type]).toEqual(["card.suspended", "card.suspended", "card.updated"]);
    // The re-send is the same change as far as the walk can tell, in the configuration it last stored; the next read
    // publishes the limit again.
    expect(resent!.id).not.toBe(sent!.id);
    expect(resent!.subject.sequence).toBe(sent!.subject.sequence);
    expect([sent, resent, later].map((d) => (d!.data.object["purchase_limits"] as { amount: number }).amount)).toEqual([900, 500, 900]);
    const rare = await rareCases();
    expect(rare).toMatch(/\*\*Re-send with a new id[^*]*detail read fail/);
  });

  it("lists among the rare cases a change diffed against a snapshot stored hash-only: the marker's change, every member as added", async () => {
    const rig = makeRig();
    // As the DynamoDB store keeps an object too large for an item: its hash, the object replaced by the marker.
    const { putMany } = rig.snapshots;
    rig.deps.snapshots.putMany = (snapshots) => putMany.call(rig.snapshots, snapshots.map((s) => ({ ...s, object: TRUNCATED_SNAPSHOT_OBJECT })));
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(txn.id, { memo: "lunch" });
    await pollTransactions(rig.deps);
    const [changed] = rig.publisher.ofType("transaction.changed");
    const changes = changed!.detail.data.changes!;
    const [marker] = Object.keys(TRUNCATED_SNAPSHOT_OBJECT);
    const markerChange = changes.find((c) => c.path === `/${marker}`);
    expect(markerChange).toEqual({ path: `/${marker}`, before: true, after: null });
    const others = changes.filter((c) => c !== markerChange);
    // Each member of the object as published (a null one is as good as absent), whole, as added: no field-level diff.
    const published = JSON.parse(JSON.stringify(changed!.detail.data.object)) as Record<string, unknown>;
    expect(others.map((c) => c.path).sort()).toEqual(Object.keys(published).filter((k) => published[k] !== null).map((k) => `/${k}`).sort());
    expect(others.every((c) => c.before === null)).toBe(true);
    const rare = await rareCases();
    const bullet = rare.split(" - **").find((b) => b.includes(JSON.stringify(TRUNCATED_SNAPSHOT_OBJECT)));
    expect(bullet, "a rare case naming the marker").toBeDefined();
    expect(bullet).toContain(`\`${JSON.stringify(markerChange)}\``);
    expect(bullet).toContain("`before: null`");
    // What to do: the object is the state; an event this large is trimmed.
    expect(bullet).toMatch(/upsert[^.]*`data\.object`/);
    expect(bullet).toContain("`_truncated`");
  });

  it("says that a PII mode switch makes an identical re-pull diffed against a hash-only snapshot publish that change, conform-pii or not", async () => {
    const rig = makeRig();
    const { putMany } = rig.snapshots;
    // As the DynamoDB store keeps a transaction too large for an item; the conform pass's own record stays whole.
    rig.deps.snapshots.putMany = (snapshots) =>
      putMany.call(rig.snapshots, snapshots.map((s) => (s.key.startsWith("transaction:~") ? s : { ...s, object: TRUNCATED_SNAPSHOT_OBJECT })));
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    const redact = { ...rig.deps, pii: { mode: "redact" as const } };
    // The pass has nothing to rewrite: the marker holds no personal field, and the hash of the old form stays.
    expect(await conformSnapshots(redact)).toMatchObject({ outcome: "complete", rewritten: 0 });
    // Listed again with nothing changed at the provider (an acknowledge lost, say): only the PII form differs.
    txn.client_sync_status = "outdated";
    await pollTransactions(redact);
    const [changed] = rig.publisher.ofType("transaction.changed");
    expect(changed!.detail.data.changes![0]).toEqual({ path: `/${Object.keys(TRUNCATED_SNAPSHOT_OBJECT)[0]}`, before: true, after: null });
    const bullet = (await rareCases()).split(" - **").find((b) => b.includes(JSON.stringify(TRUNCATED_SNAPSHOT_OBJECT)));
    expect(bullet).toMatch(/PII mode or salt switch[^.]*identical re-pull[^.]*publishes/);
    expect(bullet).toContain("`conform-pii`");
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    const switching = catalog.slice(catalog.indexOf("### Changing the mode or the salt"), catalog.indexOf("### Upgrade notes"));
    expect(switching).toMatch(/publishes nothing[^.]*except[^.]*hash-only/);
  });

  it("say which element ids become text: a line item's number id does, a card's custom_segments one is kept as sent", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const txn = rig.provider.addTransaction({ line_items: [{ id: 7, amount: 5 }] });
    const card = rig.provider.addCard({ custom_segments: [{ id: 7, name: "Project" }] });
    // Through the real client, which parses what the provider sends.
    const deps = { ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) };
    await pollTransactions(deps);
    await pollCards(deps);
    rig.provider.changeTransaction(txn.id, { line_items: [{ id: 7, amount: 6 }] });
    rig.provider.changeCard(card["id"] as string, { custom_segments: [{ id: 7, name: "Site" }] });
    await pollTransactions(deps);
    await pollCards(deps);
    const [changed] = rig.publisher.ofType("transaction.changed");
    const [updated] = rig.publisher.ofType("card.updated");
    expect((changed!.detail.data.object["line_items"] as { id: unknown }[])[0]!.id).toBe("7");
    expect((updated!.detail.data.object["custom_segments"] as { id: unknown }[])[0]!.id).toBe(7);
    // Both addressed by id in `changes`, as text in a pointer either way.
    expect(changed!.detail.data.changes!.map((c) => c.path)).toContain("/line_items/7/amount");
    expect(updated!.detail.data.changes!.map((c) => c.path)).toContain("/custom_segments/7/name");
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    const start = catalog.indexOf("- `data.object`:");
    const object = catalog.slice(start, catalog.indexOf(" - `data.changes`", start));
    expect(object).toMatch(/kept as sent[^.]*`custom_segments`[^.]*`7` stays `7`/);
  });

  it("say how to read a changes path across an array: a token is an element's id, escaped, which a JSON Pointer library takes for an index", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction({ line_items: [{ id: "1", amount: 5 }, { id: "0", amount: 6 }, { id: "a/b", amount: 1 }] });
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(txn.id, { line_items: [{ id: "1", amount: 5 }, { id: "0", amount: 7 }, { id: "a/b", amount: 2 }] });
    await pollTransactions(rig.deps);
    const [changed] = rig.publisher.ofType("transaction.changed");
    const { object, changes } = changed!.detail.data;
    const byPath = new Map(changes!.map((c) => [c.path, c]));
    expect([...byPath.keys()]).toEqual(expect.arrayContaining(["/line_items/0/amount", "/line_items/a~1b/amount"]));
    // RFC 6901 evaluation, as a JSON Pointer library does it, reads the token "0" as an index: another element.
    const evaluate = (at: unknown, pointer: string): unknown =>
      pointer
        .split("/")
        .slice(1)
        .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce<unknown>((node, token) => (node as Record<string, unknown> | undefined)?.[token], at);
    expect(evaluate(object, "/line_items/0/amount")).toBe(5);
    expect(byPath.get("/line_items/0/amount")!.after).toBe(7);
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    const start = catalog.indexOf("- `data.changes`:");
    const bullet = catalog.slice(start, catalog.indexOf(" - `data.parent`", start));
    expect(bullet).toMatch(/JSON Pointer (library|libraries|evaluator)/);
    expect(bullet).toContain("`~1`");
    expect(bullet).toMatch(/`id`[^.]*as text/);
  });

  it("names only settings an operator can set: local-mode variables and tenants-file keys, not the pollers' own environment", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    // Environment-variable-like names, `NAME` or `NAME=value`, in code spans.
    const named = [...catalog.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(0);
    const settable = new Set(SETTINGS.map((s) => s.name));
    expect(named.filter((name) => !settable.has(name))).toEqual([]);
    // Each per-tenant setting the catalog names locally, it names for AWS too, by its key in the tenants file.
    const tenantKeys = Object.keys(TENANT_DEFAULTS);
    for (const [local, key] of [["BRIDGE_EVENT_SOURCE", "eventSource"], ["BRIDGE_EMIT_CARD_CREATED", "emitCardCreated"], ["BRIDGE_PII_MODE", "piiMode"]]) {
      expect(tenantKeys, key).toContain(key);
      expect(named, local).toContain(local);
      expect(catalog, key).toContain(`\`${key}\``);
    }
  });

  it("say in Versioning what bumps schema_version: the bridge's additions, to any object the schemas leave open, not the provider's", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const start = catalog.indexOf("## Versioning");
    const bullets = catalog.slice(start, catalog.indexOf("\n## ", start + 1)).split("\n- ");
    const bump = bullets.find((b) => /minor version/i.test(b) && !/^`schema_version`/.test(b));
    expect(bump, "a bullet on what a minor version adds").toBeDefined();
    // Every object of the detail outside the provider's object is open (see above); each is one a minor may extend.
    const schema = JSON.parse(renderEventJsonSchemas().get("transaction.changed.json")!) as JsonSchemaNode;
    const open = objectNodes(schema).filter(({ at }) => !at.startsWith("/properties/data/properties/object"));
    const named = (at: string): string =>
      at === "" ? "detail" : at.endsWith("/items") ? "change" : at.split("/").at(-1)!;
    for (const { at } of open) expect(bump!.replace(/\s+/g, " "), at).toContain(named(at));
    // Provider fields arrive at any time: they are no minor version, and a consumer must not wait for one.
    expect(bump!.replace(/\s+/g, " ")).toMatch(/provider[^.]*(no|not|without)[^.]*(bump|version)|(no|not|without)[^.]*(bump|version)[^.]*provider/i);
  });

  it("sum up the detail's shape, as README.md does too, with exactly the members the published schemas declare", async () => {
    /** The members a `{ a, b?: { c } }` summary names, nested ones as `b/c`, without their `?`. */
    const summed = (text: string): string[] => {
      const members: string[] = [];
      const within: string[] = [];
      for (const [, name, opens, closes] of text.matchAll(/(\w+)\??(:\s*\{)?|(\})/g)) {
        if (closes) within.pop();
        else if (name) {
          members.push([...within, name].join("/"));
          if (opens) within.push(name);
        }
      }
      return members.sort();
    };
    /** Members each schema declares outside the provider's object, nested ones as `b/c` (a change's and `parent`'s have bullets of their own). */
    const declared = (node: JsonSchemaNode, at: string[] = []): string[] =>
      Object.entries(node.properties ?? {}).flatMap(([name, member]) => {
        const inner = [...at, name];
        return [inner.join("/"), ...(inner.join("/") === "data/object" ? [] : declared(member, inner))];
      });
    const nested = new Set(
      [...renderEventJsonSchemas().values()].flatMap((text) => declared(JSON.parse(text) as JsonSchemaNode)).filter((m) => !/^data\/\w+\//.test(m)),
    );
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const detailLine = /`detail`:\s+`(\{ id, type,[^`]*\})`/.exec(catalog);
    expect(detailLine, "docs/events.md, Envelope and detail: the `detail` summary").not.toBeNull();
    expect(summed(detailLine![1]!)).toEqual([...nested].sort());
    const readme = await readFile(path.join(docs, "../README.md"), "utf8");
    const readmeLine = /Every event's `detail` is `(\{[^`]*\})`/.exec(readme);
    expect(readmeLine, "README.md, Events: the `detail` summary").not.toBeNull();
    expect(summed(readmeLine![1]!)).toEqual([...nested].filter((m) => !m.includes("/")).sort());
  });
});

describe("docs/events.md, Delivery is at least once", () => {
  it("tells how long to keep handled ids by the archive's retention, including 0, which keeps events (and so replays) forever", async () => {
    const tenantsSchema = JSON.parse(await readFile(path.join(docs, "tenants.schema.json"), "utf8")) as {
      properties: { tenants: { items: { properties: { archiveRetentionDays: { default: number; description: string } } } } };
    };
    const retention = tenantsSchema.properties.tenants.items.properties.archiveRetentionDays;
    expect(retention.default).toBe(TENANT_DEFAULTS.archiveRetentionDays);
    expect(retention.description).toMatch(/0 keeps them forever/);
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    const bullet = catalog.slice(catalog.indexOf("**Delivery is at least once.**"), catalog.indexOf("**Ordering:"));
    expect(bullet).toContain(`\`archiveRetentionDays\`, ${retention.default} by default`);
    expect(bullet).toMatch(/`0`[^.]*forever/);
  });
});

describe("docs/events.md, PII modes, hash", () => {
  it("says what a consumer of several tenants meets: one person, one pseudonym per tenant, none shared across tenants, none reversible", async () => {
    // Two tenants, each with its own salt (the stack generates one per tenant secret), see the same cardholder.
    const seen = async (tenant: string, salt: string): Promise<unknown[]> => {
      const rig = makeRig({ tenant, pii: { mode: "hash", salt } });
      rig.provider.addTransaction({ card_holder_email: "Ann@Acme.test", employee_id: "E-1" });
      rig.provider.addTransaction({ card_holder_email: "ann@acme.test", employee_id: "E-1" });
      await pollTransactions(rig.deps);
      return rig.publisher.events.map((e) => e.detail.data.object["card_holder_email"]);
    };
    const [acme, globex] = [await seen("acme", "acme-salt-0123456789"), await seen("globex", "globex-salt-0123456789")];
    expect(new Set(acme).size).toBe(1);
    expect(new Set(globex).size).toBe(1);
    expect(acme[0]).not.toBe(globex[0]);
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const row = catalog.split("\n").find((line) => line.startsWith("| `hash` |"))!.replace(/\s+/g, " ");
    expect(row).toMatch(/another tenant[^.]*another pseudonym[^.]*(cannot|not) (be )?join/);
    // HMAC is one-way: the salt does not undo a pseudonym, it lets its holder test guesses (so it stays secret).
    expect(row).not.toContain("cannot be reversed without the salt");
    expect(row).toMatch(/not reversible[^.]*salt[^.]*test (a )?guess/);
  });
});

/** `events` as a rule target receives them: envelopes, in their JSON form. */
function asEnvelopes(events: BridgeEvent[]): Record<string, unknown>[] {
  return events.map((e) => JSON.parse(JSON.stringify(toEventBridgeEnvelope(e, { account: "123456789012", region: "eu-west-1", id: "x" }))) as Record<string, unknown>);
}

describe("docs/events.md, Subscribing", () => {
  it("says which amounts a trimmed event keeps: those outside arrays, not the line items' amounts an oversized event loses", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const example = catalogExamples(catalog).find((e) => e.detail.type === "transaction.created")!.detail;
    const lineItems = Array.from({ length: 2000 }, (_, i) => ({ id: `li-${i}`, amount: i + 1, description: "x".repeat(100) }));
    const detail = { ...example, data: { ...example.data, object: { ...example.data.object, line_items: lineItems } } };
    const reduced = reduceDetail(detail, (d) => ({ Source: "qashio.bridge", DetailType: d.type, Detail: detailJson(d) }))!;
    const object = reduced.data.object as { billing_amount?: unknown; line_items: unknown[] };
    // What the reducer does: the amount a rule filters on stays, line items (and their amounts) are cut.
    expect(object.billing_amount).toBe(example.data.object["billing_amount"]);
    expect(object.line_items.length).toBeLessThan(lineItems.length);
    const rule = catalog.slice(catalog.indexOf("Transactions over an amount"), catalog.indexOf("```text", catalog.indexOf("Transactions over an amount")));
    const trimmed = rule.replace(/\s+/g, " ").split(/(?<=\.) /).find((sentence) => sentence.includes("`_truncated`"))!;
    expect(trimmed).not.toMatch(/keeps every amount:/);
    expect(trimmed).toContain("`line_items`");
  });

  it("suggests a rule pattern that matches the tenant's transaction events alone: not its cards, another tenant's or another source's", async () => {
    const pattern = (await subscriptionPatterns())[0]!;
    const acme = asEnvelopes(await oneOfEachType(undefined, { tenant: "acme", source: "acme.qashio.bridge" }));
    expect(new Set(acme.map((e) => e["detail-type"]))).toEqual(new Set(EVENT_TYPES));
    const matched = acme.filter((e) => matchesPattern(pattern, e)).map((e) => e["detail-type"]);
    expect(new Set(matched)).toEqual(new Set(["transaction.created", "transaction.changed"]));
    expect(matched.length).toBe(acme.filter((e) => String(e["detail-type"]).startsWith("transaction.")).length);
    // Another tenant on the bus (its own source), and one publishing as acme's source but not acme: neither matches.
    const globex = asEnvelopes(await oneOfEachType(undefined, { tenant: "globex", source: "globex.qashio.bridge" }));
    const impostor = asEnvelopes(await oneOfEachType(undefined, { tenant: "globex", source: "acme.qashio.bridge" }));
    const defaultSource = asEnvelopes(await oneOfEachType(undefined, { tenant: "acme" }));
    expect([...globex, ...impostor, ...defaultSource].filter((e) => matchesPattern(pattern, e))).toEqual([]);
  });

  it("suggests a rule per common need that matches just its events: cards suspended, transactions over an amount, approval_status moves", async () => {
    const patterns = await subscriptionPatterns();
    const suggested = (marker: string): Record<string, unknown> => {
      const found = patterns.filter((p) => JSON.stringify(p).includes(marker));
      expect(found, `one rule with ${marker}`).toHaveLength(1);
      return found[0]!;
    };
    const [suspended, overAmount, approval] = [suggested('"card.suspended"'), suggested('"numeric"'), suggested('"/approval_status"')];
    const rig = makeRig({ emitCardCreated: true }, { source: "acme.qashio.bridge" });
    // Through the real client, which makes a numeric string a number (numeric filters take JSON numbers only).
    const deps = { ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) };
    const large = rig.provider.addTransaction({ billing_amount: 12000, approval_status: "pending" });
    const atThreshold = rig.provider.addTransaction({ billing_amount: "10000.00" });
    const small = rig.provider.addTransaction({ billing_amount: 50, approval_status: "pending" });
    rig.provider.addTransaction({ billing_amount: 60, approval_status: "approved" });
    const watched = rig.provider.addCard()["id"] as string;
    // First seen suspended, in another letter case and with a blank: no move the bridge saw, so card.created.
    const alreadySuspended = rig.provider.addCard({ status: "suspended " })["id"] as string;
    const renamed = rig.provider.addCard()["id"] as string;
    await pollTransactions(deps);
    await pollCards(deps);
    rig.provider.changeTransaction(large.id, { memo: "offsite" });
    rig.provider.changeTransaction(small.id, { approval_status: "approved" });
    rig.provider.changeCard(watched, { status: "Suspended" });
    rig.provider.changeCard(renamed, { card_nickname: "Travel" });
    await pollTransactions(deps);
    await pollCards(deps);
    rig.provider.changeCard(watched, { status: "Active" });
    await pollCards(deps);
    const events = asEnvelopes(rig.publisher.events);
    expect(new Set(events.map((e) => e["detail-type"]))).toEqual(new Set(EVENT_TYPES));
    const matched = (pattern: Record<string, unknown>): string[] =>
      events
        .filter((e) => matchesPattern(pattern, e))
        .map((e) => {
          const { type, subject } = e["detail"] as BridgeEvent["detail"];
          return `${type} ${subject.id}`;
        })
        .sort();
    expect(matched(suspended)).toEqual([`card.created ${alreadySuspended}`, `card.suspended ${watched}`].sort());
    expect(matched(overAmount)).toEqual(
      [`transaction.created ${large.id}`, `transaction.changed ${large.id}`, `transaction.created ${atThreshold.id}`].sort(),
    );
    expect(matched(approval)).toEqual([`transaction.changed ${small.id}`]);
    // Another tenant's events, under its own source, match none of them.
    const globex = asEnvelopes(await oneOfEachType(undefined, { tenant: "globex", source: "globex.qashio.bridge" }));
    for (const pattern of [suspended, overAmount, approval]) expect(globex.filter((e) => matchesPattern(pattern, e))).toEqual([]);
  });

  it("suggests rules whose every member the catalog's examples show, in the type the rule filters on", async () => {
    const examples = catalogExamples(await readFile(path.join(docs, "events.md"), "utf8")) as unknown as Record<string, unknown>[];
    /** Each leaf of a pattern: its path of members (through `$or` alternatives) and its list of values or filters. */
    const leaves = (pattern: Record<string, unknown>, at: string[] = []): { at: string[]; rule: unknown[] }[] =>
      Object.entries(pattern).flatMap(([key, rule]) => {
        if (key === "$or") return (rule as Record<string, unknown>[]).flatMap((alternative) => leaves(alternative, at));
        return Array.isArray(rule) ? [{ at: [...at, key], rule }] : leaves(rule as Record<string, unknown>, [...at, key]);
      });
    /** The values at `at` in `event`, through arrays of objects as EventBridge goes. */
    const valuesAt = (node: unknown, at: string[]): unknown[] => {
      if (at.length === 0) return Array.isArray(node) ? node : [node];
      if (Array.isArray(node)) return node.flatMap((element) => valuesAt(element, at));
      if (typeof node !== "object" || node === null || !Object.hasOwn(node, at[0]!)) return [];
      return valuesAt((node as Record<string, unknown>)[at[0]!], at.slice(1));
    };
    for (const pattern of await subscriptionPatterns()) {
      for (const { at, rule } of leaves(pattern)) {
        const shown = examples.flatMap((example) => valuesAt(example, at));
        expect(shown.length, `${at.join(".")}: in no example`).toBeGreaterThan(0);
        // A numeric or text filter needs a value of its type; the source and tenant are the examples' own.
        const wanted = rule.some((r) => typeof r === "object" && r !== null && "numeric" in r) ? "number" : "string";
        expect(shown.some((value) => typeof value === wanted), `${at.join(".")}: no ${wanted} shown`).toBe(true);
      }
    }
  });
});

describe("docs/events.md, catalog table", () => {
  /** The catalog's text before its first section, whitespace collapsed: the table and the paragraphs under it. */
  async function catalogHead(): Promise<string> {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    return catalog.slice(0, catalog.indexOf("\n## ")).replace(/\s+/g, " ");
  }
  /** The `When` cell of the table's row for `type`. */
  const whenOf = (head: string, type: EventType): string => head.split(`| \`${type}\` |`)[1]!.split("|")[0]!;

  it("says what a card first seen comes as: nothing by default, card.created with its status when the tenant enables it, suspended or not", async () => {
    const firstWalk = async (emitCardCreated: boolean): Promise<BridgeEvent[]> => {
      const rig = makeRig({ emitCardCreated });
      rig.provider.addCard();
      rig.provider.addCard({ status: "Suspended" });
      await pollCards(rig.deps);
      return rig.publisher.events;
    };
    expect(await firstWalk(false)).toEqual([]);
    const created = await firstWalk(true);
    expect(created.map((e) => e.detail.type)).toEqual(["card.created", "card.created"]);
    const head = await catalogHead();
    expect(whenOf(head, "card.created")).toMatch(/only when the tenant enables it/);
    // A card first seen suspended is no move: card.suspended's row sends fraud review to card.created for it.
    const suspended = created.find((e) => e.detail.data.object["status"] !== "Active")!;
    const row = whenOf(head, "card.suspended");
    expect(row).toMatch(/first seen already suspended[^|]*recorded silently/);
    expect(row).toContain(`arrives as \`card.created\` with \`status\` \`${suspended.detail.data.object["status"] as string}\``);
  });

  it("says a walk that sees a status move and other changes of a card publishes one status event holding them all", async () => {
    const rig = makeRig();
    const id = rig.provider.addCard()["id"] as string;
    await pollCards(rig.deps);
    const types: string[] = [];
    for (const status of ["Suspended", "Active"]) {
      rig.publisher.events.length = 0;
      rig.provider.changeCard(id, { status, card_nickname: `Card ${status}`, allowed_max_balance: status === "Active" ? 2000 : 500 });
      await pollCards(rig.deps);
      const [event, ...others] = rig.publisher.events;
      expect(others).toEqual([]);
      expect(event!.detail.data.changes!.map((c) => c.path).sort()).toEqual(["/allowed_max_balance", "/card_nickname", "/status"]);
      types.push(event!.detail.type);
    }
    const paragraph = (await catalogHead()).split("A card gets one event per walk")[1]!.split(" JSON Schemas")[0]!;
    const named = paragraph.match(/come as one (.*?) whose `changes` hold them all, not as a `card\.updated` beside it/);
    expect(named, "the paragraph names the status events a combined change comes as").not.toBeNull();
    expect([...named![1]!.matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]).sort()).toEqual([...new Set(types)].sort());
  });

  it("says no event tells that a card or transaction is gone: one the provider stops listing publishes nothing", async () => {
    const rig = makeRig({ emitCardCreated: true });
    rig.provider.addCard();
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    const published = rig.publisher.events.length;
    rig.provider.cards.length = 0;
    // Edited after its pull, then deleted before the next: it is never listed again.
    rig.provider.changeTransaction(txn.id, { memo: "edited" });
    rig.provider.transactions.length = 0;
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    expect(rig.publisher.events.length).toBe(published);
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    expect(catalog).toMatch(/No event says a subject is gone[^.]*stops listing[^.]*publishes nothing\./);
  });
});

describe("docs/events.md, occurred_at", () => {
  /** The `occurred_at` a transaction first pulled with `updated_at` publishes, and the time the bridge detected it. */
  async function occurredAt(updatedAt: string): Promise<{ occurred: string; detected: string }> {
    const rig = makeRig();
    rig.provider.addTransaction({ updated_at: updatedAt });
    await pollTransactions(rig.deps);
    const [event] = rig.publisher.events;
    return { occurred: event!.detail.occurred_at, detected: new Date(rig.clock.now()).toISOString() };
  }

  it("takes none of the timestamps the catalog rules out, the detection time instead, and keeps those it keeps", async () => {
    const catalog = (await readFile(path.join(docs, "events.md"), "utf8")).replace(/\s+/g, " ");
    const start = catalog.indexOf("- `occurred_at`:");
    const bullet = catalog.slice(start, catalog.indexOf(" - `data.object`", start));
    // Each date the bullet gives as an example is one that is none (not ISO 8601, a day its month lacks, a placeholder).
    const ruledOut = [...bullet.matchAll(/`(\d{4}[-/]\d{2}[-/]\d{2}[^`]*)`/g)].map((m) => m[1]!);
    expect(ruledOut.length).toBeGreaterThanOrEqual(3);
    for (const value of [...ruledOut, "1970-01-01T00:00:00Z"]) {
      const { occurred, detected } = await occurredAt(value);
      expect(occurred, value).toBe(detected);
    }
    // The bounds it names: before the year it gives is a placeholder, from it on a time; so is the year after the last kept.
    const first = Number(/before (\d{4}),/.exec(bullet)![1]);
    const last = Number(/up to year (\d{4})/.exec(bullet)![1]);
    expect(bullet).toContain(`in year ${last + 1}`);
    for (const [year, kept] of [[first - 1, false], [first, true], [last, true], [last + 1, false]] as const) {
      const value = `${String(year).padStart(4, "0")}-06-01T12:00:00.000Z`;
      const { occurred, detected } = await occurredAt(value);
      expect(occurred, value).toBe(kept ? value : detected);
    }
    // Read as UTC without an offset; a leap second as the last millisecond before it.
    expect((await occurredAt("2025-03-01T10:00:00")).occurred).toBe("2025-03-01T10:00:00.000Z");
    const [, leap, as] = /a leap second `([\d:]+)` as `([\d:.]+)`/.exec(bullet)!;
    expect((await occurredAt(`2016-12-31T${leap}Z`)).occurred).toBe(`2016-12-31T${as}Z`);
  });
});
