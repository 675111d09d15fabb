/** cycleDeps, and the page bound a cycle keeps without `maxPages` (CycleOptions: @default 10000). */
import { describe, expect, it } from "vitest";
import { cycleDeps, pollTransactions, requireObjectWithId, type ItemValidator } from "../../shared/bridge/index.js";
import { makeRig } from "./fakes.js";

describe("cycleDeps", () => {
  it("hands both cycles every shared part (the event source, the validators), and the card switches to the card cycle alone", () => {
    const { provider, emitCardCreated: _unused, ...common } = makeRig().deps;
    const card: ItemValidator = (raw) => requireObjectWithId(raw);
    const shared = { ...common, source: "acme.cards", validators: { card } };
    const { transactions, cards } = cycleDeps({ ...shared, provider, emitCardCreated: true, cardDetails: true });
    expect(transactions).toStrictEqual({ ...shared, provider });
    expect(cards).toStrictEqual({ ...shared, provider, emitCardCreated: true, cardDetails: true });
  });
});

describe("pollTransactions without maxPages", () => {
  it("lists up to 10000 pages per pull status, as documented, then stops with outcome page_limit", async () => {
    const rig = makeRig();
    // Two transactions pending at a time (so a page of one says has_next), the next arriving as one is acknowledged:
    // a backlog of 10002 pages of one without the fake filtering thousands of transactions per call.
    let added = 0;
    const arrive = () => {
      rig.provider.addTransaction();
      added += 1;
    };
    arrive();
    arrive();
    const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
    rig.provider.acknowledgeTransactions = async (ids) => {
      const answer = await acknowledge(ids);
      rig.provider.transactions.splice(0, rig.provider.transactions.length, ...rig.provider.pending());
      if (added < 10_002) arrive();
      return answer;
    };
    const report = await pollTransactions(rig.deps, { pageSize: 1, readAhead: false });
    expect(report.outcome).toBe("page_limit");
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.client_sync_status === "not_synced")).toHaveLength(10_000);
  }, 60_000);
});
