/**
 * The scopes the bridge's cycles need, and what fails without each. §5 rule 10 does not say which operation needs which
 * scope: this follows the mapping the sandbox enforces (docs/spec-gaps.md, Sandbox, OAuth, "Scopes enforced").
 */
import { UsageError } from "./errors.js";
import { printable } from "./terminal-text.js";
import { nearest } from "../nearest.js";
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

/**
 * The provider's scopes: those the spec names (§5 rule 8, "Scope strings seen"). It shows no complete list (rule 10),
 * but the cycles call with none other, and the provider refuses a scope it does not know (invalid_scope) only once the
 * person has signed in.
 */
const PROVIDER_SCOPES: readonly string[] = ["wallet:read", "cards:read", "cards:write", "transactions:read", "transactions:write", "users:read"];

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
  return shortfallOf(scope, named ? `the grant (scope: ${printable(scope)})` : `the scope asked for (${printable(scope)}; the provider's answer named none)`);
}

/** What `scope` lacks of the cycles' scopes, worded with `subject` (the grant, or the scope asked for) first. */
function shortfallOf(scope: string, subject: string): GrantShortfall | undefined {
  // Scope names are case-sensitive and space-separated (RFC 6749 §3.3; spec §2.8); commas are read as separators too, as some
  // servers list them so, and no scope the cycles need holds one: else a working grant would read as granting nothing.
  const held = new Set(scope.split(/[\s,]+/));
  const missing = (Object.keys(CYCLE_SCOPES) as CycleScope[]).filter((s) => !held.has(s));
  if (missing.length === 0) return undefined;
  const fails = missing.map((s) => `without ${s}, ${CYCLE_SCOPES[s]}`).join("; ");
  const message =
    `${subject} lacks ${wordList(missing)}, which the bridge's cycles need: each call needing one is refused 403 and never retried. ` +
    `${fails.charAt(0).toUpperCase()}${fails.slice(1)}. Authorize again with the default scope (${DEFAULT_SCOPES}) or a --scope holding them.`;
  return { missing, nothingReads: READ_SCOPES.every((s) => missing.includes(s)), message };
}

/**
 * Checks `authorize --scope` before the sign-in, as the grant is checked after it: a value that is no scope of the
 * provider's (the provider would refuse it after the browser round trip) or a set with which no cycle can read (the
 * grant would be refused unstored) is a usage error; a set lacking some of the cycles' scopes comes back, for a
 * warning, as a grant of it gets one.
 *
 * @throws UsageError (exit 2) naming each value that is no scope of the provider's, or what the set lacks.
 * @example
 * requestedShortfall("transactions:read transactions:write")?.message; // "--scope (transactions:read transactions:write) lacks cards:read, ..."
 */
export function requestedShortfall(requested: string): GrantShortfall | undefined {
  const unknown = requested.split(/\s+/).filter((value) => value !== "" && !PROVIDER_SCOPES.includes(value));
  if (unknown.length > 0) {
    const named = unknown.map((value) => {
      const meant = value.includes(",") ? undefined : nearest(value, PROVIDER_SCOPES);
      return `"${printable(value)}"${meant === undefined ? "" : ` (did you mean ${meant}?)`}`;
    });
    const commas = unknown.some((value) => value.includes(",")) ? ": separate scopes with spaces, not commas" : "";
    throw new UsageError(
      `--scope: ${wordList(named)} ${unknown.length === 1 ? "is no scope" : "are no scopes"} of the provider's (${wordList(PROVIDER_SCOPES)})${commas}; ` +
        "no sign-in was started",
    );
  }
  const shortfall = shortfallOf(requested, `--scope (${printable(requested)})`);
  if (shortfall?.nothingReads === true) {
    throw new UsageError(`${shortfall.message} No sign-in was started: no cycle of the bridge could read anything with it.`);
  }
  return shortfall;
}
