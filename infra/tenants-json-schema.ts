/**
 * JSON Schema of the tenants file (docs/tenants.schema.json), rendered from the zod schema synth validates with.
 * Run `npx tsx infra/tenants-json-schema.ts [file]` to rewrite it; a test fails when it drifts.
 */
import { writeFile } from "node:fs/promises";
import { isEntry } from "../shared/entry.js";
import { jsonSchemaText } from "../shared/bridge/events/json-schema.js";
import { tenantsFileDocumentSchema } from "./tenants-document.js";

/** `$id` of the rendered schema. */
export const TENANTS_SCHEMA_ID = "https://schemas.qashio-bridge.dev/tenants.schema.json";

/**
 * The committed text of docs/tenants.schema.json.
 *
 * @example
 * ```ts
 * JSON.parse(renderTenantsJsonSchema()).$id; // "https://schemas.qashio-bridge.dev/tenants.schema.json"
 * ```
 */
export function renderTenantsJsonSchema(): string {
  const head = {
    id: TENANTS_SCHEMA_ID,
    title: "qashio-bridge tenants file",
    description: "Tenants of the CDK app (-c tenantsFile=...). Synth checks more than this schema: see docs/tenants-file.md.",
  };
  // What may be written: members with defaults are optional.
  return jsonSchemaText(tenantsFileDocumentSchema(), head, "input");
}

if (isEntry(process.argv[1], import.meta.url)) {
  const file = process.argv[2] ?? "docs/tenants.schema.json";
  await writeFile(file, renderTenantsJsonSchema());
  process.stdout.write(`wrote ${file}\n`);
}
