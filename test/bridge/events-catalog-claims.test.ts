/**
 * docs/events.md held to the code where no behaviour test reads it: where an oversized event is trimmed.
 */
import { describe, expect, it } from "vitest";
import { entrySize, reduceDetail, truncationsOf, type SizedEntry } from "../../shared/aws/event-size.js";
import { SCHEMA_VERSION } from "../../shared/bridge/events/schemas.js";
import type { BridgeEventDetail } from "../../shared/bridge/ports.js";
import { docText, textsSaid } from "../doc-text.js";

const CATALOG = docText("docs/events.md");
const quoted = (pattern: RegExp): string[] => textsSaid(CATALOG, pattern).map(([first = ""]) => first);

/** A transaction detail of `data`, with one element-heavy array placed by the caller. */
const detailWith = (data: Record<string, unknown>): BridgeEventDetail =>
  ({
    id: "0190f3a8-0000-8000-8000-000000000000",
    type: "transaction.changed",
    schema_version: SCHEMA_VERSION,
    tenant: "acme",
    occurred_at: "2025-01-15T08:30:00.000Z",
    subject: { type: "transaction", id: "tx", qashio_id: "CT1", sequence: 2 },
    data: { object: { id: "tx" }, changes: [{ path: "/memo", before: "a", after: "b" }], ...data },
  }) as BridgeEventDetail;

const toEntry = (detail: BridgeEventDetail): SizedEntry => ({ Source: "qashio.bridge", DetailType: detail.type, Detail: JSON.stringify(detail) });
/** Many small elements, so a prefix of them fits where the whole does not. */
const bulky = (): string[] => Array.from({ length: 400 }, (_, i) => `element-${i}-${"x".repeat(40)}`);
/** The limit `detail` is trimmed to in these tests: well under its whole size, well over its size without arrays. */
const LIMIT = 6_000;

describe("docs/events.md, Oversized events and failed publishes: trimming", () => {
  const trimming = CATALOG.slice(CATALOG.indexOf("An event over the 256 KB EventBridge entry limit is first trimmed"));

  it("trims an array at every place of detail.data it names, recording the trim with a path into detail", () => {
    const [places = ""] = quoted(/first trimmed on AWS: arrays inside `detail\.data` \(([^)]*)\), largest first/);
    // Each place the doc names, as a detail holding one bulky array there and the pointer under which the trim lies.
    const PLACES: Readonly<Record<string, () => { detail: BridgeEventDetail; under: string }[]>> = {
      "the object": () => [{ detail: detailWith({ object: { id: "tx", line_items: bulky() } }), under: "/data/object/" }],
      "each change's `before`/`after`": () =>
        (["before", "after"] as const).map((side) => ({
          detail: detailWith({ changes: [{ path: "/tags", before: null, after: null, [side]: bulky() }] }),
          under: `/data/changes/0/${side}`,
        })),
      "`parent`": () => [{ detail: detailWith({ parent: { id: "p", qashio_id: "CT0", tags: bulky() } }), under: "/data/parent/" }],
    };
    // What follows a ";" says where none lies.
    const named = (places.split(";")[0] ?? "").split(/,? and |, /);
    expect(named.length).toBeGreaterThan(0);
    for (const place of named) {
      const cases = PLACES[place];
      expect(cases, `a place this test knows: ${place}`).toBeDefined();
      for (const { detail, under } of cases?.() ?? []) {
        expect(entrySize(toEntry(detail))).toBeGreaterThan(LIMIT);
        const reduced = reduceDetail(detail, toEntry, LIMIT);
        expect(reduced, place).toBeDefined();
        expect(truncationsOf(reduced!).map((t) => t.path).filter((path) => path.startsWith(under)), place).not.toEqual([]);
      }
    }
  });

  it("records each trim as the members it names, keeping a prefix of the array", () => {
    const [members = ""] = quoted(/a list of `\{([\w, ]+)\}`: `path` the JSON Pointer into `detail`/);
    const reduced = reduceDetail(detailWith({ object: { id: "tx", line_items: bulky() } }), toEntry, LIMIT)!;
    const [trim] = truncationsOf(reduced);
    expect(Object.keys(trim ?? {}).sort()).toEqual(members.split(/, */).sort());
    expect(trim).toMatchObject({ path: "/data/object/line_items", total: bulky().length });
    expect((reduced.data.object["line_items"] as unknown[]).length).toBe(trim?.kept);
    expect(trimming).toContain("`kept` how many of its first elements the event carries");
  });
});
