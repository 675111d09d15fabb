/**
 * JSON Schema export of the event detail schemas (docs/events/<type>.json), and the committed text form that the
 * tenants file's schema (infra/tenants-json-schema.ts) shares.
 * Run `npx tsx shared/bridge/events/json-schema.ts [dir]` to rewrite the files; a test fails when they drift.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { isEntry } from "../../entry.js";
import * as z from "zod";
import { EVENT_DETAIL_SCHEMAS, EVENT_TYPES, SCHEMA_VERSION } from "./schemas.js";

/** Base of the `$id` of each generated schema. */
export const SCHEMA_ID_BASE = "https://schemas.qashio-bridge.dev/events/";

/**
 * Renders one JSON Schema document per event type, keyed by file name, as the committed text.
 *
 * @example
 * ```ts
 * const files = renderEventJsonSchemas(); // Map { "transaction.created.json" => "{\n  \"$schema\": …" }
 * ```
 */
export function renderEventJsonSchemas(): Map<string, string> {
  const files = new Map<string, string>();
  for (const type of EVENT_TYPES) {
    const head = { id: `${SCHEMA_ID_BASE}${type}.json`, title: `${type} (detail, schema_version ${SCHEMA_VERSION})` };
    files.set(`${type}.json`, jsonSchemaText(EVENT_DETAIL_SCHEMAS[type], head));
  }
  return files;
}

/**
 * The committed text of a zod schema as a JSON Schema (draft 2020-12) document: `$schema`, then the given `$id`,
 * title and description, then the generated members; two-space indent, a final newline. `io: "input"` describes what
 * may be written (defaults optional), `"output"` what is produced.
 *
 * @example
 * ```ts
 * jsonSchemaText(z.object({ a: z.string() }), { id: "https://example.test/a.json", title: "A" });
 * ```
 */
export function jsonSchemaText(
  schema: z.ZodType,
  head: { readonly id: string; readonly title: string; readonly description?: string },
  io: "input" | "output" = "output",
): string {
  const { $schema, ...generated } = z.toJSONSchema(schema, { target: "draft-2020-12", io }) as Record<string, unknown>;
  const document = {
    $schema,
    $id: head.id,
    title: head.title,
    ...(head.description === undefined ? {} : { description: head.description }),
    ...generated,
  };
  return JSON.stringify(document, null, 2) + "\n";
}

/** Writes the rendered schemas into `dir` (default docs/events). */
export async function writeEventJsonSchemas(dir = "docs/events"): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const [name, text] of renderEventJsonSchemas()) {
    const file = path.join(dir, name);
    await writeFile(file, text);
    written.push(file);
  }
  return written;
}

if (isEntry(process.argv[1], import.meta.url)) {
  for (const file of await writeEventJsonSchemas(process.argv[2])) process.stdout.write(`wrote ${file}\n`);
}
