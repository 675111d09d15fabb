/**
 * Console printer: one readable line per event and a short summary per cycle.
 * Colour only when the stream is a TTY and NO_COLOR is not set (https://no-color.org),
 * or when FORCE_COLOR asks for it.
 */
import type { BridgeEvent } from "../bridge/ports.js";
import type { Env } from "./config.js";
import { printable } from "./terminal-text.js";

/** The subset of a writable stream the printer needs. */
export interface OutputStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
}

type Paint = (text: string) => string;

export interface Palette {
  readonly dim: Paint;
  readonly bold: Paint;
  readonly green: Paint;
  readonly yellow: Paint;
  readonly red: Paint;
  readonly cyan: Paint;
  readonly magenta: Paint;
  readonly blue: Paint;
}

const sgr = (open: number, close: number): Paint => (text) => `\u001b[${open}m${text}\u001b[${close}m`;
const plain: Paint = (text) => text;

export const COLOURS: Palette = {
  dim: sgr(2, 22),
  bold: sgr(1, 22),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  red: sgr(31, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39),
  blue: sgr(34, 39),
};

export const NO_COLOURS: Palette = {
  dim: plain,
  bold: plain,
  green: plain,
  yellow: plain,
  red: plain,
  cyan: plain,
  magenta: plain,
  blue: plain,
};

/**
 * Decides whether to colour: FORCE_COLOR (non-zero) forces it, NO_COLOR (non-empty) or
 * TERM=dumb disable it, otherwise only a TTY gets colour.
 *
 * @example
 * const palette = shouldColour(process.stdout, process.env) ? COLOURS : NO_COLOURS;
 */
export function shouldColour(stream: OutputStream, env: Env): boolean {
  const force = env.FORCE_COLOR;
  // 0 or false turns colour off, on a terminal too, as Node and the common colour libraries read it.
  if (force === "0" || force === "false") return false;
  if (force !== undefined && force !== "") return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

const TYPE_WIDTH = "card.status_changed".length;

function typeColour(type: string, p: Palette): Paint {
  if (type === "transaction.created") return p.green;
  if (type === "transaction.changed") return p.yellow;
  if (type === "card.suspended") return p.red;
  if (type.startsWith("card.")) return p.magenta;
  return p.cyan;
}

/**
 * Renders a value of a change compactly: strings bare, others as JSON, cut to `max` characters. Control characters are
 * escaped ({@link printable}) before the cut: the value is the provider's.
 */
export function showValue(value: unknown, max = 40): string {
  let text: string;
  if (value === undefined) text = "∅";
  else if (typeof value === "string") text = value;
  else text = JSON.stringify(value) ?? String(value);
  text = printable(text);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A member of a provider object as shown: its text with control characters escaped ({@link printable}). */
function str(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  if (typeof value === "string" && value !== "") return printable(value);
  if (typeof value === "number") return String(value);
  return undefined;
}

/** Minor digits when the currency code is missing or unknown to the currency tables. */
const DEFAULT_MINOR_DIGITS = 2;

/** The currency's own minor digits (KWD 3, JPY 0) from the runtime's currency tables; 2 for a code they do not know or cannot take. */
function minorDigits(currency: unknown): number {
  if (typeof currency !== "string") return DEFAULT_MINOR_DIGITS;
  try {
    return new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? DEFAULT_MINOR_DIGITS;
  } catch {
    // RangeError: not a well-formed currency code (the provider's text).
    return DEFAULT_MINOR_DIGITS;
  }
}

/** Decimals of a number as written in its shortest form (what the provider's JSON said): 1.5 has 1, 1e-7 has 7. */
function decimalsOf(amount: number): number {
  const match = /^-?\d+(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(amount));
  if (match === null) return 0;
  return Math.max(0, (match[1]?.length ?? 0) - Number(match[2] ?? 0));
}

/**
 * An amount with the currency's minor digits, never fewer than the provider sent: zeros are added as text, since
 * `toFixed` past the sent digits would show the binary value's digits (123456789012345.6 → ….594).
 */
function showAmount(amount: number, currency: unknown): string {
  const sent = decimalsOf(amount);
  // toFixed takes at most 100 digits and writes 1e21 and above with an exponent: such a number is shown as JavaScript writes it.
  if (!(Math.abs(amount) < 1e21) || sent > 100) return String(amount);
  // The shortest form where it has no exponent: toFixed writes a whole number past 2^53 with the binary value's digits
  // (12345678901234567000 → …567168). Only a tiny amount (1e-7) needs toFixed for its plain digits.
  const shortest = String(amount);
  const text = shortest.includes("e") ? amount.toFixed(sent) : shortest;
  const missing = minorDigits(currency) - sent;
  if (missing <= 0) return text;
  return `${text}${sent === 0 ? "." : ""}${"0".repeat(missing)}`;
}

function money(object: Record<string, unknown>, amountKey: string, currencyKey: string): string | undefined {
  const amount = object[amountKey];
  const currency = str(object, currencyKey);
  if (typeof amount !== "number" && typeof amount !== "string") return undefined;
  const numeric = typeof amount === "number" ? showAmount(amount, object[currencyKey]) : printable(amount);
  return currency === undefined ? numeric : `${currency} ${numeric}`;
}

/** `MM-DD HH:MM:SS` (UTC) of an ISO time: the day matters, changes can be about old transactions. */
function timeOf(iso: string): string {
  const match = /^\d{4}-(\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]}` : printable(iso);
}

/** Bookkeeping timestamps that move with every change: they say when, not what. */
const BOOKKEEPING_PATHS = new Set(["/updated_at", "/modified_date"]);

/**
 * Formats one event as one line: time, type, subject, what it is, and what changed.
 *
 * @example
 * formatEvent(event, NO_COLOURS);
 * // "03-01 10:15:02  transaction.changed  CT1001  AED 120.00  Careem  approval_status: pending → approved"
 */
export function formatEvent(event: BridgeEvent, p: Palette = NO_COLOURS): string {
  const { detail } = event;
  const object = detail.data.object;
  const parts: string[] = [p.dim(timeOf(detail.occurred_at)), typeColour(detail.type, p)(detail.type.padEnd(TYPE_WIDTH))];
  // Every string of the line but the type and the palette's own colours is the provider's: shown escaped (printable),
  // so a merchant name or an id cannot move the cursor, retitle the window or start a forged line.
  parts.push(p.bold(printable(detail.subject.qashio_id ?? detail.subject.id)));
  if (detail.subject.type === "transaction") {
    const category = str(object, "transaction_category");
    if (category !== undefined && category !== "purchase") parts.push(p.cyan(category));
    const amount = money(object, "billing_amount", "billing_currency") ?? money(object, "transaction_amount", "transaction_currency");
    if (amount !== undefined) parts.push(amount);
    const merchant = str(object, "merchant_name");
    if (merchant !== undefined) parts.push(merchant);
    if (detail.data.parent !== undefined) parts.push(p.dim(`of ${printable(detail.data.parent.qashio_id)}`));
  } else {
    const nickname = str(object, "card_nickname");
    if (nickname !== undefined) parts.push(`"${nickname}"`);
    const status = str(object, "status");
    if (status !== undefined && detail.data.changes === undefined) parts.push(p.dim(status));
  }
  const all = detail.data.changes ?? [];
  // Bookkeeping timestamps are shown only when nothing else changed; they are counted otherwise.
  const substantive = all.filter((c) => !BOOKKEEPING_PATHS.has(c.path));
  const candidates = substantive.length > 0 ? substantive : all;
  if (candidates.length > 0) {
    const shown = candidates.slice(0, 3).map((c) => `${printable(c.path.replace(/^\//, ""))}: ${showValue(c.before, 24)} → ${showValue(c.after, 24)}`);
    const more = all.length - Math.min(3, candidates.length);
    if (more > 0) shown.push(`+${more} more`);
    parts.push(p.blue(shown.join(", ")));
  }
  return parts.join("  ");
}

/**
 * Adds up published counts by type.
 *
 * @example
 * mergeCounts({ a: 1 }, { a: 2, b: 1 }); // { a: 3, b: 1 }
 */
export function mergeCounts(...counts: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const c of counts) for (const [k, n] of Object.entries(c)) total[k] = (total[k] ?? 0) + n;
  return total;
}

/** Counts of one cycle the summary line shows. */
export interface CycleSummary {
  readonly cycle: number;
  /** Events published, by type. */
  readonly published: Readonly<Record<string, number>>;
  readonly acknowledged: number;
  /**
   * Ids the provider refused to acknowledge (they stay listed and are tried again next cycle); shown only when above 0.
   * @default 0
   */
  readonly acknowledgeRefused?: number;
  readonly quarantined: number;
  readonly durationMs: number;
  /** True when the cycle stopped before it finished (budget, page bound, as asked, the event sink) and resumes next time. */
  readonly partial?: boolean;
  /**
   * Transactions listed under each pull status when the cycle first read that list (the engine's `CycleReport.backlog`): shown for a
   * partial cycle only, where what it left behind matters. A status without a count is left out.
   */
  readonly backlog?: Readonly<Record<string, number | undefined>>;
  /** True when it stopped because it was asked to (Ctrl-C, SIGTERM), not at its budget. */
  readonly interrupted?: boolean;
  /** True when it stopped because the event sink took no events for now (outcome `publisher_unavailable`). */
  readonly publisherUnavailable?: boolean;
  /**
   * False when no later run can pick up where a cycle stopped as asked (the demo removes its state), so the line does
   * not promise it. @default true
   */
  readonly resumable?: boolean;
}

/**
 * One line summing up a cycle: events by type, acknowledgements (and refused acknowledges, if any), quarantine, duration;
 * for a cycle that stopped before it finished, why, and what each pull status listed when first read (when known).
 *
 * @example
 * formatCycleSummary({ cycle: 1, published: { "transaction.created": 2, "card.suspended": 1 }, acknowledged: 12, quarantined: 0, durationMs: 84 });
 * // "── cycle 1: 3 events (2 transaction.created, 1 card.suspended) · 12 acknowledged · 0 quarantined · 84 ms"
 * formatCycleSummary({ cycle: 2, published: {}, acknowledged: 0, acknowledgeRefused: 1, quarantined: 0, durationMs: 30 });
 * // "── cycle 2: 0 events · 0 acknowledged · 1 acknowledge refused · 0 quarantined · 30 ms"
 */
export function formatCycleSummary(summary: CycleSummary, p: Palette = NO_COLOURS): string {
  const entries = Object.entries(summary.published).filter(([, n]) => n > 0);
  const types = entries.map(([type, n]) => `${n} ${type}`).join(", ");
  const count = entries.reduce((sum, [, n]) => sum + n, 0);
  const events = `${count} event${count === 1 ? "" : "s"}${types === "" ? "" : ` (${types})`}`;
  const refused = (summary.acknowledgeRefused ?? 0) > 0 ? ` · ${p.yellow(`${summary.acknowledgeRefused} acknowledge refused`)}` : "";
  const quarantined = summary.quarantined > 0 ? p.red(`${summary.quarantined} quarantined`) : "0 quarantined";
  // Once asked to stop, this process runs no next cycle: the next run resumes, if there is one on this state.
  const stop =
    summary.interrupted === true
      ? summary.resumable === false
        ? "stopped as asked"
        : "stopped as asked, the next run resumes"
      : summary.publisherUnavailable === true
        ? "stopped: the event sink takes no events for now, resumes next cycle"
        : "stopped at budget, resumes next cycle";
  const waiting = Object.entries(summary.backlog ?? {}).flatMap(([status, n]) => (n === undefined ? [] : [`${n} ${status}`]));
  const tail = summary.partial === true ? `${waiting.length > 0 ? ` · listed when first read: ${waiting.join(", ")}` : ""} · ${p.yellow(stop)}` : "";
  return (
    p.dim(`── cycle ${summary.cycle}: `) +
    `${events} · ${summary.acknowledged} acknowledged${refused} · ${quarantined} · ${Math.round(summary.durationMs)} ms${tail}`
  );
}
