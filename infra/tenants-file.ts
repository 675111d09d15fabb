/**
 * The tenants file on disk: read as JSON text (a key given twice refused, which JSON.parse would drop unseen), then
 * validated as a tenants document.
 */
import { readFileSync } from "node:fs";
import { TenantConfigError } from "./errors.js";
import { formatPath } from "./field-path.js";
import { withLineAndColumn } from "./json-position.js";
import type { TenantConfig } from "./tenant-config.js";
import { parseTenantsDocument, TENANTS_FILE_SHAPE } from "./tenants-document.js";

/**
 * Reads and validates the tenants file.
 *
 * @throws TenantConfigError when the file is missing, not JSON, or invalid.
 */
export function loadTenantsFile(path: string): TenantConfig[] {
  let text: string;
  try {
    // A byte-order mark some editors write is not part of the JSON.
    text = readFileSync(path, "utf8").replace(/^\uFEFF/, "");
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? (cause as Error).name;
    throw new TenantConfigError(`tenants file ${path} cannot be read (${code})`, {}, { cause });
  }
  if (text.trim() === "") throw new TenantConfigError(`tenants file ${path} is empty: it must hold ${TENANTS_FILE_SHAPE}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    // The file holds no secrets (secrets are referenced by ARN), so the parser's position note may be shown.
    throw new TenantConfigError(`tenants file ${path} is not valid JSON (YAML is not supported): ${withLineAndColumn((cause as Error).message, text)}`, {}, { cause });
  }
  const repeated = repeatedKeys(text);
  if (repeated.length > 0) {
    const fields = repeated.map((field) => `field ${field} is given more than once`).join("; ");
    throw new TenantConfigError(`tenants file ${path}: ${fields}: keep one${repeated.length > 1 ? " of each" : ""} (JSON keeps only the last)`, { field: repeated[0] });
  }
  return parseTenantsDocument(raw);
}

/**
 * The paths of keys given more than once in one object of `text` (valid JSON), in the order met. JSON.parse keeps the
 * last silently, so a tenants file merged by hand would lose a whole `tenants` list, or a tenant its webhooks, unseen.
 */
function repeatedKeys(text: string): string[] {
  const frames: { path: PropertyKey[]; keys?: Set<string>; key?: string; index: number }[] = [];
  const repeated = new Set<string>();
  let lastString = "";
  const valuePath = (): PropertyKey[] => {
    const top = frames.at(-1);
    if (top === undefined) return [];
    return [...top.path, top.keys === undefined ? top.index : (top.key ?? "")];
  };
  // Only strings and punctuation matter; numbers, true, false and null hold neither quotes nor punctuation.
  for (const [token] of text.matchAll(/"(?:[^"\\]|\\.)*"|[{}[\],:]/g)) {
    const top = frames.at(-1);
    if (token === "{") frames.push({ path: valuePath(), keys: new Set(), index: 0 });
    else if (token === "[") frames.push({ path: valuePath(), index: 0 });
    else if (token === "}" || token === "]") frames.pop();
    else if (token === ",") {
      if (top !== undefined) top.index += 1;
    } else if (token === ":" && top?.keys !== undefined) {
      const key = JSON.parse(lastString) as string;
      if (top.keys.has(key)) repeated.add(formatPath([...top.path, key]));
      top.keys.add(key);
      top.key = key;
    } else lastString = token;
  }
  return [...repeated];
}
