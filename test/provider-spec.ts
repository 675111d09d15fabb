/**
 * The provider's spec, for doc tests that hold docs' quotes of it to it. The spec is not part of the repository: it sits
 * beside the checkout (`../shared/spec/provider-api.md`, as in the project's layout) or where `QASHIO_PROVIDER_SPEC`
 * points; without it `PROVIDER_SPEC` is empty and the tests that read it skip (README.md, Tests).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { ROOT } from "./spec-gaps-section.js";

const SPEC_PATH = process.env.QASHIO_PROVIDER_SPEC ?? join(ROOT, "../shared/spec/provider-api.md");

/** The spec's text, line breaks read as spaces; empty when the spec is not there. */
export const PROVIDER_SPEC = existsSync(SPEC_PATH) ? readFileSync(SPEC_PATH, "utf8").replace(/\s+/g, " ") : "";

/**
 * The spec's text of a section (`7`, `4.2`) up to the next heading, or of one numbered rule of it (`5 rule 11`);
 * fails the test when there is none.
 *
 * @example
 * specSection("5 rule 8"); // "Scope strings seen: `wallet:read`, ..."
 */
export function specSection(where: string): string {
  const [, section = "", rule] = /^([\d.]+)(?: rule (\d+))?$/.exec(where) ?? [];
  const start = PROVIDER_SPEC.search(new RegExp(`#{2,3} ${section.replace(".", "\\.")}\\.? `));
  expect(start, `spec §${where}`).toBeGreaterThanOrEqual(0);
  const end = PROVIDER_SPEC.slice(start + 4).search(/ #{2,3} \d/);
  const text = PROVIDER_SPEC.slice(start, end < 0 ? undefined : start + 4 + end);
  if (rule === undefined) return text;
  const item = new RegExp(` ${rule}\\. (.*?)(?= ${Number(rule) + 1}\\. |$)`).exec(text);
  expect(item, `spec §${where}`).not.toBeNull();
  return item?.[1] ?? "";
}
