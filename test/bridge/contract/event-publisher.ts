/**
 * Contract every EventPublisher adapter must pass. `delivered` reads back what reached the sink
 * (a file, a mocked PutEvents), so the suite checks the routing fields and the detail survive intact.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BridgeEvent, BridgeEventDetail, EventPublisher } from "../../../shared/bridge/ports.js";

/** One delivered event as seen at the sink. */
export interface DeliveredEvent {
  readonly source: string;
  readonly detailType: string;
  readonly detail: BridgeEventDetail;
}

/** What a factory hands the suite. */
export interface EventPublisherFixture {
  readonly publisher: EventPublisher;
  readonly delivered: () => Promise<DeliveredEvent[]>;
  readonly cleanup: () => Promise<void>;
}

/** A valid event for contract tests. */
export function sampleEvent(n: number, source = "qashio.bridge"): BridgeEvent {
  const id = `00000000-0000-8000-8000-${n.toString(16).padStart(12, "0")}`;
  return {
    source,
    detailType: "transaction.created",
    time: "2025-01-15T10:00:00.000Z",
    detail: {
      id,
      type: "transaction.created",
      schema_version: "1.0",
      tenant: "acme",
      occurred_at: "2025-01-15T10:00:00.000Z",
      subject: { type: "transaction", id: `txn-${n}`, qashio_id: `CT${n}`, sequence: 1 },
      data: { object: { id: `txn-${n}`, qashio_id: `CT${n}`, amount: n, merchant_name: "Café ☕" } },
    },
  };
}

/**
 * Registers the EventPublisher contract for one adapter.
 *
 * @example
 * ```ts
 * describeEventPublisherContract("JsonlEventPublisher", async () => ({ publisher, delivered: () => readLines(file), cleanup }));
 * ```
 */
export function describeEventPublisherContract(name: string, factory: () => Promise<EventPublisherFixture>): void {
  describe(`EventPublisher contract: ${name}`, () => {
    let fixture: EventPublisherFixture;
    beforeEach(async () => {
      fixture = await factory();
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("delivers each event with its source, detail type and detail intact", async () => {
      const events = [sampleEvent(1), sampleEvent(2, "acme.bridge")];
      const { failed } = await fixture.publisher.publish(events);
      expect(failed).toEqual([]);
      const delivered = await fixture.delivered();
      expect(delivered).toHaveLength(2);
      for (const event of events) {
        expect(delivered).toContainEqual({ source: event.source, detailType: event.detailType, detail: event.detail });
      }
    });

    it("delivers batches larger than one backend request", async () => {
      const events = Array.from({ length: 23 }, (_, i) => sampleEvent(i + 1));
      const { failed } = await fixture.publisher.publish(events);
      expect(failed).toEqual([]);
      const ids = (await fixture.delivered()).map((d) => d.detail.id).sort();
      expect(ids).toEqual(events.map((e) => e.detail.id).sort());
    });

    it("does nothing for an empty batch", async () => {
      expect((await fixture.publisher.publish([])).failed).toEqual([]);
      expect(await fixture.delivered()).toEqual([]);
    });

    it("delivers a re-sent event again with the same detail id (deduplication is the consumer's)", async () => {
      await fixture.publisher.publish([sampleEvent(7)]);
      await fixture.publisher.publish([sampleEvent(7)]);
      const delivered = await fixture.delivered();
      expect(delivered.map((d) => d.detail.id)).toEqual([sampleEvent(7).detail.id, sampleEvent(7).detail.id]);
    });
  });
}
