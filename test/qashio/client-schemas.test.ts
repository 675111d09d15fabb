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
const { CARD_ID, TRANSACTION_ID, erpCardDetailFixture, statementsByAccountFixture, transactionDetailFixture } = await import("./schemas/fixtures.js");
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

  it("builds each other read's envelope once, on its first call, not again on later ones", async () => {
    const fetch = scriptedFetch(
      ...[1, 2].flatMap(() => [ok(transactionDetailFixture()), ok(erpCardDetailFixture()), ok(statementsByAccountFixture())]),
    );
    const client = new QashioClient({ baseUrl: "https://api.example.test", tokenProvider: new StaticTokenProvider("access-1"), fetch, clock: fakeClock(), logger: captureLogger() });
    const reads = async () => {
      const before = built.envelopes;
      expect((await client.getTransaction(TRANSACTION_ID)).id).toBe(TRANSACTION_ID);
      expect((await client.getErpCard(CARD_ID)).id).toBe(CARD_ID);
      expect((await client.getStatementsByAccount(CARD_ID)).data.length).toBeGreaterThan(0);
      return built.envelopes - before;
    };
    await reads();
    expect(await reads()).toBe(0);
  });
});
