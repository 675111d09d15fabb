import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runbookSection } from "../runbook-section.js";
import { ReauthorizationNeededError } from "../../shared/bridge/index.js";
import type { MetricName } from "../../shared/bridge/ports.js";
import { createHarness, revokeFamily, type Harness } from "./support/harness.js";

/** What each card heartbeat of a fast-path tenant counts (infra/tenant-stack.ts). */
const CARD_HEARTBEATS: Readonly<Record<string, MetricName>> = {
  "Heartbeat-PollCards": "FullCardWalks",
  "Heartbeat-SuspendedCards": "FastPathCardWalks",
};

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

describe("the runbook names the card heartbeats a revoked token family stops on a fast-path tenant", () => {
  it("TokenFamilyRevoked names each heartbeat whose cycles the revoked ticks no longer start, and Heartbeat says why it fires", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    expect(await h.poller("transactions")().catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    h.output.length = 0;

    // A full walk's tick and a fast-path tick, as their schedules send them.
    for (const event of [{}, { mode: "suspended-only" as const }]) {
      expect(await h.poller("cards")(event).catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    }

    const stopped = Object.entries(CARD_HEARTBEATS)
      .filter(([, metric]) => !h.output.some((line) => line.includes(`"${metric}"`)))
      .map(([alarm]) => alarm);
    expect(stopped).toEqual(Object.keys(CARD_HEARTBEATS));
    const revoked = runbookSection("TokenFamilyRevoked");
    for (const alarm of stopped) expect(revoked).toContain(`\`${alarm}\``);
    // The Heartbeat section's word on the fast path's own alarm: a tick failing before its cycle starts counts none.
    const bullet = /^- `Heartbeat-SuspendedCards`[^]*?\n\n/m.exec(runbookSection("Heartbeat"))?.[0];
    expect(bullet).toMatch(/revoked token family/);
  });
});
