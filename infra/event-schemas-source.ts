/**
 * Reads the event catalog's JSON Schemas (docs/events/<type>.json, written by the engine) and turns each
 * into a JSON Schema draft-04 document for the EventBridge schema registry, which accepts only
 * JSONSchemaDraft4 and OpenApi3.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EVENT_TYPES } from "../shared/bridge/events/schemas.js";
import { EventSchemaError } from "./errors.js";
import { withLineAndColumn } from "./json-position.js";

const DRAFT_04 = "http://json-schema.org/draft-04/schema#";

/** The JSON Schema of one event type's `detail`, as read from the catalog. */
export interface EventDetailSchema {
  /** Event type, which is also the EventBridge `detail-type` (e.g. `transaction.created`). */
  readonly type: string;
  /** The schema of `detail`, already draft-04. */
  readonly schema: Record<string, unknown>;
  /** File it was read from. */
  readonly file: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Keywords of later drafts with no draft-04 equivalent: refuse rather than register a looser schema (a draft-04
 * validator ignores a keyword it does not know, so `propertyNames` passed through would accept any key).
 */
const UNSUPPORTED_KEYWORDS = [
  "$dynamicRef",
  "$dynamicAnchor",
  "$anchor",
  "unevaluatedProperties",
  "unevaluatedItems",
  "dependentSchemas",
  "dependentRequired",
  "propertyNames",
  "contains",
  "minContains",
  "maxContains",
  "if",
  "then",
  "else",
];

/** Keywords whose values are data, not schemas: copied as they are. */
const DATA_KEYWORDS = ["enum", "default", "examples", "required", "description", "title", "format", "pattern"];

/** One side of a number's range: draft-04 writes it as one number (`bound`) and a boolean `flag` making it exclusive. */
interface Bound {
  readonly bound: "minimum" | "maximum";
  readonly flag: "exclusiveMinimum" | "exclusiveMaximum";
  readonly lower: boolean;
}
const LOWER: Bound = { bound: "minimum", flag: "exclusiveMinimum", lower: true };
const UPPER: Bound = { bound: "maximum", flag: "exclusiveMaximum", lower: false };
const BOUNDS: ReadonlyMap<string, Bound> = new Map([["minimum", LOWER], ["exclusiveMinimum", LOWER], ["maximum", UPPER], ["exclusiveMaximum", UPPER]]);

/**
 * Sets `side` of `out` to `value` (exclusive or not) unless what it holds already is stricter: a later draft may give
 * both `minimum` and a numeric `exclusiveMinimum`, both in force, which draft-04's one number and flag can only hold
 * as the stricter of the two.
 */
function tighten(out: Record<string, unknown>, side: Bound, exclusive: boolean, value: number): void {
  const known = out[side.bound];
  if (typeof known === "number" && !(side.lower ? value > known : value < known) && !(value === known && exclusive)) return;
  out[side.bound] = value;
  if (exclusive) out[side.flag] = true;
  else delete out[side.flag];
}

/**
 * Rewrites a draft-2020-12 / draft-07 schema (as zod's `toJSONSchema` emits) into draft-04:
 * `$defs` -> `definitions`, `const` -> one-value `enum`, numeric `exclusiveMinimum`/`exclusiveMaximum` ->
 * `minimum`/`maximum` with the boolean form (the stricter bound where both forms are given), `prefixItems` -> tuple
 * `items`. A draft-04 input passes unchanged.
 *
 * @throws EventSchemaError when a keyword has no draft-04 form.
 * @example
 * ```ts
 * toDraft04({ $schema: "https://json-schema.org/draft/2020-12/schema", const: "a" }, "x.json");
 * // { $schema: "http://json-schema.org/draft-04/schema#", enum: ["a"] }
 * ```
 */
export function toDraft04(schema: Record<string, unknown>, file: string): Record<string, unknown> {
  const convert = (node: Json, at: string): Json => {
    if (Array.isArray(node)) return node.map((item, i) => convert(item, `${at}/${i}`));
    if (!isObject(node)) return node;
    const out: Record<string, Json> = {};
    for (const [key, value] of Object.entries(node)) {
      if (UNSUPPORTED_KEYWORDS.includes(key)) {
        throw new EventSchemaError(`${file}: keyword "${key}" at ${at || "/"} has no JSON Schema draft-04 form`, { file });
      }
      if (key === "$schema" || value === undefined) continue;
      if (DATA_KEYWORDS.includes(key)) {
        out[key] = value;
        continue;
      }
      if (key === "$defs" || key === "definitions") {
        out.definitions = Object.fromEntries(
          Object.entries(isObject(value) ? value : {}).map(([name, def]) => [name, convert(def, `${at}/${key}/${name}`)]),
        );
      } else if (key === "$ref" && typeof value === "string") {
        out.$ref = value.replace(/^#\/\$defs\//, "#/definitions/");
      } else if (key === "const") {
        // The value is data, whatever it looks like: a schema-shaped one is matched as it is.
        out.enum = [value];
      } else if (BOUNDS.has(key) && typeof value === "number" && typeof node[BOUNDS.get(key)!.flag] !== "boolean") {
        tighten(out, BOUNDS.get(key)!, key === BOUNDS.get(key)!.flag, value);
      } else if (key === "prefixItems") {
        out.items = convert(value, `${at}/prefixItems`);
        if ("items" in node && node.items === false) out.additionalItems = false;
      } else if (key === "items" && "prefixItems" in node) {
        if (node.items !== false) out.additionalItems = convert(value, `${at}/items`);
      } else if (key === "properties" || key === "patternProperties") {
        // property names are data, not keywords: convert only their schemas
        out[key] = Object.fromEntries(
          Object.entries(isObject(value) ? value : {}).map(([name, sub]) => [name, convert(sub, `${at}/${key}/${name}`)]),
        );
      } else {
        out[key] = convert(value, `${at}/${key}`);
      }
    }
    return out;
  };
  const converted = convert(schema as Json, "") as Record<string, Json>;
  return { $schema: DRAFT_04, ...converted };
}

/**
 * Reads every `<type>.json` of the event catalog directory.
 *
 * @throws EventSchemaError when the directory is missing or empty, holds a `.json` file named for no event type or
 * lacks one of them, or a file cannot be read, is not JSON (naming the line and column) or is not a JSON object.
 */
export function loadEventDetailSchemas(dir: string): EventDetailSchema[] {
  if (!existsSync(dir)) {
    throw new EventSchemaError(
      `event catalog ${dir} is missing: the schema registry entries are built from docs/events/<type>.json (written by the engine's schema export)`,
    );
  }
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort();
  if (files.length === 0) {
    throw new EventSchemaError(`event catalog ${dir} has no <type>.json files: export the event JSON Schemas first`);
  }
  // Every file becomes a registry schema: another JSON file (eventsDir naming the wrong directory) would register a
  // bogus event type, and a missing type would leave it out of the registry, both without a word.
  const types: readonly string[] = EVENT_TYPES;
  const stray = files.find((name) => !types.includes(name.slice(0, -".json".length)));
  if (stray !== undefined) {
    throw new EventSchemaError(`event catalog ${dir}: ${stray} is named for no event type (${types.join(", ")}): is eventsDir the catalog?`, {
      file: join(dir, stray),
    });
  }
  const missing = types.filter((type) => !files.includes(`${type}.json`));
  if (missing.length > 0) {
    throw new EventSchemaError(`event catalog ${dir} lacks ${missing.map((type) => `${type}.json`).join(", ")}: export the event JSON Schemas again`);
  }
  return files.map((name) => {
    const file = join(dir, name);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code ?? (cause as Error).name;
      throw new EventSchemaError(`${file} cannot be read (${code})`, { file }, { cause });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      // synth prints the message alone: without the parser's note, a file broken by a hand edit or a merge is not found
      throw new EventSchemaError(`${file} is not valid JSON: ${withLineAndColumn((cause as Error).message, text)}`, { file }, { cause });
    }
    if (!isObject(parsed)) throw new EventSchemaError(`${file} is not a JSON Schema object`, { file });
    return { type: name.slice(0, -".json".length), schema: toDraft04(parsed, file), file };
  });
}

/**
 * Wraps a `detail` schema in the EventBridge envelope so the registry describes whole events
 * (code bindings and the console's schema view expect the envelope). Definitions move to the root so
 * `#/definitions/...` references keep resolving.
 */
export function eventEnvelopeSchema(detail: EventDetailSchema, source: string): Record<string, unknown> {
  const { $schema: _schema, $id: _id, definitions, title, ...detailSchema } = detail.schema;
  return {
    $schema: DRAFT_04,
    title: `${source}@${detail.type}`,
    description: `EventBridge event of detail-type "${detail.type}" from source "${source}"; detail as in docs/events/${detail.type}.json`,
    type: "object",
    required: ["version", "id", "detail-type", "source", "account", "time", "region", "detail"],
    properties: {
      version: { type: "string" },
      id: { type: "string" },
      "detail-type": { type: "string", enum: [detail.type] },
      source: { type: "string", enum: [source] },
      account: { type: "string" },
      time: { type: "string", format: "date-time" },
      region: { type: "string" },
      resources: { type: "array", items: { type: "string" } },
      detail: title === undefined ? detailSchema : { title, ...detailSchema },
    },
    ...(definitions === undefined ? {} : { definitions }),
  };
}
