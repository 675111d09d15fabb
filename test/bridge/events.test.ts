import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, parseEventDetail, renderEventJsonSchemas } from "../../shared/bridge/events/index.js";

const docs = path.resolve(import.meta.dirname, "../../docs");

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
    for (const type of EVENT_TYPES) {
      const example = details.find((d) => d.type === type);
      expect(example, type).toBeDefined();
      expect(parseEventDetail(example).success, type).toBe(true);
    }
  });

  it("reject a detail of an unknown type or with a missing member", () => {
    expect(parseEventDetail({ type: "transaction.deleted" }).success).toBe(false);
    expect(parseEventDetail({ type: "card.updated", id: "x" }).success).toBe(false);
  });
});
