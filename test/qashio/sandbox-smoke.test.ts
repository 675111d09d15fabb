/** Smoke test of the client against the in-process sandbox: OAuth, a walk, an acknowledgement, a card read. */
import { describe, expect, it } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS, createSandbox, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { QashioClient } from "../../shared/qashio/client.js";
import { OAuthTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import type { StoredTokens } from "../../shared/qashio/auth/token-store.js";
import { fakeClock } from "./helpers.js";

const REDIRECT_URI = "http://127.0.0.1:8765/callback";

describe("QashioClient against the sandbox", () => {
  it("authorizes, walks unsynced transactions, acknowledges them and reads cards", async () => {
    const clock = fakeClock();
    const sandbox = createSandbox({ seed: 3, startTime: clock.now() });
    const [company] = sandbox.control.companies().filter((c) => c.apiAccessEnabled);
    expect(company).toBeDefined();
    let stored: StoredTokens | undefined;
    const tokenProvider = new OAuthTokenProvider({
      baseUrl: SANDBOX_IN_PROCESS_URL,
      clientId: "sandbox-client",
      clientSecret: "sandbox-secret",
      store: { load: async () => stored, save: async (t) => void (stored = t) },
      fetch: sandbox.fetch,
      clock,
    });
    const code = sandbox.control.issueAuthorizationCode({ companyId: company!.id, redirectUri: REDIRECT_URI });
    await tokenProvider.authorizeWithCode(code, REDIRECT_URI);
    expect(stored?.accessTokenExpiresAt).toBeGreaterThan(clock.now());

    const drift: unknown[] = [];
    const client = new QashioClient({
      baseUrl: SANDBOX_IN_PROCESS_URL,
      tokenProvider,
      fetch: sandbox.fetch,
      clock,
      onDrift: (w) => drift.push(w),
    });
    expect(await client.validate()).toEqual({ active: true });

    const unsynced: string[] = [];
    for await (const tx of client.iterateTransactions({ client_sync_status: "not_synced", page_size: 25 })) unsynced.push(tx.id);
    expect(unsynced.length).toBeGreaterThan(0);
    expect(new Set(unsynced).size).toBe(unsynced.length);

    const batch = unsynced.slice(0, 10);
    await client.acknowledgeTransactions(batch);
    const after = await client.listTransactions({ client_sync_status: "not_synced", page_size: 100 });
    expect(after.pagination.total_records).toBe(unsynced.length - batch.length);
    expect(after.data.map((t) => t.id)).not.toContain(batch[0]);

    const cards: string[] = [];
    for await (const card of client.iterateCoreCards({ page_size: 5 })) cards.push(card.id);
    expect(cards.length).toBeGreaterThan(0);
    const erpCard = await client.getErpCard(cards[0]!);
    expect(erpCard.id).toBe(cards[0]);
    expect(drift).toEqual([]);

    // The provider's clock runs ahead of ours: the token it issued is expired there, so it answers 401.
    const refreshTokenBefore = stored?.refreshToken;
    sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    await client.getCompanySummary();
    expect(stored?.refreshToken).not.toBe(refreshTokenBefore);
  });
});
