/**
 * docs/events.md held to the code where no behaviour test reads it: the sizes, counts and times it gives a consumer,
 * where an oversized event is trimmed, and what it says the provider spec's sections it cites say. The behaviour tests count in the
 * constants; these read the numbers and names the doc states.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CYCLE_LEASE_SLACK_MS } from "../../shared/aws/cycle.js";
import { MAX_ENTRY_BYTES, entrySize, reduceDetail, truncationsOf, type SizedEntry } from "../../shared/aws/event-size.js";
import { walkCursorKey } from "../../shared/bridge/card-cursor.js";
import { SCHEMA_VERSION } from "../../shared/bridge/events/schemas.js";
import type { BridgeEventDetail } from "../../shared/bridge/ports.js";
import { SINGLE_READ_CONCURRENCY } from "../../shared/bridge/provider.js";
import { RECENT_BATCHES } from "../../shared/bridge/recent-ids.js";
import { ERP_CARD_DETAIL_KEYS } from "../../shared/qashio/schemas/erp-card.js";
import { untilLaterSecond } from "../../shared/bridge/versions.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { docText, numbersSaid, textsSaid } from "../doc-text.js";
import { PROVIDER_SPEC, specSection } from "../provider-spec.js";
import { ROOT, seconds } from "../spec-gaps-section.js";

const CATALOG = docText("docs/events.md");
const said = (pattern: RegExp): number[][] => numbersSaid(CATALOG, pattern);
const quoted = (pattern: RegExp): string[] => textsSaid(CATALOG, pattern).map(([first = ""]) => first);

describe("docs/events.md: sizes, counts and times", () => {
  it("gives EventBridge's entry limit as the publisher counts it, wherever it names it", () => {
    const limits = said(/the (\d+) KB (?:EventBridge entry )?limit/);
    expect(limits.length).toBeGreaterThanOrEqual(3);
    // "Less than 256 KB": the publisher takes one byte under it.
    for (const [kb] of limits) expect((kb ?? 0) * 1024 - 1).toBe(MAX_ENTRY_BYTES);
  });

  it("has a run that left events without snapshots wait past the point of the next second it says", () => {
    const [share = 0] = said(/waits until more than (half) a second into the next whole second/)[0] ?? [];
    for (const into of [0, 1, 250, 499, 500, 999]) {
      const now = Date.UTC(2025, 0, 15, 8, 30, 0) + into;
      const at = now + untilLaterSecond(now);
      expect(Math.floor(at / 1000), `from ${into} ms`).toBe(Math.floor(now / 1000) + 1);
      expect(at % 1000, `from ${into} ms`).toBeGreaterThan(share * 1000);
    }
  });

  it("holds a killed run's lease on AWS as long past its deadline as it says", () => {
    const minutes: Readonly<Record<string, number>> = { "a minute": 1, "two minutes": 2 };
    expect(quoted(/its lease holds until (a minute|two minutes) past its deadline/).map((m) => minutes[m])).toEqual([
      seconds(CYCLE_LEASE_SLACK_MS) / 60,
    ]);
  });

  it("reads card details as many at a time as it says, and stops after as many failed first reads", () => {
    expect(said(/reads each listed card's detail, (\w+) at a time/)).toEqual([[SINGLE_READ_CONCURRENCY]]);
    expect(said(/Once the first (\w+) reads of a page \(as many as run at once/)).toEqual([[SINGLE_READ_CONCURRENCY]]);
  });

  it("has a walk remember the cards of as many pages as it says", () => {
    expect(said(/the walk remembers the cards of its last (\w+) pages/)).toEqual([[RECENT_BATCHES]]);
  });

  it("keeps a walk's cursor under the reserved key it names", () => {
    const [key = ""] = quoted(/under the reserved key `([^`]+)`/);
    for (const mode of ["full", "suspended-only"] as const) expect(walkCursorKey(mode)).toBe(key.replace("<mode>", mode));
  });

  it("names the configuration objects only a card's single read carries, as many as the card schema has", () => {
    const [listed = ""] = quoted(/merchant settings \(((?:`\w+`,? ?)+)\) are only in a card's single read/);
    const names = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect([...names].sort()).toEqual([...ERP_CARD_DETAIL_KEYS].sort());
    expect(said(/is recorded with the (\w+) configuration objects as `null`/)).toEqual([[ERP_CARD_DETAIL_KEYS.length]]);
  });

  it("names the current schema_version and the JSON Schema draft of the committed files", () => {
    expect(quoted(/`schema_version` is `major\.minor`, currently `([\d.]+)`/)).toEqual([SCHEMA_VERSION]);
    const [draft = ""] = quoted(/JSON Schemas \(draft ([\d-]+)\) of each `detail`/);
    const files = readdirSync(join(ROOT, "docs/events")).filter((name) => name.endsWith(".json"));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) {
      const schema = JSON.parse(readFileSync(join(ROOT, "docs/events", name), "utf8")) as { $schema?: string };
      expect(schema.$schema, name).toBe(`https://json-schema.org/draft/${draft}/schema`);
    }
  });

  it("gives a webhook's retry defaults, and the retry window a sequence gap outlasts, as the tenants file applies them", () => {
    expect(said(/up to `retryAttempts` times within `maxEventAgeHours` \((\d+) and (\d+) by default\)/)).toEqual([
      [TENANT_DEFAULTS.webhookRetryAttempts, TENANT_DEFAULTS.webhookMaxEventAgeHours],
    ]);
    expect(said(/past the webhook retry window, (\d+) h by default/)).toEqual([[TENANT_DEFAULTS.webhookMaxEventAgeHours]]);
  });
});

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


describe.skipIf(PROVIDER_SPEC === "")("docs/events.md: what it says the provider spec says", () => {
  it("cites only sections the spec has", () => {
    const cited = new Set([...CATALOG.matchAll(/§(\d+\.\d+)/g)].map((m) => m[1] ?? ""));
    expect(cited.size).toBeGreaterThan(5);
    for (const number of cited) specSection(number);
  });

  it("quotes the rules of §2.2 it cites: fee-inclusive amounts (rule 1), the cardholder's name and email as personal (rule 4)", () => {
    const rules = specSection("2.2");
    const [amounts = ""] = quoted(/`(\w+)` and `\w+` include its fees \(spec §2\.2 rule 1\)/);
    const [other = ""] = quoted(/`\w+` and `(\w+)` include its fees \(spec §2\.2 rule 1\)/);
    expect(rules).toContain(`1. In lists, \`${amounts}\` and \`${other}\` include associated fees`);
    quoted(/Spec §2\.2 rule (4) names only the cardholder's name and email as personal data/);
    expect(rules).toMatch(/4\. `card_holder_email` and `card_holder_name` are personal data of the cardholder/);
  });

  it("quotes §2.2's value lists: approval statuses it names, and enums that may grow", () => {
    const transaction = specSection("2.2");
    const [listed = ""] = quoted(/spec §2\.2 lists ((?:`\w+`(?: and |, )?)+) among others/);
    const approval = transaction.split("| `approval_status` |")[1]?.split("|")[0] ?? "";
    for (const [, value] of listed.matchAll(/`(\w+)`/g)) expect(approval).toContain(`\`${value}\``);
    for (const [quote = ""] of textsSaid(CATALOG, /spec §2\.2 "([^"]+)"/)) expect(transaction).toContain(quote);
  });

  it("says cards carry no updated_at and lists their configuration objects as the spec's §2.3 does", () => {
    quoted(/Cards carry no `(updated_at)` \(spec §2\.3\)/);
    const card = specSection("2.3");
    expect(card).not.toContain("`updated_at`");
    const [, singleRead = ""] = card.split("Single ERP card read adds");
    for (const key of ERP_CARD_DETAIL_KEYS) expect(singleRead).toContain(`| \`${key}\` |`);
  });

  it("keeps as sent, in each row of the PII table, fields the spec section the row cites shows", () => {
    const rows = textsSaid(CATALOG, /\| (§\d\.\d) \| [^|]+ \| [^|]+ \| ([^|]+) \|/);
    expect(rows.length).toBe(4);
    for (const [number = "", kept = ""] of rows) {
      const section = specSection(number.slice(1));
      for (const [, field = ""] of kept.matchAll(/`([\w.[\]]+)`/g)) {
        const member = field.split(".").at(-1) ?? "";
        expect(section, `${field} in spec ${number}`).toMatch(new RegExp(`\\b${member}\\b`));
      }
    }
  });

  it("reads the suspended list with a status value the spec's §4.4 filter takes", () => {
    const [value = ""] = quoted(/`suspended-only` reads only `status=(\w+)`/);
    const status = specSection("4.4").split("| `status` | string |")[1]?.split("|")[0] ?? "";
    expect(status).toContain(`\`${value}\``);
  });
});
