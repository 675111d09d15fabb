/**
 * CardDetailReads on its own, with ports the test drives: what a page's detail reads make of an answer the bridge cannot
 * take, and the log lines an operator reads when reads fail, find no card, or are not started by the deadline.
 */
import { describe, expect, it } from "vitest";
import { CardDetailReads, isViewChange, withLastConfiguration, type CardDetailPorts } from "../../shared/bridge/card-details.js";
import { cardKey } from "../../shared/bridge/card-keys.js";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import type { ProviderPage } from "../../shared/bridge/provider.js";
import type { ValidationResult } from "../../shared/bridge/validate.js";
import { RecordingLogger } from "./fakes.js";

const providerError = (status: number) => Object.assign(new Error(String(status)), { name: "ProviderError", status });

/** A card is valid when it has a string id and is not marked `bad`. */
const validateCard = (raw: unknown): ValidationResult => {
  const card = raw as Record<string, unknown>;
  if (typeof card["id"] !== "string") return { success: false, reason: "id: missing" };
  return card["bad"] === true ? { success: false, reason: "status: not a string" } : { success: true, data: card };
};

function reads(readCard: (id: string) => Promise<ProviderPage>, pastDeadline: () => boolean = () => false) {
  const logger = new RecordingLogger();
  const ports: CardDetailPorts = {
    logger,
    random: () => 0,
    validateCard,
    pastDeadline,
    stopRequested: () => false,
    outOfTime: () => false,
    readCard: (_step, id) => readCard(id),
    readSnapshots: () => Promise.resolve(new Map()),
  };
  return { details: new CardDetailReads(ports), logger };
}

const listed = (...ids: string[]) => ids.map((id) => ({ raw: { id, status: "Active" } }));

describe("CardDetailReads", () => {
  it("quarantines a read that answers no card under the card asked for, as listed, and takes the card as listed", async () => {
    const { details } = reads(() => Promise.resolve({ data: [] }));
    const [entry] = await details.read(listed("c1"), false);
    expect(entry).toMatchObject({ asListed: true, rejectedDetail: { cardId: "c1", raw: { id: "c1", status: "Active" }, reason: "(root): the card read answered no card" } });
  });

  it("quarantines a read that answers a card failing validation with the validator's reason", async () => {
    const { details } = reads((id) => Promise.resolve({ data: [{ id, bad: true }] }));
    const [entry] = await details.read(listed("c1"), false);
    expect(entry).toMatchObject({ asListed: true, rejectedDetail: { cardId: "c1", raw: { id: "c1", bad: true }, reason: "status: not a string" } });
  });

  it("quarantines a read whose card the client's schema rejected as that answer, with the client's reason, not the list's view", async () => {
    const answer = { id: "c1", status: "Active", purchase_limits: "none" };
    const { details } = reads(() => Promise.resolve({ data: [], invalid: [{ index: 0, raw: answer, issues: [{ path: "purchase_limits", message: "Expected object" }] }] }));
    const [entry] = await details.read(listed("c1"), false);
    expect(entry).toMatchObject({ asListed: true, rejectedDetail: { cardId: "c1", raw: answer, reason: "purchase_limits: Expected object" } });
  });

  it("warns of a failed read naming the card, the error and its status, and takes the card as listed", async () => {
    const { details, logger } = reads(() => Promise.reject(providerError(503)));
    expect(await details.read(listed("c1"), false)).toMatchObject([{ asListed: true }]);
    expect(logger.lines).toContainEqual({
      level: "warn",
      message: "card detail read failed; the card is taken as listed, its configuration as last read",
      attributes: { cardId: "c1", error: "ProviderError", status: 503 },
    });
  });

  it("says once that the walk takes cards as listed when every read of a page failed, and not again on the pages after", async () => {
    const { details, logger } = reads(() => Promise.reject(providerError(503)));
    await details.read(listed("c1", "c2", "c3", "c4"), false);
    await details.read(listed("c5"), false);
    expect(logger.lines.filter((l) => l.message.startsWith("card detail reads of a page all failed"))).toEqual([
      { level: "warn", message: "card detail reads of a page all failed; the rest of this walk takes cards as listed", attributes: { failed: 4 } },
    ]);
  });

  it("does not end details for the walk when reads of a page fail but one answered: the endpoint is up", async () => {
    const failing = new Set(["c2", "c3", "c4", "c5", "c6"]);
    const { details, logger } = reads((id) => (failing.has(id) ? Promise.reject(providerError(503)) : Promise.resolve({ data: [{ id, status: "Active" }] })));
    const page = await details.read(listed("c1", "c2", "c3", "c4", "c5", "c6"), false);
    expect(page.map((entry) => entry.asListed === true)).toEqual([false, true, true, true, true, true]);
    // Each of the five failures was a read made: none was skipped for an endpoint taken as down.
    expect(logger.lines.filter((l) => l.message.startsWith("card detail read failed"))).toHaveLength(5);
    expect(await details.read(listed("c7"), false)).toMatchObject([{ raw: { id: "c7" }, checked: { success: true } }]);
    expect(logger.lines.some((l) => l.message.startsWith("card detail reads of a page all failed"))).toBe(false);
  });

  it("does not read a listed card that fails validation: it stays as listed, with the validator's reason, for the page to quarantine", async () => {
    const asked: string[] = [];
    const { details } = reads((id) => {
      asked.push(id);
      return Promise.resolve({ data: [{ id, status: "Active" }] });
    });
    const [entry] = await details.read([{ raw: { id: "c1", bad: true } }], false);
    expect(entry).toEqual({ raw: { id: "c1", bad: true }, checked: { success: false, reason: "status: not a string" } });
    expect(asked).toEqual([]);
  });

  it("logs a card the read does not find (404) as taken as listed", async () => {
    const { details, logger } = reads(() => Promise.reject(providerError(404)));
    expect(await details.read(listed("c1"), false)).toMatchObject([{ asListed: true }]);
    expect(logger.lines).toContainEqual({ level: "info", message: "card listed but not found when read; taken as listed", attributes: { cardId: "c1" } });
  });

  it("warns of a first page's single read not started by the cycle deadline", async () => {
    let checks = 0;
    const { details, logger } = reads(
      (id) => Promise.resolve({ data: [{ id, status: "Active" }] }),
      () => (checks += 1) > 1,
    );
    expect(await details.read(listed("c1", "c2"), true)).toMatchObject([{ raw: { id: "c1" } }, { asListed: true }]);
    expect(logger.lines).toContainEqual({
      level: "warn",
      message: "card detail reads not started by the cycle deadline; those cards are taken as listed",
      attributes: { unstarted: 1 },
    });
  });
});

describe("CardDetailReads.withoutRecordedStatus", () => {
  /** Detail reads whose store holds `snapshots`, recording the keys of each snapshot read. */
  function fastPath(...snapshots: Snapshot[]) {
    const asked: (readonly SnapshotKey[])[] = [];
    const details = new CardDetailReads({
      logger: new RecordingLogger(),
      random: () => 0,
      validateCard,
      pastDeadline: () => false,
      stopRequested: () => false,
      outOfTime: () => false,
      readCard: () => Promise.reject(new Error("not read")),
      readSnapshots: (_step, keys) => {
        asked.push(keys);
        return Promise.resolve(new Map(snapshots.map((snapshot) => [snapshot.key, snapshot])));
      },
    });
    return { details, asked };
  }

  it("makes no snapshot read for a page without a valid card: a store call past the calls' deadline would end the cycle for nothing", async () => {
    const { details, asked } = fastPath();
    const page = [{ raw: { id: "c1", bad: true } }, { raw: { id: "c2" }, rejected: "status: Required" }];
    const { entries, skipped } = await details.withoutRecordedStatus(page, () => true);
    expect(entries.map((entry) => entry.raw)).toEqual(page.map((entry) => entry.raw));
    expect(skipped).toBe(0);
    expect(asked).toEqual([]);
  });

  it("counts as skipped only the cards `take` took: a copy listed again is left out but not counted twice", async () => {
    const { details, asked } = fastPath({ key: cardKey("c1"), hash: "h1", object: { id: "c1", status: "Suspended" }, updatedAt: "2026-12-01T00:00:00.000Z" });
    const taken = new Set<string>();
    const take = (id: string): boolean => {
      if (taken.has(id)) return false;
      taken.add(id);
      return true;
    };
    const suspended = { raw: { id: "c1", status: "suspended " } };
    const { entries, skipped } = await details.withoutRecordedStatus([suspended, suspended], take);
    expect(entries).toEqual([]);
    expect(skipped).toBe(1);
    expect(asked).toEqual([[cardKey("c1"), cardKey("c1")]]);
  });
});

describe("isViewChange", () => {
  const limits = { enabled: true, amount: 500 };

  it("takes a configuration object both sides carry for a real change, though the views differ (details off, the list showing it)", () => {
    const change = { path: "/purchase_limits", before: null, after: limits };
    expect(isViewChange(change, { id: "c1", purchase_limits: null }, { id: "c1", purchase_limits: limits }, false)).toBe(false);
  });

  it("takes a list member one side lacks for a real change, though the views differ", () => {
    const change = { path: "/card_nickname", before: null, after: "Travel" };
    expect(isViewChange(change, { id: "c1", purchase_limits: limits }, { id: "c1", card_nickname: "Travel" }, false)).toBe(false);
  });

  it("takes a configuration object only one side carries, the views differing, for the view change", () => {
    const change = { path: "/purchase_limits", before: limits, after: null };
    expect(isViewChange(change, { id: "c1", purchase_limits: limits }, { id: "c1" }, false)).toBe(true);
  });
});

describe("withLastConfiguration", () => {
  it("keeps a configuration object the list shows itself over the snapshot's, so a limit change it shows is published", () => {
    const object = { id: "c1", status: "Active", purchase_limits: { enabled: true, amount: 500 }, atm_configuration: { enabled: false } };
    const before = { key: cardKey("c1"), hash: "h1", object, updatedAt: "2026-12-01T00:00:00.000Z" };
    const listed = { id: "c1", status: "Active", purchase_limits: { enabled: true, amount: 700 } };
    expect(withLastConfiguration(listed, before, { mode: "full" })).toEqual({ ...listed, atm_configuration: { enabled: false } });
  });
});
