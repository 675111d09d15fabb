/**
 * JSON Schema export of the event detail schemas (docs/events/<type>.json).
 * Run `npx tsx shared/bridge/events/json-schema.ts [dir]` to rewrite the files; a test fails when they drift.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
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
    const generated = z.toJSONSchema(EVENT_DETAIL_SCHEMAS[type], { target: "draft-2020-12" }) as Record<string, unknown>;
    const document = {
      $schema: generated["$schema"],
      $id: `${SCHEMA_ID_BASE}${type}.json`,
      title: `${type} (detail, schema_version ${SCHEMA_VERSION})`,
      ...Object.fromEntries(Object.entries(generated).filter(([key]) => key !== "$schema")),
    };
    files.set(`${type}.json`, JSON.stringify(document, null, 2) + "\n");
  }
  return files;
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const file of await writeEventJsonSchemas(process.argv[2])) process.stdout.write(`wrote ${file}\n`);
}
