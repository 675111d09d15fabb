import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { keptCount, redriveQuarantined, redrivenCount } from "../../shared/bridge/redrive.js";
import { makeStrictRuleRig, seededRandom, slowReadsByQashioId } from "./fakes.js";
import { canonical } from "./invariants.js";
import { applyPii } from "../../shared/bridge/pii.js";

/** An operator drill after a bad validation rule: hundreds of records, short runs, cycles and a crash between them. */
describe("redriveQuarantined drill", () => {
  it("re-drives 700 records over short runs with cycles and a failed snapshot write between them: every transaction stored, one event id per state", async () => {
    const { rig, rule } = makeStrictRuleRig();
    const bad = Array.from({ length: 600 }, () => rig.provider.addTransaction({ memo: "REFUND?" }));
    await pollTransactions(rig.deps);
    const failing = Array.from({ length: 100 }, () => rig.provider.addTransaction());
    rig.publisher.reject = () => "AccessDeniedException: no";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect(rig.quarantine.records.size).toBe(700);
    rule.strict = false;
    slowReadsByQashioId(rig, 100);
    const random = seededRandom(11);
    let crashed = false;
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    let runs = 0;
    const all = [...bad, ...failing];
    for (; runs < 200 && rig.quarantine.records.size > 0; runs += 1) {
      if (runs === 3) {
        // between runs: a cycle sees some changed
        for (const t of all.slice(0, 20)) rig.provider.changeTransaction(t.id, { memo: `edited ${runs}` });
        await pollTransactions(rig.deps);
      }
      if (runs === 5 && !crashed) {
        // A run writes two batches' snapshots (pageSize 10, 20 read in its time): the second write fails.
        let n = 0;
        rig.snapshots.putMany = async (snapshots) => {
          if (++n === 2) {
            crashed = true;
            throw new Error("disk full");
          }
          return putMany(snapshots);
        };
      } else rig.snapshots.putMany = putMany;
      try {
        const r = await redriveQuarantined(rig.deps, { pageSize: 10, deadline: rig.clock.now() + 2_000, random });
        expect(redrivenCount(r) + keptCount(r)).toBe(r.considered);
      } catch (error) {
        // Only the crash stops a run: anything else (a failed expect above included) fails the drill.
        expect(runs).toBe(5);
        expect((error as Error).cause).toMatchObject({ message: "disk full" });
      }
      rig.clock.advance(60_000);
    }
    expect(crashed, "the snapshot write of run 5 failed").toBe(true);
    expect(rig.quarantine.records.size).toBe(0);
    // every transaction's snapshot equals its current state (the 20 edited between runs included)
    for (const t of all) {
      const snap = rig.snapshots.data.get(`transaction:${t.id}`);
      expect(snap, t.id).toBeDefined();
      const { client_sync_status: _sync, ...current } = t;
      expect(canonical(snap?.object), t.id).toBe(canonical(applyPii(current, { mode: "redact" })));
    }
    expect(all.slice(0, 20).every((t) => String(t["memo"]).startsWith("edited"))).toBe(true);
    // no two distinct event ids for the same subject+sequence
    const seen = new Map<string, string>();
    for (const e of rig.publisher.events) {
      const k = `${e.detail.subject.id}#${e.detail.subject.sequence}`;
      const prev = seen.get(k);
      if (prev !== undefined) expect(prev, k).toBe(e.detail.id);
      seen.set(k, e.detail.id);
    }
    expect(runs).toBeLessThan(200);
  });
});
