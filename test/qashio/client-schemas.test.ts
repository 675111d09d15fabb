/**
 * Schemas the client builds per call: none on a read the bridge makes once per item. A zod schema built per call is
 * compiled per call too (its conformance predicate, shared/qashio/schemas/conform.ts), about 120 us of CPU each time.
 */
import { describe, expect, it, vi } from "vitest";
import type * as Envelope from "../../shared/qashio/schemas/envelope.js";

const built = vi.hoisted(() => ({ envelopes: 0 }));
vi.mock("../../shared/qashio/schemas/envelope.js", async (importOriginal) => {
  const original = await importOriginal<typeof Envelope>();
  return {
    ...original,
    successEnvelope: (...args: Parameters<typeof original.successEnvelope>) => {
      built.envelopes += 1;
      return original.successEnvelope(...args);
    },
  };
});

const { QashioClient } = await import("../../shared/qashio/client.js");
const { StaticTokenProvider } = await import("../../shared/qashio/auth/token-provider.js");
const { CARD_ID, erpCardDetailFixture } = await import("./schemas/fixtures.js");
const { captureLogger, fakeClock, ok, scriptedFetch } = await import("./helpers.js");

describe("QashioClient schemas", () => {
  it("readErpCard (the card walk's read of every card with card details) builds no envelope schema per call", async () => {
    const reads = 3;
    const fetch = scriptedFetch(...Array.from({ length: reads }, () => ok(erpCardDetailFixture())));
    const client = new QashioClient({
      baseUrl: "https://api.example.test",
      tokenProvider: new StaticTokenProvider("access-1"),
      fetch,
      clock: fakeClock(),
      logger: captureLogger(),
    });
    const before = built.envelopes;
    for (let i = 0; i < reads; i++) {
      const page = await client.readErpCard(CARD_ID);
      expect(page.data).toHaveLength(1);
      expect(page.invalid).toEqual([]);
    }
    expect(built.envelopes - before).toBe(0);
  });
});
