/**
 * The scopes the bridge's cycles need, and what fails without each. §5 rule 10 does not say which operation needs which
 * scope: this follows the mapping the sandbox enforces (docs/spec-gaps.md, Sandbox, OAuth, "Scopes enforced").
 */
import { UsageError } from "./errors.js";
import { printable } from "./terminal-text.js";
import { didYouMean, nearest } from "../nearest.js";
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
 * The scopes the spec names (§5 rule 8, "Scope strings seen"). It gives no complete list (rule 10), so a value outside
 * it is warned of, not refused: it may be one of the provider's that only a person asking for it knows.
 */
const SPEC_SCOPES: readonly string[] = ["wallet:read", "cards:read", "cards:write", "transactions:read", "transactions:write", "users:read"];

/** The scopes a shortfall's fix asks for. */
const WITH_SCOPES = `the default scope (${DEFAULT_SCOPES}) or a --scope holding them`;

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
  const subject = named ? `the grant (scope: ${printable(scope)})` : `the scope asked for (${printable(scope)}; the provider's answer named none)`;
  const shortfall = shortfallOf(scope, subject);
  return shortfall && { ...shortfall, message: `${shortfall.message} Authorize again with ${WITH_SCOPES}.` };
}

/** What `scope` lacks of the cycles' scopes, worded with `subject` (the grant, or the scope asked for) first; no fix. */
function shortfallOf(scope: string, subject: string): GrantShortfall | undefined {
  // Scope names are case-sensitive and space-separated (RFC 6749 §3.3; spec §2.8); commas are read as separators too, as some
  // servers list them so, and no scope the cycles need holds one: else a working grant would read as granting nothing.
  const held = new Set(scope.split(/[\s,]+/));
  const missing = (Object.keys(CYCLE_SCOPES) as CycleScope[]).filter((s) => !held.has(s));
  if (missing.length === 0) return undefined;
  const fails = missing.map((s) => `without ${s}, ${CYCLE_SCOPES[s]}`).join("; ");
  const message =
    `${subject} lacks ${wordList(missing)}, which the bridge's cycles need: each call needing one is refused 403 and never retried. ` +
    `${fails.charAt(0).toUpperCase()}${fails.slice(1)}.`;
  return { missing, nothingReads: READ_SCOPES.every((s) => missing.includes(s)), message };
}

/** `authorize --scope` judged before the sign-in. */
export interface RequestedScope {
  /** Said before the sign-in: values the spec names no scope of, and what the set lacks of the cycles' scopes. */
  readonly warnings: readonly string[];
  /** The cycles' scopes the set lacks: a grant lacking just these is not warned of again. */
  readonly missing: readonly CycleScope[];
}

/**
 * Checks `authorize --scope` before the sign-in, as the grant is checked after it. A value joining scopes with commas
 * (the provider would refuse it after the browser round trip) or a set with which no cycle can read (the grant would
 * be refused unstored) is a usage error. A value the spec names no scope of (a near one suggested), and a set lacking
 * some of the cycles' scopes, come back as warnings.
 *
 * @throws UsageError (exit 2) naming each comma-joined value, or what the set lacks.
 * @example
 * checkRequestedScope("transactions:read transactions:write").missing; // ["cards:read"]
 */
export function checkRequestedScope(requested: string): RequestedScope {
  // Each value named once in what is said of it, however often it was given.
  const values = [...new Set(requested.split(/\s+/).filter((value) => value !== ""))];
  const quoted = (value: string) => `"${printable(value)}"`;
  const joined = values.filter((value) => value.includes(","));
  if (joined.length > 0) {
    throw new UsageError(`--scope: ${wordList(joined.map(quoted))} ${joined.length === 1 ? "joins" : "join"} scopes with a comma: separate them with spaces; no sign-in was started`);
  }
  const unknown = values.filter((value) => !SPEC_SCOPES.includes(value));
  const one = unknown.length === 1;
  const unnamed = `${wordList(unknown.map((value) => `${quoted(value)}${didYouMean(nearest(value, SPEC_SCOPES))}`))} ${one ? "is no scope" : "are no scopes"} the spec names`;
  const shortfall = shortfallOf(requested, `--scope (${printable(requested)})`);
  if (shortfall?.nothingReads === true) {
    // A typo's near scope first: most often the whole fix.
    const typos = unknown.length === 0 ? "" : `--scope: ${unnamed}. `;
    throw new UsageError(`${typos}${shortfall.message} Authorize with ${WITH_SCOPES}. No sign-in was started: no cycle of the bridge could read anything with it.`);
  }
  const warnings: string[] = [];
  if (unknown.length > 0) {
    warnings.push(
      `--scope: ${unnamed} (${wordList(SPEC_SCOPES)}); the provider may refuse ${one ? "it" : "them"} (invalid_scope) at the sign-in: ` +
        `if ${one ? "it is a typo" : "they are typos"}, stop with Ctrl-C and ask again`,
    );
  }
  if (shortfall !== undefined) warnings.push(`${shortfall.message} To ask for them, stop with Ctrl-C and authorize with ${WITH_SCOPES}.`);
  return { warnings, missing: shortfall?.missing ?? [] };
}
