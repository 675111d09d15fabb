/**
 * Drift-tolerant enums.
 *
 * The provider may add enum values the spec does not list. A single unknown value
 * must not make a whole page unreadable, so a drift enum accepts any string, keeps
 * the raw value and reports a {@link DriftWarning} instead of failing.
 *
 * Design choice: warnings go to a sink bound for the duration of one parse. Zod
 * parses synchronously, so {@link parseWithDrift} / {@link parseEach} bind it in a
 * module variable set and restored around the synchronous parse (no async context
 * per item). {@link withDriftSink} binds it with `AsyncLocalStorage`, so it also
 * reaches async continuations. Schemas stay module-level constants with no mutable
 * state, concurrent parses never see each other's warnings, and parsing outside any
 * sink simply drops warnings (the data is the same either way).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import * as z from "zod";
import { conformsTo, declareListedStrings } from "./conform.js";

/** One unlisted enum value seen while parsing a provider payload. */
export interface DriftWarning {
  /** Schema the field belongs to, e.g. `Transaction`. */
  readonly schema: string;
  /** Field name, dotted for nested objects, e.g. `erp_supplier.status`. */
  readonly field: string;
  /** The raw value the provider sent. */
  readonly value: string;
}

/** A collected warning, deduplicated per parse, with how often it occurred. */
export interface DriftReport extends DriftWarning {
  readonly count: number;
}

/** Receives drift warnings; called synchronously during parsing. */
export type DriftSink = (warning: DriftWarning) => void;

const sinkStorage = new AsyncLocalStorage<DriftSink>();

/** Sink of the synchronous parse running now (innermost wins over `sinkStorage`); undefined between parses. */
let syncSink: DriftSink | undefined;

/** Runs the synchronous `fn` with `sink` bound, restoring the previous binding after (also on throw). */
function withSyncSink<R>(sink: DriftSink, fn: () => R): R {
  const previous = syncSink;
  syncSink = sink;
  try {
    return fn();
  } finally {
    syncSink = previous;
  }
}

/** Where a drift enum lives: schema name and field name. */
export interface DriftLocation {
  readonly schema: string;
  readonly field: string;
}

/** Options of {@link driftEnum}. */
export interface DriftEnumOptions {
  /** Treat case variants (`active`, `ACTIVE`) of a listed value as known. @default false */
  readonly caseInsensitive?: boolean;
}

/** Output type of a drift enum: the listed literals, or any other string (kept raw). */
export type DriftValue<T extends readonly string[]> = T[number] | (string & {});

/**
 * Builds a string schema that accepts any string, keeps it unchanged and reports
 * values missing from `values` to the active drift sink.
 *
 * @example
 * ```ts
 * const Status = driftEnum(["draft", "active"] as const, { schema: "Supplier", field: "status" });
 * parseWithDrift(Status, "archived"); // { success: true, data: "archived", drift: [{ schema: "Supplier", field: "status", value: "archived", count: 1 }] }
 * ```
 */
export function driftEnum<const T extends readonly string[]>(
  values: T,
  where: DriftLocation,
  options: DriftEnumOptions = {},
): z.ZodType<DriftValue<T>, string> {
  const known = new Set<string>(options.caseInsensitive ? values.map((v) => v.toLowerCase()) : values);
  const schema = z.string().check((ctx) => {
    const probe = options.caseInsensitive ? ctx.value.toLowerCase() : ctx.value;
    if (!known.has(probe)) reportDrift({ schema: where.schema, field: where.field, value: ctx.value });
  });
  declareListedStrings(schema, values, options.caseInsensitive ?? false);
  return schema as unknown as z.ZodType<DriftValue<T>, string>;
}

/**
 * Returns a {@link driftEnum} factory bound to one schema name.
 *
 * @example
 * ```ts
 * const drift = driftEnumsFor("Transaction");
 * const Category = drift(TRANSACTION_CATEGORIES, "transaction_category");
 * ```
 */
export function driftEnumsFor(schema: string) {
  return <const T extends readonly string[]>(values: T, field: string, options?: DriftEnumOptions) =>
    driftEnum(values, { schema, field }, options);
}

/** Sends a warning to the sink of the current parse, if any. */
export function reportDrift(warning: DriftWarning): void {
  (syncSink ?? sinkStorage.getStore())?.(warning);
}

/**
 * Runs `fn` with `sink` receiving every drift warning raised inside it (including
 * in async continuations). The innermost sink wins.
 *
 * @example
 * ```ts
 * const data = withDriftSink((w) => logger.warn("enum drift", { ...w }), () => TransactionSchema.parse(raw));
 * ```
 */
export function withDriftSink<R>(sink: DriftSink, fn: () => R): R {
  // Unbind a synchronous sink so the new one is innermost here and in fn's continuations.
  const previous = syncSink;
  syncSink = undefined;
  try {
    return sinkStorage.run(sink, fn);
  } finally {
    syncSink = previous;
  }
}

/** Collects warnings deduplicated by (schema, field, value), with counts; drift is rare, so this stays tiny. */
class DriftCounter {
  private readonly counts = new Map<string, { warning: DriftWarning; count: number }>();
  readonly sink: DriftSink = (warning) => {
    const key = JSON.stringify([warning.schema, warning.field, warning.value]);
    const seen = this.counts.get(key);
    if (seen) seen.count += 1;
    else this.counts.set(key, { warning, count: 1 });
  };

  reports(): DriftReport[] {
    const out: DriftReport[] = [];
    for (const { warning, count } of this.counts.values()) out.push({ ...warning, count });
    return out;
  }
}

/** Result of {@link parseWithDrift}. */
export type DriftParseResult<T> =
  | { readonly success: true; readonly data: T; readonly drift: DriftReport[] }
  | { readonly success: false; readonly error: z.ZodError; readonly drift: DriftReport[] };

/**
 * Safe-parses `input` and returns the drift warnings raised by that parse,
 * deduplicated by (schema, field, value) with a count. `onDrift`, when given, is
 * called once per deduplicated warning after the parse. An input already in output
 * form (see {@link conformsTo}) is returned as it is; zod's output keeps the input's key order too.
 *
 * @example
 * ```ts
 * const result = parseWithDrift(TransactionSchema, raw);
 * if (result.success) for (const w of result.drift) logger.warn("enum drift", { ...w });
 * ```
 */
export function parseWithDrift<S extends z.ZodType>(
  schema: S,
  input: unknown,
  onDrift?: (warning: DriftReport) => void,
): DriftParseResult<z.output<S>> {
  if (conformsTo(schema)(input)) return { success: true, data: input, drift: [] };
  const counter = new DriftCounter();
  const result = withSyncSink(counter.sink, () => schema.safeParse(input));
  const drift = counter.reports();
  if (onDrift) for (const warning of drift) onDrift(warning);
  return result.success
    ? { success: true, data: inKeyOrderOf(result.data, input) as z.output<S>, drift }
    : { success: false, error: result.error, drift };
}

/** Levels {@link inKeyOrderOf} reorders: more than any record the bridge accepts (its MAX_RECORD_DEPTH is 32). */
const KEY_ORDER_DEPTH = 64;

/**
 * `output` (zod's result for `input`) with the members of every object in `input`'s key order, members zod added
 * after them: zod emits its schema's order, so an item normalised by zod (a numeric string, an unlisted enum value)
 * would otherwise serialise, and hash, differently from the same content sent in output form and kept as sent.
 * Own `__proto__` members stay members. Walks {@link KEY_ORDER_DEPTH} levels at most, so a record nested thousands
 * of levels deep (which JSON.parse takes) cannot overflow the stack here; the engine refuses such a record anyway.
 */
function inKeyOrderOf(output: unknown, input: unknown, levels = KEY_ORDER_DEPTH): unknown {
  if (levels === 0) return output;
  if (Array.isArray(output)) return Array.isArray(input) ? output.map((member, i) => inKeyOrderOf(member, input[i], levels - 1)) : output;
  if (!isPlainRecord(output) || !isPlainRecord(input)) return output;
  const entries: [string, unknown][] = [];
  for (const key of Object.keys(input)) if (Object.hasOwn(output, key)) entries.push([key, inKeyOrderOf(output[key], input[key], levels - 1)]);
  for (const key of Object.keys(output)) if (!Object.hasOwn(input, key)) entries.push([key, output[key]]);
  return Object.fromEntries(entries);
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Outcome of {@link parseEach}: valid items, rejected items with their index, and drift. */
export interface ParseEachResult<T> {
  readonly valid: T[];
  readonly invalid: { readonly index: number; readonly raw: unknown; readonly error: z.ZodError }[];
  readonly drift: DriftReport[];
}

/**
 * Parses each item of a page on its own so one bad record (e.g. a transaction
 * without a valid id) can be quarantined while the rest of the page proceeds.
 * Items already in output form (see {@link conformsTo}) are kept as they are; only
 * the others go through zod, whose output keeps the item's key order (so the same
 * content hashes alike whichever way it took).
 *
 * @example
 * ```ts
 * const page = listEnvelope(z.unknown()).parse(json); // data: unknown[]
 * const { valid, invalid, drift } = parseEach(TransactionSchema, page.data);
 * ```
 */
export function parseEach<S extends z.ZodType>(
  schema: S,
  items: readonly unknown[],
  onDrift?: (warning: DriftReport) => void,
): ParseEachResult<z.output<S>> {
  const valid: z.output<S>[] = [];
  const invalid: ParseEachResult<z.output<S>>["invalid"] = [];
  // One sink for the whole page: counts across items are what callers get anyway.
  const counter = new DriftCounter();
  const conforms = conformsTo(schema);
  withSyncSink(counter.sink, () => {
    for (let index = 0; index < items.length; index++) {
      const raw = items[index];
      // Already in output form: zod would return an equal copy and report nothing, so keep the item as it is.
      if (conforms(raw)) {
        valid.push(raw);
        continue;
      }
      const one = schema.safeParse(raw);
      if (one.success) valid.push(inKeyOrderOf(one.data, raw) as z.output<S>);
      else invalid.push({ index, raw, error: one.error });
    }
  });
  const drift = counter.reports();
  if (onDrift) for (const warning of drift) onDrift(warning);
  return { valid, invalid, drift };
}
