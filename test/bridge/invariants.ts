/** Invariants the engine must keep whatever happens (crashes, churn), shared by crash and property tests. */
import { expect } from "vitest";
import { diffObjects } from "../../shared/bridge/diff.js";
import { recordHash } from "../../shared/bridge/hash.js";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import type { TestRig } from "./fakes.js";

/** JSON with object members sorted, so equal values give equal text whatever their member order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A transaction as the bridge publishes it (PII mode `full`): everything but the provider's sync bookkeeping. */
export function publishedState(txn: Readonly<Record<string, unknown>>): string {
  const { client_sync_status: _ignored, ...state } = txn;
  return canonical(state);
}

/** States a cycle could see, per transaction id: those listed as `not_synced` / `outdated` right now. */
export function pullableStates(rig: TestRig): Map<string, string> {
  const pending = new Set(rig.provider.pending().map((t) => t.id));
  const states = new Map<string, string>();
  for (const txn of rig.provider.transactions) if (pending.has(txn.id)) states.set(txn.id, publishedState(txn));
  return states;
}

/**
 * States pullable before a cycle that finished without a crash, and still the same after it: that cycle saw them,
 * so each must have reached the sink (in that cycle or an earlier one that crashed after publishing).
 */
export function statesSeenBy(before: ReadonlyMap<string, string>, rig: TestRig): Map<string, string> {
  const now = new Map(rig.provider.transactions.map((t) => [t.id, publishedState(t)]));
  return new Map([...before].filter(([id, state]) => now.get(id) === state));
}

/** Every recorded state was published at least once for its transaction. */
export function expectEachStatePublished(rig: TestRig, states: Iterable<readonly [string, string]>): void {
  const published = new Set(rig.publisher.events.map((e) => `${e.detail.subject.id}\u0000${canonical(e.detail.data.object)}`));
  const missing = [...states].filter(([id, state]) => !published.has(`${id}\u0000${state}`)).map(([id]) => id);
  expect(missing).toEqual([]);
}

/**
 * Holds at every moment, crashes included: a transaction the provider shows `synced` has its current state recorded
 * in its snapshot (object, the hash of that object, and the number of the last event published about it), or a
 * quarantine record. Acknowledging first would let a crash leave it synced with no snapshot, and its next change
 * would come out as a second `transaction.created` instead of a `transaction.changed`; a snapshot left at an earlier
 * state would diff the next change against that state, and one numbered behind the events would repeat their numbers.
 */
export function expectAcknowledgedAreRecorded(rig: TestRig): void {
  const quarantined = new Set([...rig.quarantine.records.values()].map((r) => r.entityId));
  const lastSequence = new Map<string, number>();
  for (const { detail } of rig.publisher.events) lastSequence.set(detail.subject.id, Math.max(lastSequence.get(detail.subject.id) ?? 0, detail.subject.sequence));
  const unrecorded = rig.provider.transactions
    .filter((t) => t.client_sync_status === "synced" && !quarantined.has(t.id))
    .filter((t) => {
      const snapshot = rig.snapshots.data.get(`transaction:${t.id}`);
      return (
        snapshot === undefined ||
        canonical(snapshot.object) !== publishedState(t) ||
        snapshot.hash !== recordHash(snapshot.object) ||
        snapshot.sequence !== lastSequence.get(t.id)
      );
    })
    .map((t) => t.id);
  expect(unrecorded).toEqual([]);
}

/** Publish time in whole seconds: what EventBridge may keep of it. */
const wholeSeconds = (e: BridgeEvent): number => Math.floor(Date.parse(e.time) / 1000);

/**
 * The catalog's ordering rule (docs/events.md) holds over `events`, in arrival order: a consumer keeping per subject
 * the latest `time` (whole seconds), then the higher `subject.sequence`, ends with each subject's final state
 * (`finals`: canonical objects by subject id, as published); it never meets a tie it cannot break (two ids sharing
 * both); and across all types the numbers of a subject's events have no holes (1..highest).
 */
export function expectOrderingRuleHolds(events: readonly BridgeEvent[], finals: ReadonlyMap<string, string>): void {
  const current = new Map<string, BridgeEvent>();
  const places = new Map<string, string>();
  const numbers = new Map<string, Set<number>>();
  for (const e of events) {
    const { id: subject, sequence } = e.detail.subject;
    const held = current.get(subject);
    // A later delivery of an id already held counts with its own time: arrival order stands in for it here.
    if (held === undefined || wholeSeconds(e) > wholeSeconds(held) || (wholeSeconds(e) === wholeSeconds(held) && sequence >= held.detail.subject.sequence)) {
      current.set(subject, e);
    }
    const place = `${subject}\u0000${wholeSeconds(e)}\u0000${sequence}`;
    expect(places.get(place) ?? e.detail.id, `unbreakable tie at ${place}`).toBe(e.detail.id);
    places.set(place, e.detail.id);
    numbers.set(subject, (numbers.get(subject) ?? new Set<number>()).add(sequence));
  }
  for (const [subject, state] of finals) expect(canonical(current.get(subject)?.detail.data.object), subject).toBe(state);
  for (const [subject, seen] of numbers) {
    expect([...seen].sort((a, b) => a - b), subject).toEqual(Array.from({ length: Math.max(...seen) }, (_, i) => i + 1));
  }
}

/**
 * Every provider transaction's final state was the last one published and is the one the catalog's ordering rule
 * (latest `time`, then highest `subject.sequence`) picks when cycles run at least a clock tick apart, nothing is left pending, one observed change (subject, sequence, type, object, changes)
 * always carries one id (an edit undone and redone makes the same change again, under the next number), and events
 * sharing an id are identical (sequence included).
 */
export function expectNothingLost(rig: TestRig): void {
  expect(rig.provider.pending()).toEqual([]);
  const latest = new Map<string, string>();
  for (const e of rig.publisher.events) latest.set(e.detail.subject.id, canonical(e.detail.data.object));
  for (const txn of rig.provider.transactions) expect(latest.get(txn.id)).toBe(publishedState(txn));
  const finals = new Map(rig.provider.transactions.map((txn) => [txn.id, publishedState(txn)]));
  expectOrderingRuleHolds(rig.publisher.events, finals);
  const idsByChange = new Map<string, Set<string>>();
  for (const e of rig.publisher.events) {
    const { subject, type, data } = e.detail;
    const change = canonical([subject.id, subject.sequence, type, data.object, data.changes ?? null]);
    const ids = idsByChange.get(change) ?? new Set<string>();
    ids.add(e.detail.id);
    idsByChange.set(change, ids);
  }
  expect([...idsByChange.values()].filter((ids) => ids.size > 1)).toEqual([]);
  const byId = new Map<string, BridgeEvent>();
  for (const e of rig.publisher.events) {
    const first = byId.get(e.detail.id);
    if (first) expect(e.detail).toEqual(first.detail);
    else byId.set(e.detail.id, e);
  }
  expectChangesFromPreviousState(rig.publisher.events);
  expectRefundsNameTheirParents(rig);
}

/**
 * Each event of a refund whose `parent_qashio_id` names another transaction the provider holds carries that parent
 * (`data.parent`, its id and qashio_id): it is always findable here (on the page, in the store, or by a read), so a
 * consumer matching refunds never gets one without it.
 */
export function expectRefundsNameTheirParents(rig: TestRig): void {
  const byQashioId = new Map(rig.provider.transactions.map((t) => [t.qashio_id, t.id]));
  const wrong = rig.publisher.events.flatMap((e) => {
    const parentQashioId = e.detail.data.object["parent_qashio_id"];
    const parentId = typeof parentQashioId === "string" ? byQashioId.get(parentQashioId) : undefined;
    if (parentId === undefined || parentId === e.detail.subject.id) return [];
    return canonical(e.detail.data.parent) === canonical({ id: parentId, qashio_id: parentQashioId }) ? [] : [e.detail.id];
  });
  expect(wrong).toEqual([]);
}

/**
 * Each `*.changed` event's `changes` lead from a state the subject was published in one number before (the one its
 * snapshot held: a re-send after a crash may have put two states on the bus under that number) to its own object.
 */
export function expectChangesFromPreviousState(events: readonly BridgeEvent[]): void {
  const bySubject = new Map<string, BridgeEvent[]>();
  for (const e of events) bySubject.set(e.detail.subject.id, [...(bySubject.get(e.detail.subject.id) ?? []), e]);
  for (const e of events) {
    const { type, subject, data } = e.detail;
    if (!type.endsWith(".changed")) continue;
    const previous = (bySubject.get(subject.id) ?? []).filter((p) => p.detail.subject.sequence === subject.sequence - 1);
    const from = previous.map((p) => canonical(diffObjects(p.detail.data.object, data.object)));
    expect(from, `${subject.id} #${subject.sequence}`).toContain(canonical(data.changes));
  }
}
