/**
 * Property-based tests of the structural diff behind `changes` (docs/events.md): over random JSON-like objects and
 * random edits of them, the changes are complete and exact (applied to `before` they give `after`), every path is an
 * RFC 6901 pointer to a real member or element, and the list is empty exactly when nothing changed.
 *
 * "Equivalent" is what the module documents: an absent member equals `null` (and `undefined`, the engine's in-memory
 * absent member, docs/spec-gaps.md "Volatile fields"); arrays whose elements all carry a unique string/number `id` are
 * matched by that id (`String(id)`), so their order alone is no change; arrays without ids change as a whole, so inside
 * one everything compares by position (the diff never looks into such an array).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffObjects, type Change } from "../../shared/bridge/diff.js";

type Json = null | undefined | boolean | number | string | Json[] | { [key: string]: Json };
type JsonRecord = Record<string, Json>;

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `Object.fromEntries` defines own members, so `__proto__` stays a member (as JSON.parse makes it), not the prototype. */
function record(entries: Iterable<readonly [string, Json]>): JsonRecord {
  return Object.fromEntries(entries) as JsonRecord;
}

function member(value: JsonRecord, key: string): Json {
  return Object.hasOwn(value, key) ? value[key] : undefined;
}

function clone(value: Json): Json {
  if (Array.isArray(value)) return value.map(clone);
  if (isRecord(value)) return record(Object.entries(value).map(([k, v]) => [k, clone(v)] as const));
  return value;
}

/** The same value with every object's members in another (reversed) order. */
function reorderKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(reorderKeys);
  if (isRecord(value)) return record(Object.entries(value).reverse().map(([k, v]) => [k, reorderKeys(v)] as const));
  return value;
}

/** `String(id)` of each element when every element is an object with a unique string/number `id`, else undefined. */
function idsOf(array: readonly Json[]): string[] | undefined {
  const ids = array.map((element) => {
    const id = isRecord(element) ? member(element, "id") : undefined;
    return typeof id === "string" || typeof id === "number" ? String(id) : undefined;
  });
  if (ids.some((id) => id === undefined) || new Set(ids).size !== ids.length) return undefined;
  return ids as string[];
}

/** Documented equivalence (see the file comment); `positional` once inside an array without ids. */
function equivalent(a: Json, b: Json, positional = false): boolean {
  if (a === undefined || a === null) return b === undefined || b === null;
  if (b === undefined || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return false;
    const idsA = positional ? undefined : idsOf(a);
    const idsB = positional ? undefined : idsOf(b);
    if (idsA && idsB) {
      if (idsA.length !== idsB.length) return false;
      const byId = new Map(idsB.map((id, i) => [id, b[i]] as const));
      return idsA.every((id, i) => byId.has(id) && equivalent(a[i], byId.get(id), false));
    }
    return a.length === b.length && a.every((element, i) => equivalent(element, b[i], true));
  }
  if (isRecord(a) || isRecord(b)) {
    if (!isRecord(a) || !isRecord(b)) return false;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((key) => equivalent(member(a, key), member(b, key), positional));
  }
  return a === b;
}

/** RFC 6901 §3: a pointer is empty or `/`-prefixed tokens; `~` only as `~0` or `~1`. Returns the unescaped tokens. */
function parsePointer(pointer: string): string[] {
  expect(pointer, `pointer ${JSON.stringify(pointer)}`).toMatch(/^(\/([^~/]|~[01])*)*$/);
  return pointer
    .split("/")
    .slice(1)
    .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** Index of the element of an id-matched array whose `String(id)` is `token`, or -1. */
function indexById(array: readonly Json[], token: string): number {
  const ids = idsOf(array);
  expect(ids, "an array the diff descends into matches by id").toBeDefined();
  return ids!.indexOf(token);
}

/** The container's member or element named by `token`; `undefined` when it has none. */
function step(container: Json, token: string): Json {
  if (Array.isArray(container)) {
    const i = indexById(container, token);
    return i < 0 ? undefined : container[i];
  }
  expect(isRecord(container), "a path descends only through objects and arrays").toBe(true);
  return member(container as JsonRecord, token);
}

function resolve(root: Json, tokens: readonly string[]): Json {
  return tokens.reduce<Json>((node, token) => step(node, token), root);
}

/** Applies `changes` to a copy of `before`: an array token is the element id; `after: null` removes the member. */
function applyChanges(before: JsonRecord, changes: readonly Change[]): Json {
  const doc = clone(before);
  for (const change of changes) {
    const tokens = parsePointer(change.path);
    const last = tokens.at(-1)!;
    const parent = resolve(doc, tokens.slice(0, -1));
    const value = change.after as Json;
    if (Array.isArray(parent)) {
      const i = indexById(parent, last);
      if (value === null) {
        if (i >= 0) parent.splice(i, 1);
      } else if (i >= 0) parent[i] = clone(value);
      else parent.push(clone(value));
    } else {
      expect(isRecord(parent), `parent of ${change.path} is an object`).toBe(true);
      const target = parent as JsonRecord;
      if (value === null) delete target[last];
      else Object.defineProperty(target, last, { value: clone(value), enumerable: true, writable: true, configurable: true });
    }
  }
  return doc;
}

function isPrefix(shorter: readonly string[], longer: readonly string[]): boolean {
  return shorter.length < longer.length && shorter.every((token, i) => token === longer[i]);
}

// ---- arbitraries

const keyArb = fc.oneof(
  fc.constantFrom("a", "b", "id", "memo", "~", "/", "a/b", "~1", "x~0y", "__proto__", "constructor", "toString", "", "0", "1"),
  fc.string({ maxLength: 3 }),
);
const idArb: fc.Arbitrary<string | number> = fc.constantFrom("1", 1, "2", 2, 0, "0", "a", "a/b", "~", "", "__proto__", "constructor", 1.5);
const scalarArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, undefined, true, false, 0, 1, -1, "", "x", "1"),
  fc.integer({ min: -3, max: 3 }),
  fc.string({ maxLength: 2 }),
);

const { value: valueArb, object: objectArb, element: elementArb } = fc.letrec<{ value: Json; object: JsonRecord; element: JsonRecord; array: Json[] }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalarArb, tie("object"), tie("array")),
  object: fc.array(fc.tuple(keyArb, tie("value")), { maxLength: 4 }).map((entries) => record(entries)),
  // An element with an id (usually), so arrays are often id-matched; duplicates and mixed "1"/1 come from the small id set.
  element: fc
    .tuple(fc.option(idArb, { freq: 10, nil: undefined }), tie("object"))
    .map(([id, rest]) => (id === undefined ? rest : record([...Object.entries(rest).filter(([k]) => k !== "id"), ["id", id]]))),
  array: fc.oneof(
    fc.array(scalarArb, { maxLength: 3 }),
    { arbitrary: fc.array(tie("element"), { maxLength: 4 }), weight: 3 },
    fc.array(tie("value"), { maxLength: 3 }),
  ),
}));

/** One random edit, applied at the `at`-th container (objects and arrays, in document order) of the edited value. */
interface Edit {
  readonly at: number;
  readonly op: number;
  readonly key: string;
  readonly pick: number;
  readonly value: Json;
  readonly id: string | number;
}
const editArb: fc.Arbitrary<Edit> = fc.record({ at: fc.nat(), op: fc.nat({ max: 7 }), key: keyArb, pick: fc.nat(), value: valueArb, id: idArb });

function containers(value: Json, out: (Json[] | JsonRecord)[] = []): (Json[] | JsonRecord)[] {
  if (Array.isArray(value)) {
    out.push(value);
    value.forEach((element) => containers(element, out));
  } else if (isRecord(value)) {
    out.push(value);
    Object.values(value).forEach((v) => containers(v, out));
  }
  return out;
}

function applyEdit(root: Json[] | JsonRecord, edit: Edit): void {
  const all = containers(root);
  const target = all[edit.at % all.length]!;
  if (Array.isArray(target)) {
    const i = target.length === 0 ? 0 : edit.pick % target.length;
    const element = target[i];
    switch (edit.op) {
      case 0: target.reverse(); break; // a new order
      case 1: target.splice(i, 1); break;
      case 2: target.splice(i, 0, clone(edit.value)); break;
      case 3: if (isRecord(element)) element["id"] = edit.id; break; // an id changed, maybe to a duplicate or "1" for 1
      case 4: { // "1" for 1 or 1 for "1": the same String(id), another value
        const id = isRecord(element) ? element["id"] : undefined;
        if (typeof id === "number") (element as JsonRecord)["id"] = String(id);
        else if (typeof id === "string" && Number.isFinite(Number(id))) (element as JsonRecord)["id"] = Number(id);
      } break;
      case 5: if (element !== undefined) target.push(clone(element)); break; // a duplicate element
      case 6: if (target.length > 0) target[i] = clone(edit.value); break;
      default: target.push(target.shift() as Json); break; // rotated
    }
  } else {
    const keys = Object.keys(target);
    const existing = keys.length === 0 ? edit.key : keys[edit.pick % keys.length]!;
    switch (edit.op) {
      case 0: delete target[existing]; break;
      case 1: Object.defineProperty(target, existing, { value: null, enumerable: true, writable: true, configurable: true }); break;
      case 2: Object.defineProperty(target, existing, { value: undefined, enumerable: true, writable: true, configurable: true }); break;
      case 3: Object.defineProperty(target, edit.key, { value: clone(edit.value), enumerable: true, writable: true, configurable: true }); break;
      default: Object.defineProperty(target, existing, { value: clone(edit.value), enumerable: true, writable: true, configurable: true }); break;
    }
  }
}

/** An object with an id array at the top, as a transaction's `line_items`, whose elements may nest id arrays too. */
const itemsObjectArb: fc.Arbitrary<JsonRecord> = fc
  .tuple(objectArb, fc.array(elementArb, { maxLength: 5 }))
  .map(([rest, items]) => record([...Object.entries(rest), ["line_items", items]]));

/** `before` and an edited copy of it (few edits, so most of the two stays equal; some inside its id array), or two unrelated objects. */
const pairArb: fc.Arbitrary<[JsonRecord, JsonRecord]> = fc.oneof(
  fc.tuple(fc.oneof(objectArb, itemsObjectArb), fc.array(editArb, { maxLength: 5 })).map(([before, edits]) => {
    const after = clone(before) as JsonRecord;
    for (const edit of edits) applyEdit(after, edit);
    return [before, after] as [JsonRecord, JsonRecord];
  }),
  // Edits inside the id array only: changed, added, removed, reordered elements, ids changed or duplicated.
  fc.tuple(itemsObjectArb, fc.array(editArb, { minLength: 1, maxLength: 3 })).map(([before, edits]) => {
    const after = clone(before) as JsonRecord;
    for (const edit of edits) applyEdit(after["line_items"] as Json[], edit);
    return [before, after] as [JsonRecord, JsonRecord];
  }),
  fc.tuple(objectArb, objectArb),
);

const RUNS = { numRuns: 1500 };

// ---- properties

describe("diffObjects (properties)", () => {
  it("is complete and exact: the changes applied to before give after", () => {
    fc.assert(
      fc.property(pairArb, ([before, after]) => {
        const applied = applyChanges(before, diffObjects(before, after));
        expect(equivalent(applied, after), `applied ${JSON.stringify(applied)}`).toBe(true);
      }),
      RUNS,
    );
  });

  it("addresses real members: every path is an RFC 6901 pointer whose before/after are the values found there", () => {
    fc.assert(
      fc.property(pairArb, ([before, after]) => {
        for (const change of diffObjects(before, after)) {
          const tokens = parsePointer(change.path);
          expect(tokens.length).toBeGreaterThan(0);
          // Every step above the leaf exists on both sides: the diff descends only where both have the container.
          for (let n = 1; n < tokens.length; n++) {
            const prefix = tokens.slice(0, n);
            expect(resolve(before, prefix), `${change.path} above the leaf, before`).toBeTypeOf("object");
            expect(resolve(after, prefix), `${change.path} above the leaf, after`).toBeTypeOf("object");
          }
          const was = resolve(before, tokens);
          const is = resolve(after, tokens);
          expect(was !== undefined || is !== undefined, `${change.path} names a member of before or after`).toBe(true);
          expect(change.before).toBe(was ?? null);
          expect(change.after).toBe(is ?? null);
          expect(equivalent(was, is), `${change.path} is a change`).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it("is empty exactly when the two are equivalent, and lists each path once, none inside another", () => {
    fc.assert(
      fc.property(pairArb, ([before, after]) => {
        expect(diffObjects(before, before)).toEqual([]);
        const changes = diffObjects(before, after);
        expect(changes.length === 0).toBe(equivalent(before, after));
        const paths = changes.map((change) => parsePointer(change.path));
        expect(new Set(changes.map((change) => change.path)).size).toBe(changes.length);
        for (const a of paths) for (const b of paths) expect(isPrefix(a, b), `${a.join("/")} inside ${b.join("/")}`).toBe(false);
      }),
      RUNS,
    );
  });

  it("is deterministic: the same inputs (copied, or with members in another order) give the same list in the same order", () => {
    fc.assert(
      fc.property(pairArb, ([before, after]) => {
        const changes = diffObjects(before, after);
        expect(diffObjects(before, after)).toEqual(changes);
        expect(diffObjects(clone(before) as JsonRecord, clone(after) as JsonRecord)).toEqual(changes);
        expect(diffObjects(reorderKeys(before) as JsonRecord, reorderKeys(after) as JsonRecord)).toEqual(changes);
      }),
      RUNS,
    );
  });
});
