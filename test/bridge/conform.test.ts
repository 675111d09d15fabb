import { describe, expect, it, vi } from "vitest";
import { conformSnapshots, supersedeConformPassOnModeChange } from "../../shared/bridge/conform.js";
import { pollCards } from "../../shared/bridge/cards.js";
import { BridgeConfigurationError, CycleAbortedError, ReadDeadlineExceededError, WriteDeadlineExceededError } from "../../shared/bridge/errors.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { HASH_PREFIX, PERSONAL_FIELDS, REDACTED, applyPiiToBody, conformPii, conformPiiToBody, type PiiPolicy } from "../../shared/bridge/pii.js";
import type { Snapshot, SnapshotKey, StoreCallOptions } from "../../shared/bridge/ports.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { contentHash, recordHash, sha256Hex } from "../../shared/bridge/hash.js";
import { makeRig, type TestRig } from "./fakes.js";

const REDACT: PiiPolicy = { mode: "redact" };
const HASH: PiiPolicy = { mode: "hash", salt: "tenant-salt-0123456789" };
const OTHER_SALT_HASH = `${HASH_PREFIX}${"ab".repeat(32)}`;

/** A rig whose cycles ran under `full`: its snapshots hold the cardholders' names and emails in cleartext. */
async function rigWrittenUnderFull(transactions: number, cards = 0): Promise<TestRig> {
  const rig = makeRig({ pii: { mode: "full" } });
  for (let i = 0; i < transactions; i++) rig.provider.addTransaction();
  for (let i = 0; i < cards; i++) rig.provider.addCard();
  await pollTransactions(rig.deps);
  await pollCards(rig.deps);
  return rig;
}

/** Puts `count` quarantine records of transaction t1 whose raw body holds a cardholder name in clear. */
async function quarantineHeld(rig: TestRig, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    await rig.quarantine.put({ id: `q${i}`, kind: "transaction", reason: "bad", raw: { id: "t1", card_holder_name: "Ann Holder", memo: `m${i}` }, at: "2026-03-01T12:00:00Z" });
  }
}

/** Makes the snapshot store's vacuum take a minute of the rig's clock; returns the vacuum it wraps. */
function vacuumTakingAMinute(rig: TestRig): () => ReturnType<TestRig["snapshots"]["vacuum"]> {
  const vacuum = rig.snapshots.vacuum.bind(rig.snapshots);
  rig.snapshots.vacuum = async () => {
    rig.clock.advance(60_000);
    return vacuum();
  };
  return vacuum;
}

/** Occurrences of the fakes' cardholder name and email anywhere in the store. */
function cleartextIn(rig: TestRig): number {
  return JSON.stringify([...rig.snapshots.data.values()]).match(/Ann Holder|ann@example\.com/g)?.length ?? 0;
}

/** Keys of the snapshots each putMany was handed. */
function recordWrites(rig: TestRig): SnapshotKey[][] {
  const writes: SnapshotKey[][] = [];
  const put = rig.snapshots.putMany.bind(rig.snapshots);
  vi.spyOn(rig.snapshots, "putMany").mockImplementation(async (snapshots) => {
    writes.push(snapshots.map((s) => s.key));
    return put(snapshots);
  });
  return writes;
}

/** `call` made to abort `stop` during its second call (an invocation giving up then); `count` says how often it was called. */
function abortingOnSecondCall<A, R>(call: (arg: A) => Promise<R>, stop: AbortController): { call: (arg: A) => Promise<R>; count: () => number } {
  let calls = 0;
  return {
    call: async (arg) => {
      if (++calls === 2) stop.abort();
      return call(arg);
    },
    count: () => calls,
  };
}

/** The hash a cycle takes of a snapshot's object: cards in canonical key order, transactions in the provider's. */
const hashOf = (key: SnapshotKey, object: Record<string, unknown>): string => (key.startsWith("card:") ? contentHash(object) : recordHash(object));

/** `s` as the pass rewrites it under `policy`: masked, its hash taken anew of the masked object, its time kept. */
function rewrittenAs(s: Snapshot, policy: PiiPolicy): Snapshot {
  const object = conformPii(s.object, policy);
  return { ...s, object, hash: hashOf(s.key, object) };
}

function snapshot(key: SnapshotKey, object: Record<string, unknown>): Snapshot {
  return { key, hash: `h-${key}`, object, updatedAt: "2025-01-15T10:00:00.000Z" };
}

describe("conformSnapshots", () => {
  it("reports no negative duration when the wall clock steps back during the pass (as a cycle's report does)", async () => {
    const rig = await rigWrittenUnderFull(3);
    const put = rig.snapshots.putMany.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "putMany").mockImplementation(async (snapshots) => {
      rig.clock.advance(-3_600_000); // NTP, or a person, sets the clock back an hour
      return put(snapshots);
    });
    const report = await conformSnapshots({ ...rig.deps, pii: REDACT });
    expect(report.rewritten).toBe(3);
    expect(report.durationMs).toBe(0);
  });

  it("rewrites only the snapshots holding cleartext, in the current form, with the hash of that form, keeping updatedAt", async () => {
    const rig = await rigWrittenUnderFull(3, 2);
    const before = structuredClone(rig.snapshots.data);
    expect(cleartextIn(rig)).toBeGreaterThan(0);
    const writes = recordWrites(rig);

    const report = await conformSnapshots({ ...rig.deps, pii: REDACT });

    expect(report).toMatchObject({ mode: "redact", outcome: "complete", scanned: before.size, rewritten: 5 });
    expect(report.cursor).toBeUndefined();
    expect(writes.flat().sort()).toEqual([...before.keys()].filter((key) => !key.startsWith("transaction:qashio_id:")).sort());
    for (const [key, old] of before) {
      expect(rig.snapshots.data.get(key)).toEqual(key.startsWith("transaction:qashio_id:") ? old : rewrittenAs(old, REDACT));
    }
    expect(cleartextIn(rig)).toBe(0);
    expect(rig.snapshots.vacuumCalls).toBe(1);
  });

  it("is idempotent: a second pass reads every snapshot and writes none", async () => {
    const rig = await rigWrittenUnderFull(4, 1);
    const deps = { ...rig.deps, pii: HASH };
    expect((await conformSnapshots(deps)).rewritten).toBe(5);
    const stored = structuredClone(rig.snapshots.data);
    const writes = recordWrites(rig);
    const again = await conformSnapshots(deps);
    expect(again).toMatchObject({ outcome: "complete", scanned: stored.size, rewritten: 0 });
    expect(writes).toEqual([]);
    expect(rig.snapshots.data).toEqual(stored);
  });

  it("stops between pages at the deadline with a cursor, and a run from that cursor finishes the pass", async () => {
    const rig = await rigWrittenUnderFull(20);
    const deps = { ...rig.deps, pii: REDACT };
    const total = rig.snapshots.data.size;
    // Each page read takes a second; the first run has 2.5.
    const scan = rig.snapshots.scan.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "scan").mockImplementation(async (options) => {
      rig.clock.advance(1_000);
      return scan(options);
    });

    const first = await conformSnapshots(deps, { pageSize: 5, deadline: rig.clock.now() + 2_500 });
    expect(first).toMatchObject({ outcome: "deadline", scanned: 15, cursor: expect.any(String) });
    expect(first.rewritten).toBeLessThan(20);
    // The log line says where to go on too: an operator reading it after the invocation finds the cursor there.
    expect(rig.logger.lines.find((l) => l.message === "snapshots conformed to the PII mode")?.attributes).toMatchObject({ outcome: "deadline", cursor: first.cursor });
    expect(cleartextIn(rig)).toBeGreaterThan(0);
    expect(rig.snapshots.vacuumCalls).toBe(0);

    const second = await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor, deadline: rig.clock.now() + 60_000 });
    // The rest, and the entry holding the id of the pass that stopped (its cursor names it).
    expect(second).toMatchObject({ outcome: "complete", scanned: total - 15 + 1 });
    expect(first.rewritten + second.rewritten).toBe(20);
    expect(cleartextIn(rig)).toBe(0);
    expect(rig.snapshots.vacuumCalls).toBe(1);
  });

  it("reports a deadline already passed without reading, and without a cursor, so the next run starts over", async () => {
    const rig = await rigWrittenUnderFull(2);
    const report = await conformSnapshots({ ...rig.deps, pii: REDACT }, { deadline: rig.clock.now() });
    expect(report).toMatchObject({ outcome: "deadline", scanned: 0, rewritten: 0 });
    expect(report.cursor).toBeUndefined();
    expect(rig.snapshots.scanCalls).toBe(0);
  });

  it("does nothing under full and says so", async () => {
    const rig = await rigWrittenUnderFull(2, 1);
    const stored = structuredClone(rig.snapshots.data);
    const report = await conformSnapshots(rig.deps);
    expect(report).toEqual({ mode: "full", outcome: "full_mode", scanned: 0, rewritten: 0, quarantineRewritten: 0, durationMs: 0 });
    expect(rig.snapshots.scanCalls).toBe(0);
    expect(rig.snapshots.vacuumCalls).toBe(0);
    expect(rig.snapshots.data).toEqual(stored);
    expect(rig.logger.lines).toContainEqual(expect.objectContaining({ level: "info", message: expect.stringMatching(/PII mode is full.*nothing to re-mask/) }));
  });

  it("leaves values already masked as they are under hash; under redact the marker stays and a hash becomes it, as in a cycle", async () => {
    const masked = {
      redacted: snapshot("transaction:redacted", { card_holder_name: REDACTED, card_holder_email: REDACTED, memo: "x" }),
      otherSalt: snapshot("transaction:other-salt", { card_holder_name: OTHER_SALT_HASH, card_holder_email: null }),
      nested: snapshot("card:CA1", { status: "Active", cardholder: { name: REDACTED, email: "", employee_id: REDACTED } }),
    };
    const clear = snapshot("card:CA2", { status: "Active", cardholder: { name: "Ann Holder", email: "Ann@Example.com", employee_id: "E2" } });
    for (const [policy, untouched, rewritten] of [
      [HASH, [masked.redacted, masked.otherSalt, masked.nested], [clear]],
      [REDACT, [masked.redacted, masked.nested], [clear, masked.otherSalt]],
    ] as const) {
      const rig = makeRig();
      await rig.snapshots.putMany([...untouched, ...rewritten]);
      const report = await conformSnapshots({ ...rig.deps, pii: policy });
      expect(report.rewritten).toBe(rewritten.length);
      for (const s of untouched) expect(rig.snapshots.data.get(s.key)).toEqual(s);
      for (const s of rewritten) expect(rig.snapshots.data.get(s.key)).toEqual(rewrittenAs(s, policy));
    }
  });

  it("reads past entries whose object is not an object, leaving them as they are", async () => {
    const rig = makeRig();
    const odd = [
      { ...snapshot("transaction:null", {}), object: null },
      { ...snapshot("transaction:array", {}), object: ["Ann Holder"] },
      { ...snapshot("card:text", {}), object: "Ann Holder" },
    ] as unknown as Snapshot[];
    await rig.snapshots.putMany([...odd, snapshot("transaction:ann", { card_holder_name: "Ann Holder" })]);
    const report = await conformSnapshots({ ...rig.deps, pii: REDACT });
    expect(report).toMatchObject({ outcome: "complete", scanned: 4, rewritten: 1 });
    for (const s of odd) expect(rig.snapshots.data.get(s.key)).toEqual(s);
  });

  it("keeps no hash of the cleartext: the stored hash confirms no guess of the person, and the next cycles find every item unchanged", async () => {
    const rig = await rigWrittenUnderFull(2, 2);
    const deps = { ...rig.deps, pii: HASH };
    const [txn] = rig.provider.transactions;
    if (txn === undefined) throw new Error("no transaction");
    const key = `transaction:${String(txn.id)}` as SnapshotKey;
    const cleartext = rig.snapshots.data.get(key)!.object;
    await conformSnapshots(deps);
    const stored = rig.snapshots.data.get(key)!;
    // Put back the right person into the masked object: its hash is not the stored one.
    expect(recordHash(cleartext)).not.toBe(stored.hash);
    expect(stored.hash).toBe(recordHash(stored.object));

    // Listed again unchanged (outdated), and walked again: nothing to publish, nothing to rewrite.
    for (const t of rig.provider.transactions) t.client_sync_status = "outdated";
    const writes = recordWrites(rig);
    const published = rig.publisher.events.length;
    expect((await pollTransactions(deps)).unchanged).toBe(2);
    await pollCards(deps);
    expect(rig.publisher.events).toHaveLength(published);
    expect(writes.flat().filter((k) => !k.includes("~"))).toEqual([]);
  });

  it("gives an event re-sent after a crash that the pass ran between a new id (documented), never a lost change", async () => {
    const rig = await rigWrittenUnderFull(1, 1);
    const deps = { ...rig.deps, pii: REDACT };
    const [txn] = rig.provider.transactions;
    if (txn === undefined) throw new Error("no transaction");
    rig.provider.changeTransaction(txn.id, { memo: "edited" });
    // The change is published, then the snapshot write fails: the next cycle re-sends it against the rewritten snapshot.
    const put = rig.snapshots.putMany.bind(rig.snapshots);
    const failing = vi.spyOn(rig.snapshots, "putMany").mockRejectedValueOnce(new Error("disk full"));
    await expect(pollTransactions(deps)).rejects.toBeInstanceOf(CycleAbortedError);
    failing.mockImplementation(put);

    expect((await conformSnapshots(deps)).rewritten).toBe(2);
    await pollTransactions(deps);
    const changed = rig.publisher.ofType("transaction.changed");
    expect(changed).toHaveLength(2);
    expect(changed[1]?.detail.id).not.toBe(changed[0]?.detail.id);
    expect(changed[1]?.detail.data.object).toEqual(changed[0]?.detail.data.object);
    expect(changed[1]?.detail.data.changes?.map((c) => c.path)).not.toContain("/card_holder_name");
    expect(rig.provider.pending()).toEqual([]);
  });

  it("rewrites quarantine records held under an earlier mode in the current form, keeping their id and first time", async () => {
    const rig = makeRig({ pii: { mode: "full" } });
    rig.provider.addTransaction();
    // Found invalid: quarantined under full with its cardholder in clear, and acknowledged.
    await pollTransactions({ ...rig.deps, validators: { ...rig.deps.validators, transaction: () => ({ success: false, reason: "bad" }) } });
    const [held] = await rig.quarantine.list();
    expect(JSON.stringify(held?.raw)).toMatch(/Ann Holder/);

    const report = await conformSnapshots({ ...rig.deps, pii: HASH });
    expect(report.quarantineRewritten).toBe(1);
    const [after] = await rig.quarantine.list();
    expect(after).toMatchObject({ id: held?.id, at: held?.at, kind: "transaction" });
    expect(JSON.stringify(after?.raw)).not.toMatch(/Ann Holder|ann@example\.com/);
    expect(after?.raw).toEqual(applyPiiToBody(held?.raw, HASH));
    expect(conformPiiToBody(after?.raw, HASH)).toEqual(after?.raw);
    // Nothing left to rewrite.
    expect((await conformSnapshots({ ...rig.deps, pii: HASH })).quarantineRewritten).toBe(0);
  });

  it("reads the quarantine a page at a time, never whole, and rewrites every record of every page", async () => {
    const rig = makeRig({ pii: { mode: "full" } });
    const body = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", card_holder_email: "ann@example.com" };
    for (let i = 0; i < 23; i += 1) {
      await rig.quarantine.put({ id: `q${i}`, kind: "transaction", reason: "bad", raw: { ...body, memo: `m${i}` }, at: "2026-03-01T12:00:00Z" });
    }
    const pageSizes = rig.quarantine.readInPagesOnly();

    expect((await conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 10 })).quarantineRewritten).toBe(23);
    expect(pageSizes).toEqual([10, 10, 3]);
    expect(JSON.stringify([...rig.quarantine.records.values()])).not.toMatch(/Ann Holder|ann@example\.com/);
  });

  it("stops before the next quarantine record once its signal aborts (a timed-out invocation), even in the walk's first page, handing out no cursor", async () => {
    const rig = await rigWrittenUnderFull(3);
    const body = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", card_holder_email: "ann@example.com" };
    for (let i = 0; i < 6; i += 1) {
      await rig.quarantine.put({ id: `q${i}`, kind: "transaction", reason: "bad", raw: { ...body, memo: `m${i}` }, at: "2026-03-01T12:00:00Z" });
    }
    const stop = new AbortController();
    // The invocation gives up while the second record is written.
    const put = abortingOnSecondCall(rig.quarantine.put.bind(rig.quarantine), stop);
    rig.quarantine.put = put.call;
    const writes = recordWrites(rig);
    const report = await conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 10, signal: stop.signal, deadline: rig.clock.now() + 60_000 });
    expect(report).toMatchObject({ outcome: "deadline", rewritten: 3, quarantineRewritten: 2 });
    expect(report.cursor).toBeUndefined();
    expect(put.count()).toBe(2);
    // No pass id stored: only the page of snapshots was written.
    expect(writes.flat().some((key) => key.includes("~conform-pass"))).toBe(false);
  });

  it("writes no page whose scan answered once its signal aborted, and hands out no cursor though pages are left (a timed-out invocation)", async () => {
    const rig = await rigWrittenUnderFull(20);
    const stop = new AbortController();
    // The invocation gives up while the second page is read.
    rig.snapshots.scan = abortingOnSecondCall(rig.snapshots.scan.bind(rig.snapshots), stop).call;
    const writes = recordWrites(rig);
    const report = await conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 5, signal: stop.signal, deadline: rig.clock.now() + 60_000 });
    expect(report).toMatchObject({ outcome: "deadline", scanned: 5, rewritten: 5 });
    expect(report.cursor).toBeUndefined();
    // The first page only: neither the second nor a pass id.
    expect(writes).toHaveLength(1);
  });

  it("stops the quarantine walk at the deadline too, with the cursor of the last page of snapshots, from which a run reads that page again and goes on with the quarantine", async () => {
    const rig = await rigWrittenUnderFull(3);
    const body = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", card_holder_email: "ann@example.com" };
    for (let i = 0; i < 30; i += 1) {
      await rig.quarantine.put({ id: `q${i}`, kind: "transaction", reason: "bad", raw: { ...body, memo: `m${i}` }, at: "2026-03-01T12:00:00Z" });
    }
    // Each quarantine page of 4 takes 0.4 s to rewrite; the first run has 1.5 s: four pages.
    const put = rig.quarantine.put.bind(rig.quarantine);
    rig.quarantine.put = async (record) => {
      rig.clock.advance(100);
      return put(record);
    };
    const deps = { ...rig.deps, pii: REDACT };
    const stored = rig.snapshots.data.size;
    const lastPage = stored % 4 === 0 ? 4 : stored % 4;
    expect(stored).toBeGreaterThan(4);
    const first = await conformSnapshots(deps, { pageSize: 4, deadline: rig.clock.now() + 1_500 });
    expect(first).toMatchObject({ outcome: "deadline", scanned: stored, rewritten: 3, quarantineRewritten: 16 });
    expect(first.cursor).toBeDefined();
    expect(cleartextIn(rig)).toBe(0);
    expect(JSON.stringify([...rig.quarantine.records.values()])).toMatch(/Ann Holder/);

    const scans = rig.snapshots.scanCalls;
    const second = await conformSnapshots(deps, { pageSize: 4, cursor: first.cursor, deadline: rig.clock.now() + 60_000 });
    // That page holds the entry of the stopped pass's id as well (lastPage < 4).
    expect(second).toMatchObject({ outcome: "complete", scanned: lastPage + 1, rewritten: 0, quarantineRewritten: 14 });
    expect(second.cursor).toBeUndefined();
    expect(rig.snapshots.scanCalls).toBe(scans + 1);
    expect(JSON.stringify([...rig.quarantine.records.values()])).not.toMatch(/Ann Holder|ann@example\.com/);
  });

  it("goes on with the quarantine walk where a run stopped, so runs whose reads of records already masked would fill their budget still finish it", async () => {
    const rig = await rigWrittenUnderFull(150);
    const body = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", card_holder_email: "ann@example.com" };
    for (let i = 0; i < 1_000; i += 1) {
      await rig.quarantine.put({ id: `q${String(i).padStart(4, "0")}`, kind: "transaction", reason: "bad", raw: { ...body, memo: `m${i}` }, at: "2026-03-01T12:00:00Z" });
    }
    // Each page of records takes 0.3 s to read and 5 ms a record to rewrite; each run has 1 s. Started over at every run,
    // the walk spent the budget reading the pages masked before and never got past the fourth.
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = async function* (options) {
      for await (const page of pages(options)) {
        rig.clock.advance(300);
        yield page;
      }
    };
    const put = rig.quarantine.put.bind(rig.quarantine);
    rig.quarantine.put = async (record) => {
      rig.clock.advance(5);
      return put(record);
    };
    const deps = { ...rig.deps, pii: REDACT };
    let cursor: string | undefined;
    let quarantineRewritten = 0;
    let runs = 0;
    for (; runs < 30; runs += 1) {
      const report = await conformSnapshots(deps, { deadline: rig.clock.now() + 1_000, ...(cursor === undefined ? {} : { cursor }) });
      quarantineRewritten += report.quarantineRewritten;
      if (report.outcome === "complete") break;
      expect(report.cursor).toBeDefined();
      cursor = report.cursor;
    }
    expect(runs).toBeLessThan(15);
    expect(quarantineRewritten).toBe(1_000);
    expect(JSON.stringify([...rig.quarantine.records.values()])).not.toMatch(/Ann Holder|ann@example\.com/);
  });

  it("conforms a page of records in a run that goes on with the quarantine even when its page of snapshots took the whole budget", async () => {
    const rig = await rigWrittenUnderFull(3);
    // Six snapshots in pages of 4: the last page read again holds two, and the entry of the stopped pass's id.
    await quarantineHeld(rig, 12);
    const deps = { ...rig.deps, pii: REDACT };
    const put = rig.quarantine.put.bind(rig.quarantine);
    rig.quarantine.put = async (record) => {
      rig.clock.advance(1_000);
      return put(record);
    };
    const first = await conformSnapshots(deps, { pageSize: 4, deadline: rig.clock.now() + 1_500 });
    expect(first).toMatchObject({ outcome: "deadline", quarantineRewritten: 4, cursor: expect.any(String) });
    const scan = rig.snapshots.scan.bind(rig.snapshots);
    rig.snapshots.scan = async (options) => {
      rig.clock.advance(60_000);
      return scan(options);
    };
    const second = await conformSnapshots(deps, { pageSize: 4, cursor: first.cursor, deadline: rig.clock.now() + 30_000 });
    expect(second).toMatchObject({ outcome: "deadline", quarantineRewritten: 4, cursor: expect.any(String) });
    const third = await conformSnapshots(deps, { pageSize: 4, cursor: second.cursor, deadline: rig.clock.now() + 30_000 });
    expect(third).toMatchObject({ outcome: "complete", quarantineRewritten: 4 });
    expect(JSON.stringify([...rig.quarantine.records.values()])).not.toMatch(/Ann Holder/);
  });

  it("conforms a page of records in a run resumed from the cursor of the last page of snapshots, when reading that page again takes the whole budget", async () => {
    const rig = await rigWrittenUnderFull(3);
    await quarantineHeld(rig, 6);
    const deps = { ...rig.deps, pii: REDACT };
    expect(rig.snapshots.data.size).toBeGreaterThan(2);
    // The pass over the snapshots ends past the deadline: the first run stops before its first page of records, with
    // the cursor of its last page of snapshots (no quarantine walk begun), and every run from it reads that page again.
    vacuumTakingAMinute(rig);
    let cursor: string | undefined;
    let report = await conformSnapshots(deps, { pageSize: 2, deadline: rig.clock.now() + 30_000 });
    expect(report).toMatchObject({ outcome: "deadline", quarantineRewritten: 0, cursor: expect.any(String) });
    for (let runs = 0; runs < 5 && report.outcome === "deadline"; runs += 1) {
      cursor = report.cursor;
      report = await conformSnapshots(deps, { pageSize: 2, deadline: rig.clock.now() + 30_000, ...(cursor === undefined ? {} : { cursor }) });
    }
    expect(report.outcome).toBe("complete");
    expect(JSON.stringify([...rig.quarantine.records.values()])).not.toMatch(/Ann Holder/);
  });

  it("conforms no page of records once interrupted (Ctrl-C), even in a run resumed from a cursor, and hands out a cursor to go on from", async () => {
    const rig = await rigWrittenUnderFull(3);
    await quarantineHeld(rig, 6);
    const deps = { ...rig.deps, pii: REDACT };
    const vacuum = vacuumTakingAMinute(rig);
    const first = await conformSnapshots(deps, { pageSize: 2, deadline: rig.clock.now() + 30_000 });
    expect(first).toMatchObject({ outcome: "deadline", quarantineRewritten: 0, cursor: expect.any(String) });
    // The person presses Ctrl-C while the resumed run finishes the snapshots: its first page of records, conformed
    // whatever the time, is not conformed against their stop.
    const interrupt = new AbortController();
    rig.snapshots.vacuum = async () => {
      interrupt.abort();
      return vacuum();
    };
    const resumed = await conformSnapshots(deps, { pageSize: 2, deadline: rig.clock.now() + 30_000, cursor: first.cursor!, interrupt: interrupt.signal });
    expect(resumed).toMatchObject({ outcome: "deadline", quarantineRewritten: 0, cursor: expect.any(String) });
    expect(JSON.stringify([...rig.quarantine.records.values()])).toMatch(/Ann Holder/);
  });

  it("refuses in another store the cursor of a pass stopped in its quarantine walk, rather than take that store's snapshots as done", async () => {
    const stopped = await rigWrittenUnderFull(3);
    for (let i = 0; i < 4; i += 1) {
      const raw = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", memo: `m${i}` };
      await stopped.quarantine.put({ id: `q${i}`, kind: "transaction", reason: "bad", raw, at: "2026-03-01T12:00:00Z" });
    }
    const put = stopped.quarantine.put.bind(stopped.quarantine);
    stopped.quarantine.put = async (record) => {
      stopped.clock.advance(60_000);
      return put(record);
    };
    const first = await conformSnapshots({ ...stopped.deps, pii: REDACT }, { pageSize: 2, deadline: stopped.clock.now() + 30_000 });
    expect(first).toMatchObject({ outcome: "deadline", quarantineRewritten: 2 });
    expect(first.cursor).toBeDefined();

    // Handed to another tenant's pass (or a state directory restored since), it must not skip that store's snapshots.
    const other = await rigWrittenUnderFull(0, 2);
    const cleartext = cleartextIn(other);
    expect(cleartext).toBeGreaterThan(0);
    await expect(conformSnapshots({ ...other.deps, pii: REDACT }, { pageSize: 2, cursor: first.cursor })).rejects.toMatchObject({
      name: "ConformCursorError",
      problem: "superseded",
    });
    expect(cleartextIn(other)).toBe(cleartext);
  });

  it("refuses in another tenant's pass the cursor of a quarantine walk whose snapshots fitted one page (nothing else ties it to its store)", async () => {
    const withRecords = async () => {
      const rig = makeRig({ pii: { mode: "full" } });
      for (let i = 0; i < 25; i += 1) {
        const raw = { id: "t1", qashio_id: "CT1", card_holder_name: "Ann Holder", memo: `m${i}` };
        await rig.quarantine.put({ id: `q${String(i).padStart(2, "0")}`, kind: "transaction", reason: "bad", raw, at: "2026-03-01T12:00:00Z" });
      }
      return rig;
    };
    const stopped = await withRecords();
    const put = stopped.quarantine.put.bind(stopped.quarantine);
    stopped.quarantine.put = async (record) => {
      stopped.clock.advance(60_000);
      return put(record);
    };
    const first = await conformSnapshots({ ...stopped.deps, pii: REDACT }, { pageSize: 10, deadline: stopped.clock.now() + 30_000 });
    expect(first).toMatchObject({ outcome: "deadline", scanned: 0, quarantineRewritten: 10, cursor: expect.any(String) });
    // Its own tenant goes on from it.
    expect(await conformSnapshots({ ...stopped.deps, pii: REDACT }, { pageSize: 10, cursor: first.cursor })).toMatchObject({ outcome: "complete", quarantineRewritten: 15 });

    const other = await withRecords();
    const otherTenant = { ...other.deps, tenant: `${other.deps.tenant}-other`, pii: REDACT };
    await expect(conformSnapshots(otherTenant, { pageSize: 10, cursor: first.cursor })).rejects.toMatchObject({
      name: "ConformCursorError",
      problem: "tenant",
      reason: `it was made for tenant "${stopped.deps.tenant}", not "${otherTenant.tenant}"`,
    });
    expect(JSON.stringify([...other.quarantine.records.values()]).match(/Ann Holder/g)).toHaveLength(25);
  });

  it("masks whole the head of a body the store had to cut (JSON text cut short), keeping its size and qashio_id", async () => {
    const rig = makeRig({ pii: { mode: "full" } });
    const head = '{"id":"t1","qashio_id":"CT1","card_holder_name":"Ann Holder","card_holder_email":"ann@example.com","memo":"xxxx';
    const cut = { _truncated: { bytes: 700_000 }, head, qashio_id: "CT1" };
    await rig.quarantine.put({ id: "q1", kind: "transaction", reason: "publish: oversized", raw: cut, at: "2026-03-01T12:00:00Z" });

    expect((await conformSnapshots({ ...rig.deps, pii: HASH })).quarantineRewritten).toBe(1);
    const [hashed] = await rig.quarantine.list();
    expect(hashed).toMatchObject({ id: "q1", at: "2026-03-01T12:00:00Z", raw: { _truncated: { bytes: 700_000 }, qashio_id: "CT1" } });
    expect((hashed?.raw as { head: string }).head).toMatch(new RegExp(`^${HASH_PREFIX}[0-9a-f]{64}$`));
    // Already masked: a second pass, in the same mode, changes nothing; under redact the hash becomes the marker.
    expect((await conformSnapshots({ ...rig.deps, pii: HASH })).quarantineRewritten).toBe(0);
    expect((await conformSnapshots({ ...rig.deps, pii: REDACT })).quarantineRewritten).toBe(1);
    expect((await rig.quarantine.list())[0]?.raw).toEqual({ ...cut, head: REDACTED });
  });

  it("masks a provider body that only looks like a cut one (other members beside the head) as a body: no cardholder stays in clear", async () => {
    const rig = makeRig({ pii: { mode: "full" } });
    const body = { id: "t1", _truncated: { bytes: 10 }, head: "note", card_holder_name: "Ann Holder", cardholder: { email: "ann@example.com" } };
    await rig.quarantine.put({ id: "q1", kind: "transaction", reason: "bad", raw: body, at: "2026-03-01T12:00:00Z" });

    expect((await conformSnapshots({ ...rig.deps, pii: REDACT })).quarantineRewritten).toBe(1);
    const [held] = await rig.quarantine.list();
    expect(JSON.stringify(held?.raw)).not.toMatch(/Ann Holder|ann@example\.com/);
    expect(held?.raw).toEqual(applyPiiToBody(body, REDACT));
  });

  it("takes a body for a cut one only with a byte count: the free text of another body's head is kept, as any memo is", async () => {
    const rig = makeRig({ pii: { mode: "full" } });
    const body = { _truncated: { note: "sent so" }, head: "taxi to the airport" };
    await rig.quarantine.put({ id: "q1", kind: "transaction", reason: "bad", raw: body, at: "2026-03-01T12:00:00Z" });

    expect((await conformSnapshots({ ...rig.deps, pii: REDACT })).quarantineRewritten).toBe(0);
    expect((await rig.quarantine.list())[0]?.raw).toEqual(body);
  });

  it("refuses a page size below 1 before reading anything", async () => {
    const rig = await rigWrittenUnderFull(1);
    const scan = vi.spyOn(rig.snapshots, "scan");
    for (const pageSize of [0, -1, 1.5]) await expect(conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize })).rejects.toThrow(RangeError);
    expect(scan).not.toHaveBeenCalled();
    expect((await conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 1 })).outcome).toBe("complete");
  });

  it("refuses a PII policy a cycle would refuse (hash without a salt, an unknown mode) before reading or writing anything", async () => {
    const rig = await rigWrittenUnderFull(1);
    const before = structuredClone(rig.snapshots.data);
    const scan = vi.spyOn(rig.snapshots, "scan");
    for (const pii of [{ mode: "hash" }, { mode: "mask" }] as PiiPolicy[]) {
      await expect(conformSnapshots({ ...rig.deps, pii })).rejects.toThrow(BridgeConfigurationError);
    }
    expect(scan).not.toHaveBeenCalled();
    expect(rig.snapshots.data).toEqual(before);
  });

  it("passes on the store's refusal of the place a cursor names as its error", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    // The memory store refuses a cursor naming a key it does not hold.
    rig.snapshots.data.clear();
    await rig.snapshots.putMany([...first.passEntry]);
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
  });

  it.each(["signal", "interrupt"] as const)("reads no further page once its %s aborts, even when the pages read write nothing (a store already conformed)", async (stop) => {
    const rig = await rigWrittenUnderFull(20);
    const deps = { ...rig.deps, pii: REDACT };
    expect((await conformSnapshots(deps)).outcome).toBe("complete");
    const controller = new AbortController();
    // Aborted while the second page is read.
    rig.snapshots.scan = abortingOnSecondCall(rig.snapshots.scan.bind(rig.snapshots), controller).call;
    const report = await conformSnapshots(deps, { pageSize: 5, [stop]: controller.signal });
    expect(report).toMatchObject({ outcome: "deadline", scanned: 10, rewritten: 0 });
    // A person's stop (Ctrl-C) is told where to go on; a caller that will not see the report is handed no cursor.
    expect(report.cursor === undefined).toBe(stop === "signal");
  });

  it("logs no personal value, stopped or complete, and supersedes without one either", async () => {
    const { rig, deps, first } = await stoppedPass(HASH);
    await quarantineHeld(rig, 3);
    await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor });
    await supersedeConformPassOnModeChange({ ...rig.deps, pii: REDACT });
    expect(rig.logger.lines.some((l) => l.message === "snapshots conformed to the PII mode")).toBe(true);
    expect(JSON.stringify(rig.logger.lines)).not.toMatch(/Ann Holder|ann@example\.com/i);
  });

  it("moves the pass id's version forward when the clock stepped back since the last was stored", async () => {
    const { rig, first } = await stoppedPass(REDACT);
    const [entry] = first.passEntry;
    if (entry === undefined) throw new Error("no pass entry");
    rig.clock.advance(-3_600_000);
    await supersedeConformPassOnModeChange({ ...rig.deps, pii: HASH });
    const stored = rig.snapshots.data.get(entry.key);
    expect(stored?.object["pass"]).not.toBe(entry.object["pass"]);
    expect(Date.parse(stored?.updatedAt ?? "")).toBe(Date.parse(entry.updatedAt) + 1);
  });

  it("reads snapshots and quarantine records 100 at a time unless told otherwise", async () => {
    const rig = await rigWrittenUnderFull(120);
    await quarantineHeld(rig, 120);
    const scan = vi.spyOn(rig.snapshots, "scan");
    const pageSizes = rig.quarantine.readInPagesOnly();
    await conformSnapshots({ ...rig.deps, pii: REDACT });
    expect(scan.mock.calls.map(([options]) => options.limit)).toEqual([100, 100, 100]);
    expect(pageSizes).toEqual([100, 20]);
  });
});

/** A pass under `policy` over 20 transactions written under full, stopped at its deadline after three pages of 5. */
async function stoppedPass(policy: PiiPolicy) {
  const rig = await rigWrittenUnderFull(20);
  const deps = { ...rig.deps, pii: policy };
  const scan = rig.snapshots.scan.bind(rig.snapshots);
  vi.spyOn(rig.snapshots, "scan").mockImplementation(async (options) => {
    rig.clock.advance(1_000);
    return scan(options);
  });
  const before = structuredClone(rig.snapshots.data);
  const report = await conformSnapshots(deps, { pageSize: 5, deadline: rig.clock.now() + 2_500 });
  expect(report).toMatchObject({ outcome: "deadline", cursor: expect.any(String) });
  const passEntry = [...rig.snapshots.data.values()].filter((s) => !before.has(s.key));
  expect(passEntry).toHaveLength(1);
  return { rig, deps, before, first: { ...report, cursor: report.cursor as string, passEntry } };
}

/** `cursor` with the state it records rewritten by `edit`, under a valid checksum: as another version might print it. */
function reprinted(cursor: string, edit: (state: Record<string, unknown>) => Record<string, unknown>): string {
  const [prefix = "", body = ""] = cursor.split(/[~.]/);
  const state = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Record<string, unknown>;
  const forged = Buffer.from(JSON.stringify(edit(state))).toString("base64url");
  return `${prefix}~${forged}.${sha256Hex(`${prefix}~${forged}`).slice(0, 16)}`;
}

/** Puts back the store's contents as in `backup` (a copy of its data), as a restore of a backup does. */
function restore(rig: TestRig, backup: ReadonlyMap<SnapshotKey, Snapshot>): void {
  rig.snapshots.data.clear();
  for (const [key, s] of structuredClone(backup)) rig.snapshots.data.set(key, s);
}

describe("conformSnapshots cursors", () => {
  it("refuses a cursor made under another PII mode, before anything is read or written, naming both modes", async () => {
    const { rig, first } = await stoppedPass(HASH);
    const stored = structuredClone(rig.snapshots.data);
    const scans = rig.snapshots.scanCalls;
    for (const policy of [REDACT, { mode: "full" } as const]) {
      const error = await conformSnapshots({ ...rig.deps, pii: policy }, { pageSize: 5, cursor: first.cursor }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: "ConformCursorError", problem: "mode" });
      expect((error as Error).message).toBe(
        `Conform cursor refused: it was made under PII mode hash, and the mode is now ${policy.mode}: the snapshots before it ` +
          `were brought to hash, not to ${policy.mode}; start the pass over without it`,
      );
    }
    expect(rig.snapshots.scanCalls).toBe(scans);
    expect(rig.snapshots.data).toEqual(stored);
    // Under hash it would have skipped the hashes that redact replaces; under its own mode it goes on.
    expect(await conformSnapshots({ ...rig.deps, pii: HASH }, { pageSize: 5, cursor: first.cursor })).toMatchObject({ outcome: "complete" });
  });

  it("refuses a cursor cut short or edited, and one of an earlier version (no PII mode in it) or no cursor at all, by name", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    const [prefix = "", body = "", sum = ""] = first.cursor.split(/[~.]/);
    const decoded = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Record<string, unknown>;
    const edited = Buffer.from(JSON.stringify({ ...decoded, mode: "hash" })).toString("base64url");
    for (const cursor of [first.cursor.slice(0, -1), first.cursor.slice(0, 40), `${prefix}~${edited}.${sum}`, `${prefix}~${body}`, `${first.cursor}x`]) {
      await expect(conformSnapshots(deps, { pageSize: 5, cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "damaged" });
    }
    // An earlier version's cursors: the store's own, and one in the quarantine walk.
    const storeCursor = (await rig.snapshots.scan({ limit: 5 })).cursor as string;
    const quarantineCursor = `quarantine~${Buffer.from(JSON.stringify({ tenant: deps.tenant, snapshots: storeCursor, after: "q1" })).toString("base64url")}`;
    for (const cursor of [storeCursor, quarantineCursor, "garbage"]) {
      await expect(conformSnapshots(deps, { pageSize: 5, cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "unversioned" });
    }
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).toMatchObject({ outcome: "complete" });
  });

  it("refuses a cursor made by a version that masks other personal fields", async () => {
    const { deps, first } = await stoppedPass(REDACT);
    vi.resetModules();
    vi.doMock("../../shared/bridge/pii.js", async (original) => {
      const pii = await original<{ PERSONAL_FIELDS: readonly string[] }>();
      return { ...pii, PERSONAL_FIELDS: [...pii.PERSONAL_FIELDS, "merchant_name"] };
    });
    try {
      const later = await import("../../shared/bridge/conform.js");
      await expect(later.conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "fields" });
    } finally {
      vi.doUnmock("../../shared/bridge/pii.js");
    }
  });

  it("refuses a cursor made by a version that masked only the listed paths, not the record's rule inside their parents", async () => {
    const { deps, first } = await stoppedPass(REDACT);
    /** `first.cursor` as a version whose fingerprint was `fields` would have printed it (a valid checksum). */
    const printedWith = (fields: string): string => reprinted(first.cursor, (state) => ({ ...state, fields }));
    // The version before took the fingerprint of the list alone: both its own list's and this list's are refused.
    for (const fields of ["1a389b894d18fd7d", sha256Hex(PERSONAL_FIELDS.join("\n")).slice(0, 16)]) {
      await expect(conformSnapshots(deps, { pageSize: 5, cursor: printedWith(fields) })).rejects.toMatchObject({ name: "ConformCursorError", problem: "fields" });
    }
    // The forgery itself is sound: with this version's fingerprint the cursor goes on.
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: reprinted(first.cursor, (state) => state) })).toMatchObject({ outcome: "complete" });
  });

  it("refuses as damaged a cursor with a valid checksum whose state is not whole: an unknown mode, no pass id, no place to go on from", async () => {
    const { deps, first } = await stoppedPass(REDACT);
    const edits = [
      (state: Record<string, unknown>) => ({ ...state, mode: "mask" }),
      ({ pass: _pass, ...state }: Record<string, unknown>) => state,
      ({ snapshots: _snapshots, after: _after, ...state }: Record<string, unknown>) => state,

      // A place or a fingerprint that is not text: checked as damaged, not taken to the store or the comparisons.
      ...(["tenant", "fields", "snapshots", "after"] as const).map((member) => (state: Record<string, unknown>) => ({ ...state, [member]: 5 })),
    ];
    for (const edit of edits) {
      await expect(conformSnapshots(deps, { pageSize: 5, cursor: reprinted(first.cursor, edit) })).rejects.toMatchObject({ name: "ConformCursorError", problem: "damaged" });
    }
  });

  it("refuses a cursor once the store was restored from a backup taken before it was handed out, and takes it in one taken after", async () => {
    const { rig, deps, before, first } = await stoppedPass(REDACT);
    const after = structuredClone(rig.snapshots.data);
    // The backup from before the pass holds every snapshot in cleartext: the cursor would skip the first 15.
    restore(rig, before);
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "superseded" });
    expect(rig.snapshots.data).toEqual(before);
    restore(rig, after);
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("takes only the cursor of the last pass that stopped: a run from an earlier one is refused, one from the latest goes on", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    const second = await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor, deadline: rig.clock.now() + 1_500 });
    expect(second).toMatchObject({ outcome: "deadline", cursor: expect.any(String) });
    expect(second.cursor).not.toBe(first.cursor);
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "superseded" });
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: second.cursor })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("refuses the cursor of an earlier stop once a pass completed since: a switch away and back after it would leave cleartext behind it", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    expect(await conformSnapshots(deps, { pageSize: 5 })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
    // The mode goes to full and back: a cycle under full writes the first transaction (before the cursor) in cleartext.
    const firstKey = [...rig.snapshots.data.keys()].sort()[0] as string;
    rig.provider.changeTransaction(firstKey.slice("transaction:".length), { memo: "changed" });
    await pollTransactions({ ...rig.deps, pii: { mode: "full" } });
    expect(cleartextIn(rig)).toBeGreaterThan(0);
    // Back under redact, the old cursor (shell history, an old ticket) would skip it.
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "superseded" });
    expect(await conformSnapshots(deps, { pageSize: 5 })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("refuses the cursor of a pass a cycle under another mode superseded: a switch away and back would leave the cleartext written behind it", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    expect(first.passEntry[0]?.object).toEqual({ pass: expect.stringMatching(/^[0-9a-f]{16}$/), mode: "redact" });
    // The mode goes to full: its runtime supersedes the pass before its first cycle, which writes the first
    // transaction (before the cursor) in cleartext.
    const full = { ...rig.deps, pii: { mode: "full" } as const };
    await supersedeConformPassOnModeChange(full);
    const firstKey = [...rig.snapshots.data.keys()].sort()[0] as string;
    rig.provider.changeTransaction(firstKey.slice("transaction:".length), { memo: "changed" });
    await pollTransactions(full);
    expect(cleartextIn(rig)).toBeGreaterThan(0);
    // Back under redact, the cursor would skip it.
    await supersedeConformPassOnModeChange(deps);
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "superseded" });
    expect(await conformSnapshots(deps, { pageSize: 5 })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("supersedes a pass id stored without a mode (by an earlier version), whatever the mode now", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    const [entry] = first.passEntry;
    if (entry === undefined) throw new Error("no pass entry");
    rig.snapshots.data.set(entry.key, { ...entry, object: { pass: entry.object["pass"] } });
    await supersedeConformPassOnModeChange(deps);
    const stored = rig.snapshots.data.get(entry.key)?.object;
    expect(stored).toEqual({ pass: expect.any(String), mode: "redact" });
    expect(stored?.["pass"]).not.toBe(entry.object["pass"]);
    // At info, in the words docs/runbook.md (Switching the PII mode) quotes.
    expect(rig.logger.lines.filter((l) => l.message.startsWith("PII mode changed since"))).toEqual([
      {
        level: "info",
        message: "PII mode changed since the last conform-pii pass stored its id: a cursor it printed is refused from now on",
        attributes: { from: "unrecorded", mode: "redact" },
      },
    ]);
    await expect(conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).rejects.toMatchObject({ name: "ConformCursorError", problem: "superseded" });
  });

  it("reads the pass id and writes nothing while the mode is the one it was stored under, or when no pass ever stopped", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    const writes = recordWrites(rig);
    const reads = rig.snapshots.getManyCalls;
    await supersedeConformPassOnModeChange(deps);
    expect(rig.snapshots.getManyCalls).toBe(reads + 1);
    expect(writes).toEqual([]);
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).toMatchObject({ outcome: "complete" });

    const fresh = await rigWrittenUnderFull(3);
    const freshWrites = recordWrites(fresh);
    for (const mode of ["redact", "full"] as const) await supersedeConformPassOnModeChange({ ...fresh.deps, pii: { mode } });
    expect(freshWrites).toEqual([]);
    expect(fresh.snapshots.data.has("transaction:~conform-pass")).toBe(false);
  });

  it("writes nothing more on completion when no pass ever stopped with a cursor", async () => {
    const rig = await rigWrittenUnderFull(3);
    const writes = recordWrites(rig);
    await conformSnapshots({ ...rig.deps, pii: REDACT });
    expect(writes.flat()).not.toContain("transaction:~conform-pass");
  });
});

describe("conformSnapshots' store calls held to the pass's deadline", () => {
  /**
   * Makes the rig's store stop the calls of `method` given a deadline that `stops` picks (by their keys and their
   * number among that method's calls, from 1), as the DynamoDB adapter does under a throttled table: the clock moves to
   * the deadline and the call rejects. A call given none goes through. Returns the options every call of either
   * method was given.
   */
  function stopAtDeadline(rig: TestRig, method: "getMany" | "putMany", stops: (keys: readonly SnapshotKey[], call: number) => boolean): StoreCallOptions[] {
    const given: StoreCallOptions[] = [];
    const calls = { getMany: 0, putMany: 0 };
    const stopped = (called: "getMany" | "putMany", keys: readonly SnapshotKey[], options: StoreCallOptions): Error | undefined => {
      given.push(options);
      calls[called] += 1;
      if (called !== method || options.deadline === undefined || !stops(keys, calls[called])) return undefined;
      rig.clock.ms = Math.max(rig.clock.ms, options.deadline);
      return method === "getMany" ? new ReadDeadlineExceededError("not read", options.deadline) : new WriteDeadlineExceededError("not written", options.deadline);
    };
    const get = rig.snapshots.getMany.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "getMany").mockImplementation(async (keys, options = {}) => {
      const error = stopped("getMany", keys, options);
      if (error) throw error;
      return get(keys);
    });
    const put = rig.snapshots.putMany.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "putMany").mockImplementation(async (snapshots, options = {}) => {
      const error = stopped("putMany", snapshots.map((s) => s.key), options);
      if (error) throw error;
      return put(snapshots);
    });
    return given;
  }

  it("hands every snapshot read and write the pass's deadline plus a cycle's grace", async () => {
    const rig = await rigWrittenUnderFull(20);
    const given = stopAtDeadline(rig, "getMany", () => false);
    const scan = rig.snapshots.scan.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "scan").mockImplementation(async (options) => {
      rig.clock.advance(1_000);
      return scan(options);
    });
    const deadline = rig.clock.now() + 2_500;

    // Reads the pass id, writes pages, stops with a cursor (writing a pass id).
    expect(await conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 5, deadline })).toMatchObject({ outcome: "deadline", cursor: expect.any(String) });

    expect(given.length).toBeGreaterThan(2);
    expect(given).toEqual(given.map(() => ({ deadline: deadline + DEFAULT_DEADLINE_GRACE_MS })));
  });

  it("ends `deadline` when a page's write stops at that deadline, with a cursor at that page, from which a run finishes", async () => {
    const rig = await rigWrittenUnderFull(20);
    const deps = { ...rig.deps, pii: REDACT };
    const total = rig.snapshots.data.size;
    // The first page's write goes through, the second's stops; the pass id's after it goes through.
    const given = stopAtDeadline(rig, "putMany", (keys, call) => call === 2 && !keys.includes("transaction:~conform-pass"));

    const report = await conformSnapshots(deps, { pageSize: 5, deadline: rig.clock.now() + 60_000 });

    expect(report).toMatchObject({ outcome: "deadline", scanned: 5, rewritten: 5, cursor: expect.any(String) });
    expect(rig.logger.lines).toContainEqual(expect.objectContaining({ level: "warn", message: "snapshot write stopped retrying at the conform pass's deadline; stopping" }));
    expect(given.filter((options) => options.deadline !== undefined)).toHaveLength(given.length);
    expect(rig.snapshots.vacuumCalls).toBe(0);
    vi.restoreAllMocks();
    // The page whose write stopped is read again, and the entry of the stopped pass's id with it.
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: report.cursor })).toMatchObject({ outcome: "complete", scanned: total - 5 + 1 });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("ends `deadline` when its read of the pass id stops at that deadline, handing back the cursor it was given", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    const stored = structuredClone(rig.snapshots.data);
    stopAtDeadline(rig, "getMany", () => true);

    const report = await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor, deadline: rig.clock.now() + 60_000 });

    expect(report).toMatchObject({ outcome: "deadline", scanned: 0, rewritten: 0, cursor: first.cursor });
    expect(rig.snapshots.data).toEqual(stored);
    vi.restoreAllMocks();
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor })).toMatchObject({ outcome: "complete" });
    expect(cleartextIn(rig)).toBe(0);
  });

  it.each([
    ["past", 60_000],
    ["at", 0],
  ])("writes no page whose scan answered %s that deadline (a container frozen in it, thawed later): ends `deadline` with a cursor at that page", async (_, pastHeld) => {
    const rig = await rigWrittenUnderFull(20);
    const deps = { ...rig.deps, pii: REDACT };
    const total = rig.snapshots.data.size;
    const deadline = rig.clock.now() + 60_000;
    const held = deadline + DEFAULT_DEADLINE_GRACE_MS;
    const scan = rig.snapshots.scan.bind(rig.snapshots);
    let scans = 0;
    vi.spyOn(rig.snapshots, "scan").mockImplementation(async (options) => {
      scans += 1;
      // The second page answers once the container thaws, the leases lapsed: a later cycle may have written since.
      if (scans === 2) rig.clock.ms = held + pastHeld;
      return scan(options);
    });
    /** When each page's write was started (the pass id's aside). */
    const pageWritesAt: number[] = [];
    const put = rig.snapshots.putMany.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "putMany").mockImplementation(async (snapshots) => {
      if (!snapshots.some((s) => s.key === "transaction:~conform-pass")) pageWritesAt.push(rig.clock.now());
      return put(snapshots);
    });

    const report = await conformSnapshots(deps, { pageSize: 5, deadline });

    expect(pageWritesAt).toHaveLength(1);
    expect(pageWritesAt.every((at) => at < held)).toBe(true);
    expect(report).toMatchObject({ outcome: "deadline", scanned: 5, rewritten: 5, cursor: expect.any(String) });
    vi.restoreAllMocks();
    // The page not written is read again, and the entry of the stopped pass's id with it.
    expect(await conformSnapshots(deps, { pageSize: 5, cursor: report.cursor })).toMatchObject({ outcome: "complete", scanned: total - 5 + 1 });
    expect(cleartextIn(rig)).toBe(0);
  });

  it("ends `deadline` without a cursor, not `complete`, when a completing pass's write of a new pass id stops at that deadline", async () => {
    const { rig, deps, first } = await stoppedPass(REDACT);
    vi.restoreAllMocks();
    stopAtDeadline(rig, "putMany", (keys) => keys.includes("transaction:~conform-pass"));

    const report = await conformSnapshots(deps, { pageSize: 5, cursor: first.cursor, deadline: rig.clock.now() + 60_000 });

    expect(report.outcome).toBe("deadline");
    expect(report.cursor).toBeUndefined();
  });

  it.each([
    ["the read of the pass id", "getMany"],
    ["a page's write", "putMany"],
  ] as const)("passes on a store error other than a deadline's from %s, not taking it for a stop", async (_, method) => {
    const rig = await rigWrittenUnderFull(3);
    vi.spyOn(rig.snapshots, method).mockRejectedValue(new Error("disk full"));
    await expect(conformSnapshots({ ...rig.deps, pii: REDACT }, { deadline: rig.clock.now() + 60_000 })).rejects.toThrow("disk full");
  });

  it("passes on a store error other than a deadline's from the write of the pass id a stopped pass hands out", async () => {
    const rig = await rigWrittenUnderFull(20);
    const put = rig.snapshots.putMany.bind(rig.snapshots);
    vi.spyOn(rig.snapshots, "putMany").mockImplementation(async (snapshots) => {
      if (snapshots.some((s) => s.key === "transaction:~conform-pass")) throw new Error("disk full");
      return put(snapshots);
    });
    const controller = new AbortController();
    rig.snapshots.scan = abortingOnSecondCall(rig.snapshots.scan.bind(rig.snapshots), controller).call;
    await expect(conformSnapshots({ ...rig.deps, pii: REDACT }, { pageSize: 5, interrupt: controller.signal })).rejects.toThrow("disk full");
  });
});
