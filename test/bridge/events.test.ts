import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, parseEventDetail, renderEventJsonSchemas } from "../../shared/bridge/events/index.js";
import { pollCards, pollTransactions } from "../../shared/bridge/index.js";
import { compileJsonSchema } from "../json-schema.js";
import { makeRig } from "./fakes.js";

const docs = path.resolve(import.meta.dirname, "../../docs");

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

describe("event schemas", () => {
  it("match the committed JSON Schema files in docs/events (regenerate: npx tsx shared/bridge/events/json-schema.ts)", async () => {
    const rendered = renderEventJsonSchemas();
    const committed = (await readdir(path.join(docs, "events"))).filter((f) => f.endsWith(".json")).sort();
    expect(committed).toEqual([...rendered.keys()].sort());
    for (const [name, text] of rendered) expect(await readFile(path.join(docs, "events", name), "utf8"), name).toBe(text);
  });

  it("are each documented with an example in docs/events.md that passes its schema", async () => {
    const catalog = await readFile(path.join(docs, "events.md"), "utf8");
    const examples = [...catalog.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as { detail?: unknown });
    const details = examples.map((e) => e.detail).filter(Boolean) as { type: string }[];
    const published = await publishedValidators();
    for (const type of EVENT_TYPES) {
      const example = details.find((d) => d.type === type);
      expect(example, type).toBeDefined();
      expect(parseEventDetail(example).success, type).toBe(true);
      const validate = published.get(type)!;
      expect(validate(example), `${type}: ${JSON.stringify(validate.errors)}`).toBe(true);
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

  it("are what the engine emits, member for member, outside the provider's object", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const purchase = rig.provider.addTransaction();
    rig.provider.addTransaction({ transaction_category: "refund", parent_id: purchase.id, parent_qashio_id: purchase.qashio_id });
    const card = rig.provider.addCard();
    const other = rig.provider.addCard();
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    rig.provider.changeTransaction(purchase.id, { memo: "lunch" });
    rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    rig.provider.changeCard(other["id"] as string, { card_nickname: "Travel" });
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Terminated" });
    await pollCards(rig.deps);
    const schemas = new Map([...renderEventJsonSchemas()].map(([name, text]) => [name, JSON.parse(text) as JsonSchemaNode]));
    expect(new Set(rig.publisher.events.map((e) => e.detail.type))).toEqual(new Set(EVENT_TYPES));
    const published = await publishedValidators();
    for (const { detail } of rig.publisher.events) {
      expect(parseEventDetail(detail).success, detail.type).toBe(true);
      const validate = published.get(detail.type)!;
      expect(validate(detail), `${detail.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(undeclaredMembers(schemas.get(`${detail.type}.json`), detail), detail.type).toEqual([]);
    }
    expect(rig.publisher.events.some((e) => e.detail.data.parent)).toBe(true);
  });

  it("reject a detail of an unknown type or with a missing member", () => {
    expect(parseEventDetail({ type: "transaction.deleted" }).success).toBe(false);
    expect(parseEventDetail({ type: "card.updated", id: "x" }).success).toBe(false);
  });
});
