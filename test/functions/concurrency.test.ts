import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import type { PollResult } from "../../shared/aws/handlers.js";
import { createHarness, subjectIds, type Harness } from "./support/harness.js";

const ROUNDS = 20;

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ seed: 3 });
});
afterEach(async () => h.close());

describe("concurrent invocations against one tenant", () => {
  // The slowest test of the AWS runtime (~8 s): CI runs it once, not again in the Node 24 pass.
  it.skipIf(process.env.QASHIO_SKIP_SLOW === "1")("never presents a refresh token twice and loses no change across 20 rounds of 2 transaction pollers and 1 card poller", async () => {
    const data = h.sandbox.control.company(h.companyId);
    if (data === undefined) throw new Error("no company");
    const state = h.sandbox.control.state;
    const memos = new Map<string, string>();
    const statusMoves: { cardId: string; status: string }[] = [];
    let containers = { txA: h.poller("transactions"), txB: h.poller("transactions"), cards: h.poller("cards") };
    const results: PollResult[] = [];
    // Cards the dashboard can move between Active and Suspended: a Terminated or Cancelled one stays so (spec-gaps).
    const movable = data.cards.filter((c) => c.status === "Active" || c.status === "Suspended").slice(0, 3);
    expect(movable).toHaveLength(3);

    for (let round = 0; round < ROUNDS; round += 1) {
      // Provider activity between cycles: new spend, an edit to an already-published transaction, a card status move.
      state.createTransactions(data, { count: 2 });
      const published = [...subjectIds(h.published, "transaction.created")];
      const edited = published[round % Math.max(1, published.length)];
      if (edited !== undefined && round > 0) {
        const memo = `edited in round ${round}`;
        state.patchTransaction(data, edited, { memo });
        memos.set(edited, memo);
      }
      const card = movable[round % 3];
      if (card !== undefined && round > 0 && round % 2 === 0) {
        const status = card.status === "Suspended" ? "Active" : "Suspended";
        state.setCardStatus(card, status);
        statusMoves.push({ cardId: card.id, status });
      }
      // Every third round the access token has expired, so all three containers want a refresh at once.
      if (round % 3 === 2) h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
      // Now and then Lambda starts fresh containers (cold start: no token in memory).
      if (round % 5 === 4) containers = { txA: h.poller("transactions"), txB: h.poller("transactions"), cards: h.poller("cards") };

      results.push(...(await Promise.all([containers.txA(), containers.txB(), containers.cards()])));
    }
    // A transaction poller that skipped in the last round leaves nothing behind once one more cycle runs.
    results.push(await containers.txA());

    expect(results.filter((r) => r.kind === "transactions" && r.status === "completed").length).toBeGreaterThanOrEqual(ROUNDS);
    expect(results.filter((r) => r.kind === "cards").every((r) => r.status === "completed")).toBe(true);

    // Token safety: refreshes happened (tokens expired), each refresh token was presented once, the family lives.
    expect(h.refreshTokensPresented.length).toBeGreaterThanOrEqual(Math.floor(ROUNDS / 3));
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(await h.familyStillValid()).toBe(true);

    // No change lost: every transaction has its created event, every edit its changed event, every status move its event.
    expect(h.pendingAtProvider()).toBe(0);
    const everyTransaction = data.transactions.all().filter((t) => subjectIds(h.published).has(t.id) || t.client_sync_status !== "synced");
    expect(everyTransaction.length).toBeGreaterThan(ROUNDS * 2);
    for (const [id, memo] of memos) {
      const seen = h.published.some(
        (e) => e.detailType === "transaction.changed" && e.detail.subject.id === id && e.detail.data.changes?.some((c) => c.path === "/memo" && c.after === memo),
      );
      expect(seen, `change of ${id} to "${memo}"`).toBe(true);
    }
    for (const move of statusMoves) {
      const seen = h.published.some(
        (e) => e.detail.subject.id === move.cardId && e.detail.data.changes?.some((c) => c.path === "/status" && c.after === move.status),
      );
      expect(seen, `card ${move.cardId} -> ${move.status}`).toBe(true);
    }
    // At-least-once: a re-delivered change carries the same event id, and an id never names two different changes.
    // A card moving to the same status again is a new change (new id), so a card's content may have as many ids as
    // it had such moves; every transaction change here is unique (new spend, a memo naming its round).
    const idsByContent = new Map<string, { ids: Set<string>; card: boolean; cardId: string; status: unknown }>();
    const contentById = new Map<string, Set<string>>();
    for (const e of h.published) {
      const key = JSON.stringify([e.detailType, e.detail.subject.id, e.detail.data.changes ?? null]);
      const status = e.detail.data.changes?.find((c) => c.path === "/status")?.after;
      const entry = idsByContent.get(key) ?? { ids: new Set(), card: e.detail.subject.type === "card", cardId: e.detail.subject.id, status };
      idsByContent.set(key, entry);
      entry.ids.add(e.detail.id);
      contentById.set(e.detail.id, (contentById.get(e.detail.id) ?? new Set()).add(key));
    }
    for (const contents of contentById.values()) expect(contents.size).toBe(1);
    for (const { ids, card, cardId, status } of idsByContent.values()) {
      const occurrences = card ? statusMoves.filter((m) => m.cardId === cardId && m.status === status).length : 1;
      expect(ids.size).toBeLessThanOrEqual(Math.max(1, occurrences));
    }
  });
});
