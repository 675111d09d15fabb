/**
 * Conformance predicates: a zod schema compiled (once, from its `_zod.def`) into a test that is true only when
 * `safeParse` would succeed, report no drift and return a value deep-equal to the input, so the caller may keep
 * the input and skip the parse. Key order aside: zod puts shape keys first, the input keeps the provider's order.
 *
 * Anything the compiler does not understand (a schema kind, a check, a transform, a default) compiles to
 * "false" and the caller parses with zod: the predicate may be stricter than zod, never more lenient. It reasons
 * about JSON-shaped input (plain objects, arrays, primitives) and allocates nothing when it passes.
 *
 * Objects are tested by generated code, as zod's own object parser is: a loop over shape keys pays a
 * megamorphic keyed load per field (~25 ns, most of the cost), a named load is nearly free. Where code
 * generation is off (`z.config({ jitless: true })` or a runtime that forbids it) objects go to zod.
 */
import * as z from "zod";

/** True when `value` is already what the schema would output. */
export type Conformance<T> = (value: unknown) => value is T;

/** Bits of the value kinds a schema could accept at all; a union skips members that rule the value's kind out. */
const STRING = 1;
const NUMBER = 2;
const BOOLEAN = 4;
const NULL = 8;
const UNDEFINED = 16;
const OBJECT = 32;
const ARRAY = 64;
/** Also NaN and the infinities, which zod's number rejects. */
const OTHER = 128;
const ANY_KIND = 255;

function kindOf(value: unknown): number {
  switch (typeof value) {
    case "string":
      return STRING;
    case "number":
      return Number.isFinite(value) ? NUMBER : OTHER;
    case "boolean":
      return BOOLEAN;
    case "undefined":
      return UNDEFINED;
    case "object":
      return value === null ? NULL : Array.isArray(value) ? ARRAY : OBJECT;
    default:
      return OTHER;
  }
}

type Test = (value: unknown) => boolean;

/**
 * A compiled schema: its test; `kinds`, every kind zod could accept (an over-approximation); `sure`, kinds whose
 * every value passes the test (an under-approximation), so callers may skip the call.
 */
interface Node {
  readonly test: Test;
  readonly kinds: number;
  readonly sure: number;
}

const never: Test = () => false;
/** What an unknown schema compiles to: never identity, and it may accept anything. */
const UNKNOWN: Node = { test: never, kinds: ANY_KIND, sure: 0 };

/** Zod internals read here: a schema or check instance and its definition. */
interface Internals {
  readonly _zod: {
    readonly def: Readonly<Record<string, unknown>> & { readonly type?: string; readonly checks?: readonly Internals[] };
    readonly traits: ReadonlySet<string>;
    readonly optin?: string;
    readonly optout?: string;
    readonly values?: ReadonlySet<unknown>;
    readonly check?: (payload: Probe) => unknown;
  };
}

interface Probe {
  value: unknown;
  issues: unknown[];
}

const compiled = new WeakMap<object, Node>();

/**
 * The conformance predicate of `schema`, compiled on first use and cached per schema instance.
 *
 * @example
 * ```ts
 * const conforms = conformsTo(TransactionSchema);
 * const tx = conforms(raw) ? raw : TransactionSchema.parse(raw);
 * ```
 */
export function conformsTo<S extends z.ZodType>(schema: S): Conformance<z.output<S>> {
  return nodeOf(schema as unknown as Internals).test as Conformance<z.output<S>>;
}

/**
 * Declares that `schema` accepts every string unchanged and is silent (reports no drift) exactly for `values`
 * (any case of them when `caseInsensitive`): how a drift enum tells the compiler what its custom check does.
 *
 * @example
 * ```ts
 * const schema = z.string().check(reportUnlisted);
 * declareListedStrings(schema, ["active", "draft"], false);
 * ```
 */
export function declareListedStrings(schema: z.ZodType, values: readonly string[], caseInsensitive: boolean): void {
  const exact = new Set(values);
  const lower = caseInsensitive ? new Set(values.map((v) => v.toLowerCase())) : undefined;
  // The listed spelling first: case-insensitive enums mostly receive it, and it needs no lower-cased copy.
  const test: Test = lower
    ? (v) => typeof v === "string" && (exact.has(v) || lower.has(v.toLowerCase()))
    : (v) => typeof v === "string" && exact.has(v);
  compiled.set(schema, { test, kinds: STRING, sure: 0 });
}

function nodeOf(schema: Internals): Node {
  const hit = compiled.get(schema);
  if (hit) return hit;
  // A schema met again while it compiles (a recursive shape) is reached through this forward reference.
  compiled.set(schema, { test: (v) => (compiled.get(schema) ?? UNKNOWN).test(v), kinds: ANY_KIND, sure: 0 });
  const built = build(schema);
  compiled.set(schema, built);
  return built;
}

function build(schema: Internals): Node {
  const zod = schema._zod;
  const def = zod.def;
  // A format schema (z.guid(), z.int()) is its own first check.
  const checks = zod.traits.has("$ZodCheck") ? [schema, ...(def.checks ?? [])] : (def.checks ?? []);
  switch (def.type) {
    case "string":
      return def.coerce ? UNKNOWN : leaf(STRING, (v) => typeof v === "string", checks);
    case "number":
      return def.coerce ? UNKNOWN : leaf(NUMBER, (v) => typeof v === "number" && Number.isFinite(v), checks);
    case "boolean":
      return def.coerce ? UNKNOWN : leaf(BOOLEAN, (v) => typeof v === "boolean", checks);
    case "null":
      return leaf(NULL, (v) => v === null, checks);
    case "undefined":
      return leaf(UNDEFINED, (v) => v === undefined, checks);
    case "literal":
    case "enum":
      return zod.values ? valuesNode(zod.values, checks) : UNKNOWN;
    case "unknown":
    case "any":
      return checks.length ? UNKNOWN : { test: () => true, kinds: ANY_KIND, sure: ANY_KIND };
    case "never":
      return { test: never, kinds: 0, sure: 0 };
    case "pipe":
      // Codecs, pipes and transforms rewrite the value; the input side still bounds what they accept.
      return { test: never, kinds: nodeOf(def.in as Internals).kinds, sure: 0 };
    default:
      return checks.length ? checked(container(schema), checks) : container(schema);
  }
}

/** Length checks, the only ones understood on a container (an array's `min`, `max`, `length`, `nonempty`). */
const LENGTH_CHECKS = new Set(["min_length", "max_length", "length_equals"]);

/** A container with checks: only length bounds are understood, run after its own test. */
function checked(node: Node, checks: readonly Internals[]): Node {
  if (node === UNKNOWN || !checks.every((c) => LENGTH_CHECKS.has(c._zod.def.check as string) && isPureCheck(c))) return UNKNOWN;
  return withChecks(node.test, node.kinds, checks);
}

/** A test that also runs `checks` (pure ones) as zod runs them, once `test` passes. */
function withChecks(test: Test, kinds: number, checks: readonly Internals[]): Node {
  const runs = checks.map((c) => c._zod);
  return { test: (v) => test(v) && passes(runs, v), kinds, sure: 0 };
}

/** Wrappers and containers, without checks of their own (see {@link checked}). */
function container(schema: Internals): Node {
  const zod = schema._zod;
  const def = zod.def;
  switch (def.type) {
    case "optional":
      return optionalNode(schema);
    case "nullable": {
      const inner = nodeOf(def.innerType as Internals);
      const test = inner.test;
      return { test: (v) => v === null || test(v), kinds: inner.kinds | NULL, sure: inner.sure | NULL };
    }
    case "union":
      // A discriminated or exclusive union picks its member by other rules; leave those to zod.
      return zod.traits.has("$ZodXor") || zod.traits.has("$ZodDiscriminatedUnion")
        ? UNKNOWN
        : unionNode((def.options as Internals[]).map(nodeOf));
    case "array":
      return arrayNode(nodeOf(def.element as Internals));
    case "object":
      return objectNode(def.shape as Record<string, Internals>, def.catchall as Internals | undefined);
    case "record":
      return recordNode(def.keyType as Internals, nodeOf(def.valueType as Internals));
    default:
      return UNKNOWN;
  }
}

function optionalNode(schema: Internals): Node {
  const innerSchema = schema._zod.def.innerType as Internals;
  // A defaulted inner would substitute its default for `undefined`.
  if (innerSchema._zod.optin === "defaulted") return UNKNOWN;
  const inner = nodeOf(innerSchema);
  // exactOptional allows an absent key (the object sees to that) but not a present `undefined`.
  if (schema._zod.traits.has("$ZodExactOptional")) return inner;
  const test = inner.test;
  return { test: (v) => v === undefined || test(v), kinds: inner.kinds | UNDEFINED, sure: inner.sure | UNDEFINED };
}

/**
 * Zod returns the first member that succeeds. The first member whose kinds cover the value decides: members
 * before it fail on the kind alone, and when it is not identity (or fails) the value goes to zod.
 */
function unionNode(members: readonly Node[]): Node {
  const tests = members.map((m) => m.test);
  const kinds = members.map((m) => m.kinds);
  const n = members.length;
  let all = 0;
  let sure = 0;
  for (const m of members) {
    sure |= m.sure & ~all;
    all |= m.kinds;
  }
  return {
    test: (v) => {
      const kind = kindOf(v);
      if (kind & sure) return true;
      for (let i = 0; i < n; i++) if ((kinds[i] as number) & kind) return (tests[i] as Test)(v);
      return false;
    },
    kinds: all,
    sure,
  };
}

function arrayNode(element: Node): Node {
  const test = element.test;
  return {
    test: (v) => {
      if (!Array.isArray(v)) return false;
      for (let i = 0; i < v.length; i++) if (!test(v[i])) return false;
      return true;
    },
    kinds: ARRAY,
    sure: 0,
  };
}

/** Plain objects only (as JSON.parse makes them): zod copies members into a fresh `{}`, not of any other class. */
function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function objectNode(shape: Record<string, Internals>, catchall: Internals | undefined): Node {
  const keys = Object.keys(shape);
  // Zod skips a `__proto__` shape key, and `key in input` finds inherited keys (`constructor`): leave those to zod.
  if (Object.getOwnPropertySymbols(shape).length > 0 || keys.some((k) => k in Object.prototype)) return UNKNOWN;
  const fields = keys.map((k) => shape[k] as Internals);
  const nodes = fields.map(nodeOf);
  const extraDef = catchall?._zod.def;
  // Strip (no catchall) drops unknown keys and strict rejects them; unknown/any passes them on untouched.
  const passesExtras =
    extraDef !== undefined && (extraDef.type === "unknown" || extraDef.type === "any") && !extraDef.checks?.length;
  const extra = catchall === undefined || extraDef?.type === "never" || passesExtras ? never : nodeOf(catchall).test;
  const lines = keys.map((key, i) => {
    const field = fields[i] as Internals;
    const k = JSON.stringify(key);
    // Zod leaves an absent key absent only for optional-in, optional-out fields.
    const mayBeAbsent = field._zod.optin === "optional" && field._zod.optout === "optional";
    const sure = scalarTest((nodes[i] as Node).sure);
    return `x = v[${k}];
  if (x === undefined) { if (${k} in v ? !t${i}(x) : ${!mayBeAbsent}) return false; }
  else if (${sure ? `!(${sure}) && ` : ""}!t${i}(x)) return false;`;
  });
  // Zod never copies an own `__proto__` member into its output.
  const extras = passesExtras
    ? `return !hasOwn.call(v, "__proto__");`
    : `for (const key in v) if (!keys.has(key) && (key === "__proto__" || !extra(v[key]))) return false;
  return true;`;
  const source = `return function conforms(v) {
  if (!isPlain(v)) return false;
  let x;
  ${lines.join("\n  ")}
  ${extras}
};`;
  const closed: Record<string, unknown> = { isPlain, hasOwn: Object.prototype.hasOwnProperty, keys: new Set(keys), extra };
  nodes.forEach((node, i) => (closed[`t${i}`] = node.test));
  const test = generate(source, closed);
  return test ? { test, kinds: OBJECT, sure: 0 } : UNKNOWN;
}

/** An inline test for `x` of the scalar kinds in `mask`, or "" when none is cheap to write out. */
function scalarTest(mask: number): string {
  const parts: string[] = [];
  if (mask & STRING) parts.push(`typeof x === "string"`);
  if (mask & NUMBER) parts.push(`(typeof x === "number" && x - x === 0)`);
  if (mask & BOOLEAN) parts.push(`typeof x === "boolean"`);
  if (mask & NULL) parts.push(`x === null`);
  return parts.join(" || ");
}

/** Compiles `source` as a function body over `closed`, or undefined where code generation is off. */
function generate(source: string, closed: Record<string, unknown>): Test | undefined {
  if (z.config().jitless) return undefined;
  try {
    const factory = new Function(...Object.keys(closed), source) as (...args: unknown[]) => Test;
    return factory(...Object.values(closed));
  } catch {
    return undefined;
  }
}

function recordNode(keyType: Internals, value: Node): Node {
  const key = keyType._zod;
  // Only `z.string()` keys: every key then maps to itself.
  if (key.def.type !== "string" || key.def.coerce || key.def.checks?.length || key.traits.has("$ZodCheck")) return UNKNOWN;
  const test = value.test;
  return {
    test: (v) => {
      if (!isPlain(v)) return false;
      // zod's isPlainObject: an own function `constructor` other than Object makes it "not plain".
      const ctor: unknown = v.constructor;
      if (typeof ctor === "function" && ctor !== Object) return false;
      for (const k in v) if (k === "__proto__" || !test(v[k])) return false;
      return true;
    },
    kinds: OBJECT,
    sure: 0,
  };
}

function valuesNode(values: ReadonlySet<unknown>, checks: readonly Internals[]): Node {
  if (checks.length) return UNKNOWN;
  let kinds = 0;
  for (const v of values) kinds |= kindOf(v);
  return { test: (v) => values.has(v), kinds, sure: 0 };
}

/** Check kinds that only validate (never rewrite the value or report elsewhere), run with zod's own code. */
const PURE_CHECKS = new Set([
  "string_format",
  "min_length",
  "max_length",
  "length_equals",
  "greater_than",
  "less_than",
  "multiple_of",
  "number_format",
]);

/** String formats whose zod check is a pattern or string-method test (url may rewrite; custom ones call user code). */
const PURE_FORMATS = new Set([
  "regex", "guid", "uuid", "email", "lowercase", "uppercase", "includes", "starts_with", "ends_with",
  "datetime", "date", "time", "duration", "ipv4", "cidrv4", "nanoid", "cuid", "cuid2", "ulid", "xid", "ksuid",
  "emoji", "e164", "safeint", "int32", "uint32", "float32", "float64",
]);

/** A scalar: its type test, then its checks run as zod runs them. Unknown checks make it unknown. */
function leaf(kinds: number, test: Test, checks: readonly Internals[]): Node {
  if (checks.length === 0) return { test, kinds, sure: kinds };
  if (!checks.every(isPureCheck)) return UNKNOWN;
  return withChecks(test, kinds, checks);
}

/** Whether zod's own code for the check only validates (see PURE_CHECKS and PURE_FORMATS). */
function isPureCheck(check: Internals): boolean {
  const def = check._zod.def;
  const kind = def.check as string;
  if (!PURE_CHECKS.has(kind) || check._zod.check === undefined) return false;
  return (kind !== "string_format" && kind !== "number_format") || PURE_FORMATS.has(def.format as string);
}

/** One payload reused by every check run: checks are synchronous and do not nest. */
const probe: Probe = { value: undefined, issues: [] };

function passes(checks: readonly Internals["_zod"][], value: unknown): boolean {
  probe.value = value;
  let ok = true;
  for (let i = 0; ok && i < checks.length; i++) {
    const check = checks[i] as Internals["_zod"];
    const when = check.def.when as ((payload: Probe) => boolean) | undefined;
    if (when !== undefined && !when(probe)) continue;
    (check.check as (payload: Probe) => unknown)(probe);
    ok = probe.issues.length === 0;
  }
  probe.value = undefined;
  probe.issues.length = 0;
  return ok;
}
