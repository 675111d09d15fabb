import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { EventSchemas } from "../../infra/constructs/event-schemas.js";
import { EventSchemaError } from "../../infra/errors.js";
import { eventEnvelopeSchema, loadEventDetailSchemas, toDraft04 } from "../../infra/event-schemas-source.js";
import { EVENT_TYPES, SCHEMA_VERSION } from "../../shared/bridge/events/index.js";
import { compileJsonSchema } from "../json-schema.js";

const DRAFT_04 = "http://json-schema.org/draft-04/schema#";

describe("toDraft04", () => {
  it("rewrites the 2020-12 keywords zod emits into their draft-04 forms", () => {
    const converted = toDraft04(
      {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: {
          type: { type: "string", const: "card.updated" },
          amount: { type: "number", exclusiveMinimum: 0 },
          pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false },
          card: { $ref: "#/$defs/Card" },
        },
        $defs: { Card: { type: "object", properties: { const: { type: "string" } } } },
      },
      "card.updated.json",
    );
    expect(converted).toEqual({
      $schema: DRAFT_04,
      type: "object",
      properties: {
        type: { type: "string", enum: ["card.updated"] },
        amount: { type: "number", minimum: 0, exclusiveMinimum: true },
        pair: { type: "array", items: [{ type: "string" }, { type: "number" }], additionalItems: false },
        card: { $ref: "#/definitions/Card" },
      },
      definitions: { Card: { type: "object", properties: { const: { type: "string" } } } },
    });
  });

  it("types a tuple's rest (items beside prefixItems) as additionalItems, and converts pattern properties named like keywords", () => {
    expect(toDraft04({ type: "array", prefixItems: [{ type: "string" }], items: { const: 1 } }, "x.json")).toEqual({
      $schema: DRAFT_04,
      type: "array",
      items: [{ type: "string" }],
      additionalItems: { enum: [1] },
    });
    // "if" here is a pattern, not the keyword draft-04 lacks.
    expect(toDraft04({ type: "object", patternProperties: { if: { const: "x" } } }, "x.json")).toEqual({
      $schema: DRAFT_04,
      type: "object",
      patternProperties: { if: { enum: ["x"] } },
    });
  });

  it("leaves data keywords (enum, default, examples) untouched", () => {
    const schema = { enum: [{ const: 1 }], default: { const: 2 }, examples: [{ $defs: 3 }] };
    expect(toDraft04(schema, "x.json")).toEqual({ $schema: DRAFT_04, ...schema });
  });

  it("keeps a const value as data in its one-value enum, a value shaped like a schema too", () => {
    const value = { $schema: "x", $defs: { a: 1 }, exclusiveMinimum: 2, const: 3 };
    expect(toDraft04({ const: value }, "x.json")).toEqual({ $schema: DRAFT_04, enum: [value] });
  });

  it("keeps the stricter of a bound given both inclusive and exclusive, in either order, as draft-04's one bound and flag", () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [{ exclusiveMinimum: 5, minimum: 0 }, { minimum: 5, exclusiveMinimum: true }],
      [{ minimum: 0, exclusiveMinimum: 5 }, { minimum: 5, exclusiveMinimum: true }],
      [{ exclusiveMinimum: 0, minimum: 5 }, { minimum: 5 }],
      [{ minimum: 5, exclusiveMinimum: 5 }, { minimum: 5, exclusiveMinimum: true }],
      [{ exclusiveMaximum: 10, maximum: 20 }, { maximum: 10, exclusiveMaximum: true }],
      [{ maximum: 20, exclusiveMaximum: 10 }, { maximum: 10, exclusiveMaximum: true }],
      [{ exclusiveMaximum: 20, maximum: 10 }, { maximum: 10 }],
    ];
    for (const [schema, draft04] of cases) {
      const converted = toDraft04({ type: "number", ...schema }, "x.json");
      expect(converted, JSON.stringify(schema)).toEqual({ $schema: DRAFT_04, type: "number", ...draft04 });
      // The same numbers pass and fail both forms (draft-04's bounds as its spec reads: no draft-04 validator here).
      const draft04Accepts = (n: number) =>
        (converted.minimum === undefined || (converted.exclusiveMinimum === true ? n > Number(converted.minimum) : n >= Number(converted.minimum))) &&
        (converted.maximum === undefined || (converted.exclusiveMaximum === true ? n < Number(converted.maximum) : n <= Number(converted.maximum)));
      const validate = compileJsonSchema({ type: "number", ...schema });
      for (const n of [-1, 0, 0.5, 5, 6, 10, 15, 20, 21]) expect(draft04Accepts(n), `${JSON.stringify(schema)} at ${n}`).toBe(validate(n));
    }
    // Draft-04's own form, the flag beside its bound in either order, passes unchanged.
    for (const schema of [{ exclusiveMinimum: true, minimum: 5 }, { maximum: 5, exclusiveMaximum: true }]) {
      expect(toDraft04(schema, "x.json")).toEqual({ $schema: DRAFT_04, ...schema });
    }
  });

  it("refuses the keywords later drafts added that draft-04 does not know, which its validators would ignore", () => {
    // A draft-04 validator skips an unknown keyword: z.record(z.string().regex(...)) emits propertyNames, and passed
    // through, the registry would accept any key while docs/events/*.json refuse it.
    for (const keyword of ["propertyNames", "contains", "minContains", "maxContains", "dependentRequired", "$anchor"]) {
      expect(() => toDraft04({ properties: { card: { [keyword]: {} } } }, "x.json"), keyword).toThrow(
        `x.json: keyword "${keyword}" at /properties/card has no JSON Schema draft-04 form`,
      );
    }
  });

  it("refuses a keyword draft-04 cannot express instead of registering a looser schema", () => {
    expect(() => toDraft04({ type: "object", unevaluatedProperties: false }, "x.json")).toThrow(
      'x.json: keyword "unevaluatedProperties" at / has no JSON Schema draft-04 form',
    );
    // the conditional's branches too: dropping "else" alone would register a schema that accepts more
    for (const keyword of ["if", "then", "else", "unevaluatedItems", "dependentSchemas", "$dynamicRef", "$dynamicAnchor"]) {
      expect(() => toDraft04({ properties: { card: { [keyword]: {} } } }, "x.json")).toThrow(`x.json: keyword "${keyword}" at /properties/card has no JSON Schema draft-04 form`);
    }
  });
});

describe("loadEventDetailSchemas", () => {
  it("fails synth with a clear message when the catalog directory is missing or empty", () => {
    const dir = mkdtempSync(join(tmpdir(), "events-"));
    expect(() => loadEventDetailSchemas(join(dir, "absent"))).toThrow(EventSchemaError);
    expect(() => loadEventDetailSchemas(join(dir, "absent"))).toThrow(/is missing: the schema registry entries/);
    expect(() => loadEventDetailSchemas(dir)).toThrow(/has no <type>.json files/);
  });

  /** A catalog directory with one `{ type: "object" }` schema per event type, and `extra` files besides. */
  function catalogDir(extra: Record<string, string> = {}): string {
    const dir = mkdtempSync(join(tmpdir(), "events-"));
    for (const type of EVENT_TYPES) writeFileSync(join(dir, `${type}.json`), JSON.stringify({ type: "object" }));
    for (const [name, text] of Object.entries(extra)) writeFileSync(join(dir, name), text);
    return dir;
  }

  it("reads one schema per <type>.json, named by the file", () => {
    const schemas = loadEventDetailSchemas(catalogDir({ "notes.md": "not a schema" }));
    expect(schemas.map((s) => s.type)).toEqual([...EVENT_TYPES].sort());
    expect(schemas[0]?.schema).toEqual({ $schema: DRAFT_04, type: "object" });
  });

  it("refuses a catalog with a JSON file named for no event type, or lacking one, instead of registering what it holds", () => {
    // eventsDir naming docs/ instead of docs/events would register tenants.schema as an event type.
    const stray = catalogDir({ "tenants.schema.json": "{}" });
    const error = (() => {
      try {
        loadEventDetailSchemas(stray);
      } catch (e) {
        return e as EventSchemaError;
      }
      throw new Error("expected an EventSchemaError");
    })();
    expect(error).toBeInstanceOf(EventSchemaError);
    expect(error.message).toContain("tenants.schema.json is named for no event type");
    expect(error.file).toBe(join(stray, "tenants.schema.json"));
    const partial = mkdtempSync(join(tmpdir(), "events-"));
    writeFileSync(join(partial, "card.suspended.json"), JSON.stringify({ type: "object" }));
    expect(() => loadEventDetailSchemas(partial)).toThrow(/lacks transaction\.created\.json, transaction\.changed\.json, card\.created\.json, card\.updated\.json, card\.status_changed\.json:/);
  });

  it("registers the committed catalog open to members a later 1.x adds, as docs/events.md promises consumers", () => {
    const schemas = loadEventDetailSchemas(join(import.meta.dirname, "../../docs/events"));
    expect(schemas.map((s) => s.type).sort()).toEqual([...EVENT_TYPES].sort());
    for (const detail of schemas) {
      const content = JSON.stringify(eventEnvelopeSchema(detail, "qashio.bridge"));
      expect(content, detail.type).not.toContain('"additionalProperties":false');
      expect(content, detail.type).toContain('"additionalProperties":{}');
    }
  });

  it("names the file that is not JSON, or JSON but no schema object", () => {
    const dir = catalogDir({ "card.updated.json": "{" });
    expect(() => loadEventDetailSchemas(dir)).toThrow(`${join(dir, "card.updated.json")} is not valid JSON`);
    const array = catalogDir({ "card.updated.json": "[]" });
    expect(() => loadEventDetailSchemas(array)).toThrow(`${join(array, "card.updated.json")} is not a JSON Schema object`);
  });

  it("says where a catalog file stops being JSON (a merge conflict left in it), and names a file it cannot read, as synth's one line", () => {
    const conflicted = '{\n  "type": "object",\n<<<<<<< HEAD\n  "title": "a"\n}\n';
    const dir = catalogDir({ "card.updated.json": conflicted });
    expect(() => loadEventDetailSchemas(dir)).toThrow(EventSchemaError);
    expect(() => loadEventDetailSchemas(dir)).toThrow(/card\.updated\.json is not valid JSON: .+ \(line 3, column 1\)$/);
    // a directory where the file should be: Node's EISDIR, not an error synth prints with a stack trace
    const odd = catalogDir();
    rmSync(join(odd, "card.updated.json"));
    mkdirSync(join(odd, "card.updated.json"));
    expect(() => loadEventDetailSchemas(odd)).toThrow(EventSchemaError);
    expect(() => loadEventDetailSchemas(odd)).toThrow(`${join(odd, "card.updated.json")} cannot be read (EISDIR)`);
  });

  it("refuses a catalog lacking a single event type's file", () => {
    const dir = catalogDir();
    rmSync(join(dir, "card.updated.json"));
    expect(() => loadEventDetailSchemas(dir)).toThrow(`event catalog ${dir} lacks card.updated.json: export the event JSON Schemas again`);
  });
});

describe("eventEnvelopeSchema", () => {
  it("wraps the detail in the EventBridge envelope and hoists definitions so references still resolve", () => {
    const envelope = eventEnvelopeSchema(
      {
        type: "card.updated",
        file: "card.updated.json",
        schema: {
          $schema: DRAFT_04,
          $id: "https://schemas.test/card.updated.json",
          title: "card.updated",
          type: "object",
          properties: { card: { $ref: "#/definitions/Card" } },
          definitions: { Card: { type: "object" } },
        },
      },
      "qashio.bridge",
    );
    expect(envelope).toMatchObject({
      $schema: DRAFT_04,
      title: "qashio.bridge@card.updated",
      properties: {
        "detail-type": { enum: ["card.updated"] },
        source: { enum: ["qashio.bridge"] },
        detail: { title: "card.updated", type: "object", properties: { card: { $ref: "#/definitions/Card" } } },
        resources: { type: "array", items: { type: "string" } },
      },
      definitions: { Card: { type: "object" } },
    });
    // every field EventBridge puts on an event (resources may be absent): consumers' bindings rely on them
    expect(envelope["required"]).toEqual(["version", "id", "detail-type", "source", "account", "time", "region", "detail"]);
    expect(JSON.stringify(envelope)).not.toContain("$id");
  });
});

describe("docs/events.md on the schema registry", () => {
  const docs = join(import.meta.dirname, "../../docs");

  /** The registry of a tenant `acme` publishing as `source`, as the stack builds it. */
  function registryOf(source: string): EventSchemas {
    return new EventSchemas(new Stack(new App(), "Acme"), "EventSchemas", {
      tenantId: "acme",
      eventSource: source,
      schemas: loadEventDetailSchemas(join(docs, "events")),
    });
  }

  it("names the registry and its schemas as the stack creates them, and says they are draft-04 of the whole event", () => {
    const catalog = readFileSync(join(docs, "events.md"), "utf8");
    const start = catalog.indexOf("\nSchema registry");
    expect(start, "a paragraph on the schema registry").toBeGreaterThan(0);
    const section = catalog.slice(start, catalog.indexOf("\n\n", start + 1)).replace(/\s+/g, " ");
    const registry = registryOf("acme.qashio.bridge");
    expect(registry.registry.registryName).toBe("qashio-bridge-acme");
    expect([...registry.schemas.values()].map((s) => s.schemaName).sort()).toEqual(EVENT_TYPES.map((t) => `acme.qashio.bridge@${t}`).sort());
    expect(section).toContain("`qashio-bridge-<tenant>`");
    expect(section).toContain("`<source>@<type>`");
    expect(section).toMatch(/`JSONSchemaDraft4`[^.]*whole event/);
    // The registry's own version numbers deploys, not schema_version: a consumer must be told which to read.
    expect(section).toMatch(/registry's own schema version .*? is not `schema_version`/);
    expect(section).toMatch(/`detail` schema's title names/);
    for (const schema of registry.schemas.values()) {
      const detail = (JSON.parse(schema.content) as { properties: { detail: { title?: string } } }).properties.detail;
      expect(detail.title, schema.schemaName).toContain(`schema_version ${SCHEMA_VERSION}`);
    }
  });

  it("registers schemas that every example of the catalog, sent by the tenant's source, validates against", () => {
    const catalog = readFileSync(join(docs, "events.md"), "utf8");
    const examples = [...catalog.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as Record<string, unknown> & { "detail-type": string });
    expect(examples.length).toBeGreaterThan(0);
    const registry = registryOf("acme.qashio.bridge");
    for (const example of examples) {
      const content = JSON.parse(registry.schemas.get(example["detail-type"])!.content) as Record<string, unknown>;
      // Draft-04 content read by a draft-07 validator: alike but for boolean exclusiveMinimum/Maximum, which it has none of.
      expect(JSON.stringify(content), example["detail-type"]).not.toMatch(/"exclusive(Minimum|Maximum)":/);
      const { $schema: _draft, ...schema } = content;
      const validate = compileJsonSchema(schema, { strict: false });
      const event = { ...example, source: "acme.qashio.bridge" };
      expect(validate(event), `${example["detail-type"]}: ${JSON.stringify(validate.errors)}`).toBe(true);
      // And only under the tenant's source: the registry names it.
      expect(validate(example), example["detail-type"]).toBe(false);
    }
  });
});
