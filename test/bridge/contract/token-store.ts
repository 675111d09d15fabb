/**
 * Contract every TokenStore adapter must pass.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TokenStore } from "../../../shared/bridge/ports.js";

/** What a factory hands the suite. `startsEmpty: false` for stores seeded with a token at creation. */
export interface TokenStoreFixture {
  readonly store: TokenStore;
  readonly reopen?: () => Promise<TokenStore>;
  readonly startsEmpty?: boolean;
  readonly cleanup: () => Promise<void>;
}

/**
 * Registers the TokenStore contract for one adapter.
 *
 * @example
 * ```ts
 * describeTokenStoreContract("FileTokenStore", async () => ({ store: new FileTokenStore(dir), cleanup }));
 * ```
 */
export function describeTokenStoreContract(name: string, factory: () => Promise<TokenStoreFixture>): void {
  describe(`TokenStore contract: ${name}`, () => {
    let fixture: TokenStoreFixture;
    beforeEach(async () => {
      fixture = await factory();
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("loads nothing before the first save", async (ctx) => {
      if (fixture.startsEmpty === false) return ctx.skip();
      expect(await fixture.store.load()).toBeUndefined();
    });

    it("loads what was saved, optional fields included", async () => {
      const tokens = { accessToken: "at-1", accessTokenExpiresAt: 1_736_935_200_000, refreshToken: "rt-1", scope: "transactions:read cards:read" };
      await fixture.store.save(tokens);
      expect(await fixture.store.load()).toEqual(tokens);
    });

    it("replaces the stored tokens on each save (a rotated refresh token wins)", async () => {
      await fixture.store.save({ accessToken: "at-1", refreshToken: "rt-1" });
      await fixture.store.save({ refreshToken: "rt-2" });
      const loaded = await fixture.store.load();
      expect(loaded?.refreshToken).toBe("rt-2");
      expect(loaded?.accessToken).toBeUndefined();
    });

    it("lets a refresh go ahead when it can save its tokens, early or not, and leaves the stored tokens as they were", async () => {
      const tokens = { accessToken: "at-1", refreshToken: "rt-1" };
      await fixture.store.save(tokens);
      await fixture.store.beforeRefresh?.(false);
      await fixture.store.beforeRefresh?.(true);
      expect(await fixture.store.load()).toEqual(tokens);
    });

    it("keeps saved tokens durable across a new instance", async (ctx) => {
      if (!fixture.reopen) return ctx.skip();
      await fixture.store.save({ refreshToken: "rt-durable" });
      expect((await (await fixture.reopen()).load())?.refreshToken).toBe("rt-durable");
    });
  });
}
