/**
 * The scopes the bridge's cycles need, and what fails without each. §5 rule 10 does not say which operation needs which
 * scope: this follows the mapping the sandbox enforces (docs/spec-gaps.md, Sandbox, OAuth, "Scopes enforced").
 */
import { printable } from "./terminal-text.js";
import { wordList } from "../word-list.js";

/** Each scope a cycle calls with, and what a grant without it does to the cycles. */
const CYCLE_SCOPES = {
  "transactions:read": "every transaction cycle fails at its first call (transactions list)",
  "transactions:write": "every transaction cycle publishes its transactions and then fails its acknowledge, so it pulls the same transactions again each time",
  "cards:read": "every card cycle fails at its first call (cards list)",
} as const;

type CycleScope = keyof typeof CYCLE_SCOPES;

/** Scopes requested when `--scope` is not given: what the bridge reads and acknowledges. */
export const DEFAULT_SCOPES = Object.keys(CYCLE_SCOPES).join(" ");

/** Without both, no cycle takes in anything. */
const READ_SCOPES: readonly CycleScope[] = ["transactions:read", "cards:read"];

/** What a grant lacks of the cycles' scopes. */
export interface GrantShortfall {
  readonly missing: readonly CycleScope[];
  /** No cycle can read anything with this grant. */
  readonly nothingReads: boolean;
  /** For a person: the grant, the scopes it lacks, what fails without each, and the fix. */
  readonly message: string;
}

/**
 * Compares a grant with the scopes the cycles need. `granted` is the token endpoint's `scope` (§2.8); an answer without
 * one (or a blank one) is judged by the scope asked for, as RFC 6749 §5.1 has a server omit it when it granted that.
 *
 * @returns undefined when the grant holds every scope the cycles need.
 * @example
 * grantShortfall("transactions:read", DEFAULT_SCOPES)?.missing; // ["transactions:write", "cards:read"]
 */
export function grantShortfall(granted: string | undefined, requested: string): GrantShortfall | undefined {
  const named = granted !== undefined && granted.trim() !== "";
  const scope = named ? granted : requested;
  // Scope names are case-sensitive and space-separated (RFC 6749 §3.3; spec §2.8); commas are read as separators too, as some
  // servers list them so, and no scope the cycles need holds one: else a working grant would read as granting nothing.
  const held = new Set(scope.split(/[\s,]+/));
  const missing = (Object.keys(CYCLE_SCOPES) as CycleScope[]).filter((s) => !held.has(s));
  if (missing.length === 0) return undefined;
  const grant = named ? `the grant (scope: ${printable(scope)})` : `the scope asked for (${printable(scope)}; the provider's answer named none)`;
  const fails = missing.map((s) => `without ${s}, ${CYCLE_SCOPES[s]}`).join("; ");
  const message =
    `${grant} lacks ${wordList(missing)}, which the bridge's cycles need: each call needing one is refused 403 and never retried. ` +
    `${fails.charAt(0).toUpperCase()}${fails.slice(1)}. Authorize again with the default scope (${DEFAULT_SCOPES}) or a --scope holding them.`;
  return { missing, nothingReads: READ_SCOPES.every((s) => missing.includes(s)), message };
}
