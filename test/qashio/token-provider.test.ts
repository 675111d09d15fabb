import { inspect } from "node:util";
import { describe, expect, it, vi } from "vitest";
import { DEFAULT_LOCK_NAME, DEFAULT_LOCK_POLL_MS, OAuthTokenProvider, StaticTokenProvider, type OAuthTokenProviderOptions, type RefreshLock, type TokenEvent } from "../../shared/qashio/auth/token-provider.js";
import type { StoredTokens, TokenStore } from "../../shared/qashio/auth/token-store.js";
import { DeadlineExceededError, IncompleteTokenSetError, ReauthorizationRequiredError, TokenUnavailableError, UnauthorizedError } from "../../shared/qashio/errors.js";
import { captureLogger, fakeClock, json, jwt, manualClock, scriptedFetch, turns, wallAndMonotonic, type RecordedCall } from "./helpers.js";
import type { Clock } from "../../shared/qashio/http.js";
import { QashioClient } from "../../shared/qashio/client.js";

const BASE_URL = "https://api.example.test";
const CLIENT_SECRET = "client-secret-s3cr3t";
const MINUTE = 60_000;

/** An in-memory store that records the order of saves in `events`. */
function memoryStore(initial: StoredTokens | undefined, events: string[] = []) {
  let current = initial;
  const store: TokenStore & { saves: StoredTokens[]; set(tokens: StoredTokens): void; failNextSave: boolean } = {
    saves: [],
    failNextSave: false,
    set(tokens) {
      current = tokens;
    },
    async load() {
      return current;
    },
    async save(tokens) {
      if (store.failNextSave) {
        store.failNextSave = false;
        throw new Error("disk full");
      }
      events.push(`save:${tokens.refreshToken}`);
      store.saves.push(tokens);
      current = tokens;
    },
  };
  return store;
}

/** Makes the store's next load fail ("store down"); later ones read it as before. */
function failNextLoad(store: TokenStore): void {
  const load = store.load.bind(store);
  let failLoad = true;
  store.load = async () => {
    if (!failLoad) return load();
    failLoad = false;
    throw new Error("store down");
  };
}

/** Makes the store's saves wait until `finish()` (a slow save). */
function holdSaves(store: TokenStore): { finish(): void } {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const save = store.save.bind(store);
  store.save = async (tokens) => {
    await gate;
    await save(tokens);
  };
  return { finish };
}

/**
 * A lease over `clock`, like the DynamoDB one: taken when free or expired, its expiry set before the put answers;
 * renewed and released by its owner only. `renew` replaces the renewal's answer; `firstPutMs` delays the first
 * acquire's answer (a put slowed by SDK retries) and `renewMs` every renewal's write.
 */
function leaseLock(clock: Clock, options: { renew?: () => Promise<boolean>; firstPutMs?: number; renewMs?: number } = {}) {
  let lease: { owner: number; expiresAt: number } | undefined;
  let owners = 0;
  let slowPut = options.firstPutMs;
  const renewals: number[] = [];
  const lock: RefreshLock = {
    async tryAcquire(_name, ttlMs) {
      const now = clock.now();
      if (lease !== undefined && lease.expiresAt > now) return undefined;
      const owner = ++owners;
      lease = { owner, expiresAt: now + ttlMs };
      if (slowPut !== undefined) {
        await clock.sleep(slowPut);
        slowPut = undefined;
      }
      return {
        renew: async (ttl) => {
          renewals.push(clock.now());
          if (options.renew !== undefined) return options.renew();
          if (options.renewMs !== undefined) await clock.sleep(options.renewMs);
          if (lease?.owner !== owner) return false;
          lease.expiresAt = clock.now() + ttl;
          return true;
        },
        release: async () => {
          if (lease?.owner === owner) lease = undefined;
        },
      };
    },
  };
  return { lock, renewals };
}

/** A lease over `clock` that renews always and is free once released or expired; `released()` says whether it was given back. */
function timedLock(clock: Clock): { lock: RefreshLock; released(): boolean } {
  let leaseUntil = 0;
  const lock: RefreshLock = {
    async tryAcquire(_name, ttl) {
      if (clock.now() < leaseUntil) return undefined;
      leaseUntil = clock.now() + ttl;
      return { renew: async () => true, release: async () => void (leaseUntil = 0) };
    },
  };
  return { lock, released: () => leaseUntil === 0 };
}

/** A token endpoint that rotates: refresh token rt-N yields rt-(N+1) and an access token expiring in `lifetimeMs`. */
function rotatingTokenEndpoint(clock: { now(): number }, events: string[], lifetimeMs = 15 * MINUTE) {
  let issued = 1;
  return scriptedFetch((call: RecordedCall) => {
    const body = call.body as Record<string, string>;
    events.push(`refresh:${body.refresh_token}`);
    issued += 1;
    return json(200, {
      access_token: jwt({ sub: "company-1", n: issued, exp: Math.floor((clock.now() + lifetimeMs) / 1000) }),
      token_type: "Bearer",
      refresh_token: `rt-${issued}`,
      scope: "transactions:read cards:read",
    });
  });
}

/** A rotating token endpoint (rt-N gives rt-(N+1)) whose first answer takes `firstAnswerMs` on `clock`. */
function slowTokenEndpoint(clock: Clock, firstAnswerMs: number) {
  const presented: string[] = [];
  const reply = async (call: RecordedCall): Promise<Response> => {
    const token = (call.body as Record<string, string>).refresh_token as string;
    presented.push(token);
    if (presented.length === 1) await clock.sleep(firstAnswerMs);
    const n = Number(token.slice(3)) + 1;
    return json(200, { access_token: jwt({ n, exp: Math.floor((clock.now() + 15 * MINUTE) / 1000) }), token_type: "Bearer", refresh_token: `rt-${n}` });
  };
  return { presented, reply };
}

/** Asks `provider` for a token, noting "use" in `events` once handed out; checks none is handed out within 50 turns. */
async function notHandedOutYet(provider: OAuthTokenProvider, events: string[]): Promise<{ token: Promise<string> }> {
  let handedOut = false;
  const pending = provider.getAccessToken().then((token) => {
    handedOut = true;
    events.push("use");
    return token;
  });
  for (let i = 0; i < 50; i += 1) await Promise.resolve();
  expect(handedOut).toBe(false);
  // Wrapped: an async function returning the promise itself would wait for it.
  return { token: pending };
}

function setup(
  options: {
    stored?: StoredTokens;
    lock?: RefreshLock;
    lifetimeMs?: number;
    spending?: OAuthTokenProviderOptions["spending"];
    refreshWithinCallDeadline?: boolean;
    refreshOnlyInWindows?: boolean;
    quietEvents?: OAuthTokenProviderOptions["quietEvents"];
  } = {},
) {
  const clock = fakeClock();
  const events: string[] = [];
  const tokenEvents: TokenEvent[] = [];
  const store = memoryStore(
    options.stored ?? { refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: clock.now() - 1 },
    events,
  );
  const fetch = rotatingTokenEndpoint(clock, events, options.lifetimeMs);
  const logger = captureLogger();
  const provider = new OAuthTokenProvider({
    baseUrl: BASE_URL,
    clientId: "client-1",
    clientSecret: CLIENT_SECRET,
    store,
    fetch,
    clock,
    logger,
    lock: options.lock,
    onEvent: (e) => tokenEvents.push(e),
    ...(options.spending === undefined ? {} : { spending: options.spending }),
    ...(options.refreshWithinCallDeadline === undefined ? {} : { refreshWithinCallDeadline: options.refreshWithinCallDeadline }),
    ...(options.refreshOnlyInWindows === undefined ? {} : { refreshOnlyInWindows: options.refreshOnlyInWindows }),
    ...(options.quietEvents === undefined ? {} : { quietEvents: options.quietEvents }),
  });
  return { clock, events, store, fetch, provider, logger, tokenEvents };
}

/**
 * A provider holding the token it got first (`first`), 30 s before that token expires, whose store turns every further
 * refresh down (`full`): a refresh due, and postponed.
 */
async function postponedRefresh() {
  const rig = setup();
  const first = await rig.provider.getAccessToken();
  const full = Object.assign(new Error("secret at its version quota"), { name: "SecretVersionQuotaError" });
  rig.store.beforeRefresh = () => Promise.reject(full);
  rig.clock.advance(14.5 * MINUTE);
  return { ...rig, first, full };
}

describe("OAuthTokenProvider", () => {
  it("refreshes an expired access token with the refresh_token grant", async () => {
    const { provider, fetch } = setup();
    await provider.getAccessToken();
    expect(fetch.calls).toHaveLength(1);
    expect(fetch.calls[0]!.url.pathname).toBe("/oauth2/token");
    expect(fetch.calls[0]!.body).toEqual({
      grant_type: "refresh_token",
      client_id: "client-1",
      client_secret: CLIENT_SECRET,
      refresh_token: "rt-1",
    });
    expect(fetch.calls[0]!.headers.authorization).toBeUndefined();
  });

  it("saves the rotated refresh token before handing out the new access token", async () => {
    const { provider, events, store } = setup();
    const slowSave = holdSaves(store);
    const { token: pending } = await notHandedOutYet(provider, events);
    slowSave.finish();
    const token = await pending;
    expect(events).toEqual(["refresh:rt-1", "save:rt-2", "use"]);
    expect(store.saves[0]!.accessToken).toBe(token);
  });

  it("hands a caller arriving while the rotated tokens are being saved nothing until the save is done", async () => {
    const { provider, events, store } = setup();
    const slowSave = holdSaves(store);
    const first = provider.getAccessToken();
    // Long enough for the refresh to be answered and its save to start (held).
    for (let i = 0; i < 50; i += 1) await Promise.resolve();
    expect(events).toEqual(["refresh:rt-1"]);
    const { token: second } = await notHandedOutYet(provider, events);
    slowSave.finish();
    expect(await second).toBe(await first);
    expect(events).toEqual(["refresh:rt-1", "save:rt-2", "use"]);
  });

  it("runs a refresh from its request to the save of the successor inside `spending`, and nothing else", async () => {
    const order: string[] = [];
    let log: readonly string[] = [];
    const { provider, events } = setup({
      spending: async (work) => {
        order.push(`enter after ${log.length}`);
        try {
          return await work();
        } finally {
          order.push(`exit after ${log.length}`);
        }
      },
    });
    log = events;
    await provider.getAccessToken();
    // Entered before the refresh request, left once its successor is saved.
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
    expect(order).toEqual(["enter after 0", "exit after 2"]);
    // A token in hand needs no refresh: no section.
    await provider.getAccessToken();
    expect(order).toHaveLength(2);
  });

  it("asks the store before spending the refresh token: a store that could not save the successor stops the refresh unspent", async () => {
    const { provider, fetch, store } = setup();
    const full = Object.assign(new Error("secret at its version quota"), { name: "SecretVersionQuotaError" });
    let refuse = true;
    store.beforeRefresh = () => (refuse ? Promise.reject(full) : Promise.resolve());
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(fetch.calls).toHaveLength(0);
    expect(await store.load()).toMatchObject({ refreshToken: "rt-1" });
    // Once the store can take it, the same (unspent) refresh token is used.
    refuse = false;
    await provider.getAccessToken();
    expect(fetch.calls.map((c) => (c.body as Record<string, string>).refresh_token)).toEqual(["rt-1"]);
  });

  it("does not postpone a refresh the store turns down once the access token expires that very millisecond: the refusal is thrown", async () => {
    const { provider, fetch, clock, store } = setup();
    store.set({ refreshToken: "rt-1", accessToken: "at-ending", accessTokenExpiresAt: clock.now() });
    const full = Object.assign(new Error("secret at its version quota"), { name: "SecretVersionQuotaError" });
    const asked: boolean[] = [];
    store.beforeRefresh = (early) => {
      asked.push(early);
      return asked.length === 1 ? Promise.reject(full) : Promise.resolve();
    };
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(asked).toEqual([false]);
    expect(fetch.calls).toHaveLength(0);
  });

  it("postpones an early refresh the store turns down: the access token still works, so it is used until it expires", async () => {
    const { provider, fetch, clock, store, logger } = setup();
    const first = await provider.getAccessToken();
    const full = Object.assign(new Error("secret at its version quota"), { name: "SecretVersionQuotaError" });
    const asked: boolean[] = [];
    let refuse = true;
    store.beforeRefresh = (early) => {
      asked.push(early);
      return refuse ? Promise.reject(full) : Promise.resolve();
    };
    clock.advance(14.5 * MINUTE); // 30 s left: inside the 60 s skew, so a refresh is due
    expect(await provider.getAccessToken()).toBe(first);
    expect(await provider.getAccessToken()).toBe(first);
    // Asked once, as an early refresh: the postponement holds until the token expires, so later calls cost no store
    // round trip.
    expect(asked).toEqual([true]);
    expect(fetch.calls).toHaveLength(1);
    const warning = logger.lines.find((l) => l.message.startsWith("token refresh postponed"));
    // At warn, as docs/runbook.md (Function errors, SecretVersionQuotaError) says the pollers log it.
    expect(warning?.level).toBe("warn");
    expect(warning?.attributes).toEqual({ reason: "SecretVersionQuotaError", expiresInSeconds: 30 });
    expect(logger.text()).not.toContain(first);

    // Expired: nothing left to fall back on, so the refusal is the caller's error, and the refresh token stays unspent.
    clock.advance(31_000);
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(asked).toEqual([true, false]);
    expect(fetch.calls).toHaveLength(1);
    refuse = false;
    const next = await provider.getAccessToken();
    expect(next).not.toBe(first);
    expect(fetch.calls.map((c) => (c.body as Record<string, string>).refresh_token)).toEqual(["rt-1", "rt-2"]);
  });

  it.each([
    ["past the token's expiry", MINUTE],
    ["ending exactly at the token's expiry", 30_000],
  ])("asks again as a due refresh when the access token expired while the store was answering an early one (a slow answer, %s)", async (_when, answerMs) => {
    const { provider, fetch, clock, store } = setup();
    const first = await provider.getAccessToken();
    const asked: boolean[] = [];
    store.beforeRefresh = async (early) => {
      asked.push(early);
      if (!early) return;
      clock.advance(answerMs);
      throw Object.assign(new Error("too many versions for an early refresh"), { name: "SecretVersionQuotaError" });
    };
    clock.advance(14.5 * MINUTE);
    const next = await provider.getAccessToken();
    expect(asked).toEqual([true, false]);
    expect(next).not.toBe(first);
    expect(fetch.calls).toHaveLength(2);
  });

  it("stops handing out a postponed token the very millisecond it expires: the refresh is due, so the store's refusal is thrown", async () => {
    const { provider, fetch, clock, first, full } = await postponedRefresh();
    expect(await provider.getAccessToken()).toBe(first);
    clock.advance(30_000); // exactly its expiry
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(fetch.calls).toHaveLength(1);
  });

  it("stops handing out a postponed token once the provider refused it", async () => {
    const { provider, fetch, first, full } = await postponedRefresh();
    expect(await provider.getAccessToken()).toBe(first);
    // The provider answers 401 for it; the refresh is refused too, so the call fails ...
    await expect(provider.refreshAfterUnauthorized(first)).rejects.toBe(full);
    // ... and the refused token is not handed out again for the rest of its lifetime.
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(fetch.calls).toHaveLength(1);
  });

  it("keeps refusing a postponed token through seven later 401s for older tokens, and counts a repeated 401 as the newest", async () => {
    const { provider, fetch, first, full } = await postponedRefresh();
    await expect(provider.refreshAfterUnauthorized(first)).rejects.toBe(full);
    // Requests in flight with older tokens report their 401s late: the provider remembers eight refusals.
    for (let i = 0; i < 7; i++) await expect(provider.refreshAfterUnauthorized(`at-older-${i}`)).rejects.toBe(full);
    await expect(provider.getAccessToken()).rejects.toBe(full);
    // Another 401 for it makes its refusal the newest again: one more late report does not push it out.
    await expect(provider.refreshAfterUnauthorized(first)).rejects.toBe(full);
    await expect(provider.refreshAfterUnauthorized("at-older-7")).rejects.toBe(full);
    await expect(provider.getAccessToken()).rejects.toBe(full);
    expect(fetch.calls).toHaveLength(1);
  });

  it("uses a refused token string again once the provider issues it anew, without refreshing on every call", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const same = jwt({ sub: "company-1", exp: Math.floor((clock.now() + 15 * MINUTE) / 1000) });
    let issued = 1;
    const fetch = scriptedFetch(() => json(200, { access_token: same, token_type: "Bearer", refresh_token: `rt-${++issued}` }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    expect(await provider.getAccessToken()).toBe(same);
    // A 401 for it, and the provider answers the refresh with the same access token string.
    expect(await provider.refreshAfterUnauthorized(same)).toBe(same);
    expect(fetch.calls).toHaveLength(2);
    expect(await provider.getAccessToken()).toBe(same);
    expect(await provider.getAccessToken()).toBe(same);
    expect(fetch.calls).toHaveLength(2);
  });

  it("does not postpone the refresh of an access token the provider rejected, even one not yet expired", async () => {
    const { provider, fetch, store } = setup();
    const first = await provider.getAccessToken();
    const full = Object.assign(new Error("secret at its version quota"), { name: "SecretVersionQuotaError" });
    const asked: boolean[] = [];
    store.beforeRefresh = (early) => {
      asked.push(early);
      return Promise.reject(full);
    };
    await expect(provider.refreshAfterUnauthorized(first)).rejects.toBe(full);
    expect(asked).toEqual([false]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("takes the access token expiry from the JWT exp claim and refreshes only within the skew", async () => {
    const { provider, fetch, clock, store } = setup();
    const first = await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 15 * MINUTE);
    clock.advance(13 * MINUTE);
    expect(await provider.getAccessToken()).toBe(first);
    expect(fetch.calls).toHaveLength(1);
    clock.advance(1.5 * MINUTE); // 30 s left: inside the 60 s skew
    expect(await provider.getAccessToken()).not.toBe(first);
    expect(fetch.calls).toHaveLength(2);
  });

  it("counts a JWT's lifetime (exp - iat) from receipt, so a provider clock 20 minutes behind this host costs no refresh per call", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    // Issued now on the provider's clock, 20 minutes behind: by this host's clock its exp is already past.
    const providerNow = Math.floor((clock.now() - 20 * MINUTE) / 1000);
    let issued = 1;
    const fetch = scriptedFetch(() =>
      json(200, { access_token: jwt({ n: issued, iat: providerNow, exp: providerNow + 15 * 60 }), token_type: "Bearer", refresh_token: `rt-${++issued}` }),
    );
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 15 * MINUTE);
    clock.advance(10 * MINUTE);
    expect(await provider.getAccessToken()).toBe(first);
    expect(await provider.getAccessToken()).toBe(first);
    expect(fetch.calls).toHaveLength(1);
  });

  it("does not take an exp already past on receipt (and no iat) for the expiry: the token is used until a 401, not refreshed per call", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const behind = Math.floor((clock.now() - 20 * MINUTE) / 1000);
    const fetch = scriptedFetch(json(200, { access_token: jwt({ exp: behind + 15 * 60 }), token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBeUndefined();
    expect(await provider.getAccessToken()).toBe(first);
    expect(fetch.calls).toHaveLength(1);
  });

  it.each([
    ["a JWT exp equal to the moment of receipt (no iat)", (now: number) => ({ access_token: jwt({ exp: now / 1000 }) })],
    ["an expires_in of 0 (no exp)", () => ({ access_token: "opaque-access", expires_in: 0 })],
  ])("takes no expiry from %s, already over on receipt: the token is used until a 401, not refreshed before every call (spec-gaps, access token lifetime, §5 rule 11)", async (_, answer) => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(200, { ...answer(clock.now()), token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBeUndefined();
    expect(await provider.getAccessToken()).toBe(first);
    expect(fetch.calls).toHaveLength(1);
  });

  it("takes no expiry past the last valid time (a far-future exp or expires_in): the DynamoDB store could not write it, and every save failed", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const now = Math.floor(clock.now() / 1000);
    const fetch = scriptedFetch(
      // exp in microseconds rather than seconds (a provider bug), year 57,000-odd: beyond Number.MAX_SAFE_INTEGER in ms.
      json(200, { access_token: jwt({ iat: now, exp: now * 1_000_000 }), token_type: "Bearer", refresh_token: "rt-2" }),
      json(200, { access_token: jwt({ exp: now * 1_000_000 }), token_type: "Bearer", refresh_token: "rt-3" }),
      json(200, { access_token: "opaque-access", token_type: "Bearer", refresh_token: "rt-4", expires_in: 1e300 }),
      // Past the last time a Date can hold (8.64e15 ms) yet still a safe integer: a Date of it is Invalid Date.
      json(200, { access_token: "opaque-access-2", token_type: "Bearer", refresh_token: "rt-5", expires_in: (8.64e15 - clock.now()) / 1000 + 1 }),
      // The last time itself is kept.
      json(200, { access_token: "opaque-access-3", token_type: "Bearer", refresh_token: "rt-6", expires_in: (8.64e15 - clock.now()) / 1000 }),
    );
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    const second = await provider.refreshAfterUnauthorized(first);
    const third = await provider.refreshAfterUnauthorized(second);
    const fourth = await provider.refreshAfterUnauthorized(third);
    await provider.refreshAfterUnauthorized(fourth);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2", "rt-3", "rt-4", "rt-5", "rt-6"]);
    expect(store.saves.slice(3).map((s) => s.accessTokenExpiresAt)).toEqual([undefined, 8.64e15]);
    for (const saved of store.saves) {
      const expiresAt = saved.accessTokenExpiresAt;
      // A time a Date can hold is a safe integer or close: what the DynamoDB marshaller takes.
      expect(expiresAt === undefined || (expiresAt <= 8.64e15 && Number.isFinite(new Date(expiresAt).getTime()))).toBe(true);
    }
  });

  it("prefers expires_in, counted from receipt, to a JWT exp without iat: a provider clock 10 minutes behind costs no early refreshes", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const behind = Math.floor((clock.now() - 10 * MINUTE) / 1000);
    // 15 minutes of life: by the provider's clock its exp is 5 minutes from this host's now.
    const fetch = scriptedFetch(json(200, { access_token: jwt({ exp: behind + 15 * 60 }), token_type: "Bearer", refresh_token: "rt-2", expires_in: 15 * 60 }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 15 * MINUTE);
  });

  it("prefers a JWT's lifetime (exp - iat) to an expires_in that says otherwise (spec-gaps, access token lifetime, §5 rule 11: expires_in only without iat)", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const now = Math.floor(clock.now() / 1000);
    const fetch = scriptedFetch(json(200, { access_token: jwt({ iat: now, exp: now + 15 * 60 }), token_type: "Bearer", refresh_token: "rt-2", expires_in: 10 * 60 }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 15 * MINUTE);
  });

  it("reads no lifetime from a JWT whose exp is not after its iat (a provider bug): expires_in counts, not one refresh per call", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const now = Math.floor(clock.now() / 1000);
    let issued = 1;
    const fetch = scriptedFetch(() =>
      json(200, { access_token: jwt({ n: issued, iat: now + 15 * 60, exp: now + 15 * 60 }), token_type: "Bearer", refresh_token: `rt-${++issued}`, expires_in: 15 * 60 }),
    );
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 15 * MINUTE);
    clock.advance(10 * MINUTE);
    expect(await provider.getAccessToken()).toBe(first);
    expect(fetch.calls).toHaveLength(1);
  });

  it("uses expires_in when the access token carries no exp", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(
      json(200, { access_token: "opaque-access", token_type: "bearer", refresh_token: "rt-2", expires_in: 600 }),
    );
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    await provider.getAccessToken();
    expect(store.saves[0]!.accessTokenExpiresAt).toBe(clock.now() + 600_000);
  });

  it("refreshes rather than hand out an empty stored access token, even one whose expiry looks far off", async () => {
    const clock = fakeClock();
    const { provider, fetch } = setup({ stored: { refreshToken: "rt-1", accessToken: "", accessTokenExpiresAt: clock.now() + 60 * MINUTE } });
    const token = await provider.getAccessToken();
    expect(token).not.toBe("");
    expect(fetch.calls).toHaveLength(1);
  });

  it("keeps using a token of unknown expiry until the provider answers 401", async () => {
    const { provider, fetch, clock } = setup({ stored: { refreshToken: "rt-1", accessToken: "no-expiry" } });
    clock.advance(24 * 60 * MINUTE);
    expect(await provider.getAccessToken()).toBe("no-expiry");
    expect(fetch.calls).toHaveLength(0);
    expect(await provider.refreshAfterUnauthorized("no-expiry")).not.toBe("no-expiry");
    expect(fetch.calls).toHaveLength(1);
  });

  it("shares one refresh among 10 concurrent callers", async () => {
    const { provider, fetch } = setup();
    const tokens = await Promise.all(Array.from({ length: 10 }, () => provider.getAccessToken()));
    expect(fetch.calls).toHaveLength(1);
    expect(new Set(tokens).size).toBe(1);
  });

  it("shares one refresh among 10 concurrent callers whose token was rejected with 401", async () => {
    const { provider, fetch } = setup({ stored: { refreshToken: "rt-1", accessToken: "rejected" } });
    const tokens = await Promise.all(Array.from({ length: 10 }, () => provider.refreshAfterUnauthorized("rejected")));
    expect(fetch.calls).toHaveLength(1);
    expect(new Set(tokens).size).toBe(1);
    // A late caller holding the old rejected token gets the already refreshed one without a new refresh.
    expect(await provider.refreshAfterUnauthorized("rejected")).toBe(tokens[0]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("refreshes for a caller whose fresh-looking token was rejected even when another caller reports a 401 for an older token meanwhile", async () => {
    const { provider, fetch, clock, store } = setup();
    store.set({ refreshToken: "rt-1", accessToken: "at-current", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
    // The current token answered 401 for one request; a request that had gone out with an older token answers 401 too.
    const current = provider.refreshAfterUnauthorized("at-current");
    const older = provider.refreshAfterUnauthorized("at-older");
    const replacement = await current;
    expect(replacement).not.toBe("at-current");
    expect(fetch.calls).toHaveLength(1);
    await older;
  });

  it("keeps refusing the current token after another caller reports a 401 for an older token, so that caller gets the refreshed one too", async () => {
    const { provider, fetch, clock, store } = setup();
    store.set({ refreshToken: "rt-1", accessToken: "at-current", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
    // The later report (for an older token) must not make the provider forget that at-current was refused a moment ago.
    const current = provider.refreshAfterUnauthorized("at-current");
    const older = provider.refreshAfterUnauthorized("at-older");
    const replacement = await current;
    expect(replacement).not.toBe("at-current");
    expect(await older).toBe(replacement);
    expect(fetch.calls).toHaveLength(1);
    expect(await provider.getAccessToken()).toBe(replacement);
  });

  it("never hands a caller back the token it reported refused, even once more later refusals than it remembers pushed that one out", async () => {
    const { provider, fetch, clock, store } = setup();
    store.set({ refreshToken: "rt-1", accessToken: "at-current", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
    const current = provider.refreshAfterUnauthorized("at-current");
    // Eight more 401s for older tokens, reported before the first caller looked again: at-current is no longer remembered.
    const older = Array.from({ length: 8 }, (_, i) => provider.refreshAfterUnauthorized(`at-older-${i}`));
    const replacement = await current;
    expect(replacement).not.toBe("at-current");
    await Promise.all(older);
    expect(fetch.calls).toHaveLength(1);
  });

  it("uses the stored tokens when its refresh is answered 401 because another process rotated", async () => {
    const { store, clock, tokenEvents } = setup();
    const rotatedElsewhere: StoredTokens = {
      refreshToken: "rt-9",
      accessToken: "fresh-from-other-process",
      accessTokenExpiresAt: clock.now() + 10 * MINUTE,
    };
    const fetch = scriptedFetch(() => {
      store.set(rotatedElsewhere); // the other process won the race and saved first
      return json(401, { error: "invalid_grant" });
    });
    const racing = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, onEvent: (e) => tokenEvents.push(e) });
    expect(await racing.getAccessToken()).toBe("fresh-from-other-process");
    expect(fetch.calls).toHaveLength(1);
    expect(tokenEvents).toEqual(["rotated_elsewhere"]);
  });

  it("logs tokens rotated by another process unless its caller words that event itself", async () => {
    for (const quietEvents of [[], ["rotated_elsewhere"]] as const) {
      const clock = fakeClock();
      const store = memoryStore({ refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: clock.now() - 1 });
      const fetch = scriptedFetch(() => {
        store.set({ refreshToken: "rt-9", accessToken: "fresh-from-other-process", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
        return json(401, { error: "invalid_grant" });
      });
      const logger = captureLogger();
      const events: TokenEvent[] = [];
      const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, logger, quietEvents, onEvent: (e) => events.push(e) });
      expect(await provider.getAccessToken()).toBe("fresh-from-other-process");
      expect(events).toEqual(["rotated_elsewhere"]);
      expect(logger.text().includes("refresh token was rotated by another process"), quietEvents.join()).toBe(quietEvents.length === 0);
    }
  });

  it("refreshes with the stored refresh token when the tokens another process rotated carry an expired access token", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: clock.now() - 1 });
    const fresh = jwt({ n: 10, exp: Math.floor((clock.now() + 15 * MINUTE) / 1000) });
    const fetch = scriptedFetch((call) => {
      if ((call.body as Record<string, string>).refresh_token === "rt-1") {
        // The other process rotated first; the access token it saved has expired since.
        store.set({ refreshToken: "rt-9", accessToken: "stale-from-other-process", accessTokenExpiresAt: clock.now() - 1 });
        return json(401, { error: "invalid_grant" });
      }
      return json(200, { access_token: fresh, token_type: "Bearer", refresh_token: "rt-10" });
    });
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, onEvent: (e) => events.push(e) });
    expect(await provider.getAccessToken()).toBe(fresh);
    expect(fetch.calls.map((c) => (c.body as Record<string, string>).refresh_token)).toEqual(["rt-1", "rt-9"]);
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-10"]);
    expect(events).toEqual(["rotated_elsewhere", "refreshed"]);
  });

  it("adopts another process's rotation once per call: when the adopted refresh token is rejected too, re-authorize rather than chase the store", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: clock.now() - 1 });
    let rotations = 0;
    const fetch = scriptedFetch(() => {
      // Each refresh token presented was already rotated elsewhere (a few times, so a loop would show and still end).
      if (rotations < 4) store.set({ refreshToken: `rt-elsewhere-${++rotations}`, accessToken: "stale", accessTokenExpiresAt: clock.now() - 1 });
      return json(401, { error: "invalid_grant" });
    });
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, onEvent: (e) => events.push(e) });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect(fetch.calls.map((c) => (c.body as Record<string, string>).refresh_token)).toEqual(["rt-1", "rt-elsewhere-1"]);
    expect(events).toEqual(["rotated_elsewhere", "reauthorization_required"]);
    // It names the token refused last, not the one stored since (never presented): a revoked mark goes by it.
    expect((error as ReauthorizationRequiredError).refusedRefreshToken()).toBe("rt-elsewhere-1");
    expect((await store.load())?.refreshToken).toBe("rt-elsewhere-2");
    expect(JSON.stringify(error)).not.toContain("rt-elsewhere");
  });

  it("reports each successful refresh as refreshed", async () => {
    const { provider, tokenEvents } = setup();
    await provider.getAccessToken();
    expect(tokenEvents).toEqual(["refreshed"]);
  });

  it("refreshes once the access token is exactly refreshSkewMs from expiry", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "at-1", accessTokenExpiresAt: clock.now() + MINUTE });
    const fetch = scriptedFetch(json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshSkewMs: MINUTE });
    expect(await provider.getAccessToken()).toBe("at-2");
    expect(fetch.calls).toHaveLength(1);
  });

  it("takes a refreshSkewMs of 0 as it is: the access token is used up to its expiry, not refreshed the default minute early", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "at-1", accessTokenExpiresAt: clock.now() + 1_000 });
    const fetch = scriptedFetch(json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshSkewMs: 0 });
    expect(await provider.getAccessToken()).toBe("at-1");
    expect(fetch.calls).toHaveLength(0);
  });

  it("refreshes an access token shorter-lived than the skew after half its life, not before every call", async () => {
    const clock = fakeClock();
    const events: string[] = [];
    const store = memoryStore({ refreshToken: "rt-1" }, events);
    // Opaque-looking for the skew: the JWT has `exp` but no `iat`, so its 30 s lifetime is known from its receipt only.
    const fetch = rotatingTokenEndpoint(clock, events, 30_000);
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    const first = await provider.getAccessToken();
    for (let elapsed = 0; elapsed < 15_000; elapsed += 5_000) {
      expect(await provider.getAccessToken()).toBe(first);
      clock.advance(5_000);
    }
    expect(await provider.getAccessToken()).not.toBe(first);
    expect(events).toEqual(["refresh:rt-1", "save:rt-2", "refresh:rt-2", "save:rt-3"]);
  });

  it("caps the skew at half the lifetime of an opaque access token from the code flow too: not refreshed before its first use", async () => {
    const clock = fakeClock();
    const store = memoryStore(undefined);
    // Opaque: its 30 s lifetime is known from `expires_in` at receipt only, shorter than the default one-minute skew.
    const fetch = scriptedFetch(
      json(200, { access_token: "opaque-code-access", token_type: "Bearer", refresh_token: "rt-1", expires_in: 30 }),
      json(200, { access_token: "opaque-refreshed", token_type: "Bearer", refresh_token: "rt-2", expires_in: 30 }),
    );
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    await provider.authorizeWithCode("code-1", "https://app.example/cb");
    clock.advance(14_000);
    expect(await provider.getAccessToken()).toBe("opaque-code-access");
    expect(fetch.calls).toHaveLength(1);
    clock.advance(1_001); // past half its life
    expect(await provider.getAccessToken()).toBe("opaque-refreshed");
  });

  it("caps the skew at half the JWT lifetime of a stored token it did not receive, and keeps it for long-lived ones", async () => {
    const clock = fakeClock();
    const nowSeconds = Math.floor(clock.now() / 1000);
    const short = jwt({ sub: "company-1", iat: nowSeconds - 10, exp: nowSeconds + 30 }); // 40 s life, 30 s left
    const store = memoryStore({ refreshToken: "rt-1", accessToken: short, accessTokenExpiresAt: clock.now() + 30_000 });
    const fetch = scriptedFetch(json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock });
    expect(await provider.getAccessToken()).toBe(short);
    clock.advance(10_001); // past half its life
    expect(await provider.getAccessToken()).toBe("at-2");
    // A 15-minute token 59 s from expiry is refreshed: the full minute applies.
    const long = jwt({ sub: "company-1", iat: nowSeconds - 841, exp: nowSeconds + 59 });
    store.set({ refreshToken: "rt-2", accessToken: long, accessTokenExpiresAt: clock.now() + 59_000 });
    const again = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch: scriptedFetch(json(200, { access_token: "at-3", token_type: "Bearer", refresh_token: "rt-3" })), clock });
    expect(await again.getAccessToken()).toBe("at-3");
    expect(fetch.calls).toHaveLength(1);
  });

  it("throws ReauthorizationRequiredError when its refresh is answered 401 and nobody rotated", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-reused" });
    const fetch = scriptedFetch(json(401, { error: "invalid_grant" }));
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, onEvent: (e) => events.push(e) });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as ReauthorizationRequiredError).status).toBe(401);
    // The refusal itself stays reachable as the cause, for logs and for callers that walk causes.
    expect((error as Error).cause).toMatchObject({ name: "UnauthorizedError", status: 401, path: "/oauth2/token" });
    // The provider said the grant was refused: nothing points at the client credentials.
    expect((error as ReauthorizationRequiredError).clientMayBeRefused).toBe(false);
    expect((error as Error).message).not.toContain("client_secret");
    expect(events).toEqual(["reauthorization_required"]);
    expect(fetch.calls).toHaveLength(1);
    expect(store.saves).toEqual([]);
  });

  it("keeps the token endpoint's request id and status on ReauthorizationRequiredError, for a support request to the provider", async () => {
    const store = memoryStore({ refreshToken: "rt-reused" });
    const fetch = scriptedFetch(json(401, { error: "invalid_grant" }, { "x-request-id": "req-refused-1" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock: fakeClock() });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect(error).toMatchObject({ status: 401, requestId: "req-refused-1", method: "POST", path: "/oauth2/token" });
  });

  it("says the provider refused the refresh token when the store cannot be read after it to tell a rotation elsewhere from a revoked family", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-refused" });
    const fetch = scriptedFetch(json(401, { error: "invalid_grant" }));
    const logger = captureLogger();
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, logger, onEvent: (e) => events.push(e) });
    // The loads before the refresh work (the first use's, then the one under the lease); the one after its 401 fails.
    const load = store.load.bind(store);
    let loads = 0;
    store.load = async () => {
      loads += 1;
      if (loads === 3) throw Object.assign(new Error("rt-refused could not be read"), { name: "ThrottlingException" });
      return load();
    };
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    // The call fails with the store's error (the family may be alive: another process may have rotated)...
    expect(error).toMatchObject({ name: "ThrottlingException" });
    expect(events).toEqual([]);
    // ...and the refusal, which that error does not name, is logged with the store error's name, no token.
    expect(logger.lines).toContainEqual({
      level: "warn",
      message: "the provider refused the refresh token, and reading the token store to tell a rotation by another process from a revoked family failed",
      attributes: { status: 401, reason: "ThrottlingException" },
    });
    expect(logger.text()).not.toContain("rt-refused");
    expect(fetch.calls).toHaveLength(1);
    expect(loads).toBe(3);
  });

  it.each([
    ["no body", ""],
    ["an error envelope without an OAuth code", { status_code: 401, message: "Unauthorized", errors: [] }],
  ])("reports a refresh answered 401 with %s as a refused grant or refused client credentials (§4.2 answers both with 401)", async (_, body) => {
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(body === "" ? new Response(null, { status: 401 }) : json(401, body));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: "maybe-wrong", store, fetch, clock: fakeClock() });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as ReauthorizationRequiredError).clientMayBeRefused).toBe(true);
    expect((error as Error).message).toContain("without an OAuth error code");
    expect((error as Error).message).toContain("check client_id and client_secret");
    // Both ways out are named: fixing the credentials first, else authorizing again.
    expect((error as Error).message).toMatch(/check client_id and client_secret first .*, else re-authorize the integration$/);
    expect((error as Error).message).not.toContain("maybe-wrong");
    expect(fetch.calls).toHaveLength(1);
    expect(store.saves).toEqual([]);
  });

  it("reports a refresh answered invalid_client as the provider's refusal of the client, not a revoked family", async () => {
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(401, { error: "invalid_client" }));
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: "wrong", store, fetch, clock: fakeClock(), onEvent: (e) => events.push(e) });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).not.toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as UnauthorizedError).errors.map((e) => e.code)).toEqual(["invalid_client"]);
    expect(events).toEqual([]);
    expect(await store.load()).toEqual({ refreshToken: "rt-1" });
  });

  it("treats a 400 invalid_grant on refresh as a revoked family too, presenting the refresh token once", async () => {
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(400, { error: "invalid_grant" }));
    const events: TokenEvent[] = [];
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock: fakeClock(), onEvent: (e) => events.push(e) });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as ReauthorizationRequiredError).status).toBe(400);
    // Sent again, a rejected (or spent) refresh token is a reuse: never retried.
    expect(fetch.calls).toHaveLength(1);
    expect(events).toEqual(["reauthorization_required"]);
    expect(store.saves).toEqual([]);
  });

  it("never retries a refresh that failed ambiguously (a replay would revoke the family)", async () => {
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(503, {}), json(200, {}));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock: fakeClock() });
    await expect(provider.getAccessToken()).rejects.toMatchObject({ name: "ServerError" });
    expect(fetch.calls).toHaveLength(1);
  });

  it("fails every caller that joined a refresh which failed ambiguously, none presenting the refresh token again (§5 rule 6: a replay revokes the family)", async () => {
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(503, {}), json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock: fakeClock() });
    const outcomes = await Promise.allSettled([provider.getAccessToken(), provider.getAccessToken(), provider.refreshAfterUnauthorized("at-old")]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(fetch.calls).toHaveLength(1);
  });

  // Each answer spends rt-1 and carries rt-2, but is not a usable token set.
  it.each([
    ["without token_type", { access_token: "at-2", refresh_token: "rt-2" }],
    ["with a token_type other than Bearer", { access_token: "at-2", token_type: "mac", refresh_token: "rt-2" }],
    ["with an expires_in that is not a number", { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2", expires_in: "soon" }],
    ["without an access token", { token_type: "Bearer", refresh_token: "rt-2" }],
  ])("keeps the new refresh token of a 200 token answer %s, so the next refresh presents it and not the spent one", async (_, answer) => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    // A provider that revokes the family when a spent refresh token comes back (spec §5 rule 6).
    const spent = new Set<string>();
    const fetch = scriptedFetch((call) => {
      const presented = (call.body as Record<string, string>).refresh_token as string;
      if (spent.has(presented)) return json(401, { error: "invalid_grant" });
      spent.add(presented);
      if (presented === "rt-1") return json(200, answer);
      return json(200, { access_token: "at-3", token_type: "Bearer", refresh_token: "rt-3" });
    });
    const logger = captureLogger();
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, logger });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IncompleteTokenSetError);
    // Saved without an access token: nothing unusable is handed out, and the token never shows in the error.
    expect(await store.load()).toEqual({ refreshToken: "rt-2" });
    expect(`${JSON.stringify(error)} ${inspect(error, { showHidden: true, depth: 5 })} ${logger.text()}`).not.toContain("rt-2");

    expect(await provider.getAccessToken()).toBe("at-3");
    expect(fetch.calls.map((c) => (c.body as Record<string, string>).refresh_token)).toEqual(["rt-1", "rt-2"]);
    expect(await store.load()).toMatchObject({ refreshToken: "rt-3" });
  });

  it("does not hand out tokens it could not save, and saves them before the next use", async () => {
    const { provider, store, fetch } = setup();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const token = await provider.getAccessToken();
    expect(fetch.calls).toHaveLength(1);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(store.saves[0]!.accessToken).toBe(token);
  });

  it("names only the kind of a failed save in its error, never the store's message, which may quote the tokens", async () => {
    const { provider, store, logger } = setup();
    const save = store.save.bind(store);
    let failed = false;
    store.save = async (tokens) => {
      if (!failed) {
        failed = true;
        throw new RangeError(`could not write ${JSON.stringify(tokens)}`);
      }
      await save(tokens);
    };
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect((error as Error).message).toContain("RangeError");
    const token = await provider.getAccessToken();
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    for (const secret of ["rt-2", token]) {
      expect(`${(error as Error).message} ${JSON.stringify(error)} ${inspect(error, { showHidden: true, depth: 5 })} ${logger.text()}`).not.toContain(secret);
    }
  });

  it("names a failed save by the system's code (ENOSPC) when the store's error is a plain Error, never its message", async () => {
    const { provider, store } = setup();
    const save = store.save.bind(store);
    let failed = false;
    store.save = async (tokens) => {
      if (!failed) {
        failed = true;
        throw Object.assign(new Error(`ENOSPC: no space left on device, write ${tokens.refreshToken}`), { code: "ENOSPC" });
      }
      await save(tokens);
    };
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect((error as Error).message).toBe("rotated tokens could not be saved to the token store (ENOSPC); they will be saved again before use");
  });

  it("holds the tokens a failed save left until saveHeldTokens saves them, and says false while the store still refuses", async () => {
    const { provider, store, fetch } = setup();
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(await provider.saveHeldTokens()).toBe(true);
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(provider.holdsUnsavedTokens).toBe(true);

    store.failNextSave = true;
    expect(await provider.saveHeldTokens()).toBe(false);
    expect(provider.holdsUnsavedTokens).toBe(true);
    expect(await provider.saveHeldTokens()).toBe(true);
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("lets a refresh in flight end before saveHeldTokens tries, so tokens its failed save leaves are saved, not left held", async () => {
    const { provider, store, fetch } = setup();
    store.failNextSave = true;
    const slowSave = holdSaves(store);
    const refreshing = provider.getAccessToken().catch((error: unknown) => error);
    await vi.waitFor(() => expect(fetch.calls).toHaveLength(1));

    const settling = provider.saveHeldTokens();
    slowSave.finish();

    expect(await settling).toBe(true);
    expect(await refreshing).toBeInstanceOf(TokenUnavailableError);
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
  });

  it("hands the tokens a failed save left to a successor over the same store, which saves them before its first refresh and never presents the spent token", async () => {
    const { provider, store, fetch, clock, events } = setup();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const successor = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "client-1", clientSecret: "rotated-secret", store, fetch, clock });
    await provider.handOverHeldTokens(successor);
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(successor.holdsUnsavedTokens).toBe(true);
    // The old one is closed: it starts no refresh with what it loaded.
    clock.advance(20 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);

    await successor.getAccessToken();
    expect(events.filter((e) => e.startsWith("refresh:"))).toEqual(["refresh:rt-1", "refresh:rt-2"]);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2", "rt-3"]);
    // A successor already in use is refused: its own tokens would be overwritten.
    await expect(setup().provider.handOverHeldTokens(successor)).resolves.toBeUndefined();
    const used = setup();
    used.store.failNextSave = true;
    await expect(used.provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await expect(used.provider.handOverHeldTokens(successor)).rejects.toBeInstanceOf(RangeError);
    expect(used.provider.holdsUnsavedTokens).toBe(true);
  });

  it("hands nothing over to itself: it stays open, keeps its held tokens and still refreshes", async () => {
    const { provider, store, clock } = setup();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await provider.handOverHeldTokens(provider);
    expect(provider.holdsUnsavedTokens).toBe(true);
    await provider.getAccessToken();
    clock.advance(20 * MINUTE);
    await provider.getAccessToken();
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2", "rt-3"]);
  });

  it("waits, before handing held tokens over, for a refresh in flight whose save then fails: the successor gets its tokens", async () => {
    const { provider, store, fetch, clock } = setup();
    store.failNextSave = true;
    const slowSave = holdSaves(store);
    const refreshing = provider.getAccessToken().catch((error: unknown) => error);
    await vi.waitFor(() => expect(fetch.calls).toHaveLength(1));
    const successor = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "client-1", clientSecret: "rotated-secret", store, fetch, clock });
    const handingOver = provider.handOverHeldTokens(successor);
    await turns();
    slowSave.finish();
    await handingOver;
    expect(await refreshing).toBeInstanceOf(TokenUnavailableError);
    expect(successor.holdsUnsavedTokens, "the tokens stayed behind in the closed provider").toBe(true);
    await successor.getAccessToken();
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("refuses a successor that holds tokens of its own a failed save left (a sign-in), though it loaded none", async () => {
    const old = setup();
    old.store.failNextSave = true;
    await expect(old.provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const successor = setup();
    successor.store.failNextSave = true;
    await expect(successor.provider.authorizeWithCode("code-1", "https://app.example/cb")).rejects.toBeInstanceOf(TokenUnavailableError);
    await expect(old.provider.handOverHeldTokens(successor.provider)).rejects.toBeInstanceOf(RangeError);
    expect(old.provider.holdsUnsavedTokens).toBe(true);
  });

  it("gives no reason for held tokens once a later call saved them, though the last saveHeldTokens failed", async () => {
    const { provider, store } = setup();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    store.failNextSave = true;
    expect(await provider.saveHeldTokens()).toBe(false);
    expect(provider.heldTokensFailure).toBeInstanceOf(TokenUnavailableError);
    await provider.getAccessToken();
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(provider.heldTokensFailure, "a stale reason for tokens no longer held").toBeUndefined();
  });

  it("does not write held tokens into a store emptied meanwhile without a lock: no lease vouches that nobody wrote since", async () => {
    const { provider, store, tokenEvents } = setup();
    store.isEmpty = async () => (await store.load()) === undefined;
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    store.set(undefined as unknown as StoredTokens);
    expect(await provider.saveHeldTokens()).toBe(true);
    expect(store.saves).toEqual([]);
    expect(tokenEvents).toEqual(["held_tokens_dropped"]);
  });

  it("asks for authorization, sending nothing, when a refresh is due and the store was emptied after the tokens were loaded", async () => {
    const { provider, store, fetch } = setup();
    const first = await provider.getAccessToken();
    store.set(undefined as unknown as StoredTokens); // a token file removed by hand
    const error = await provider.refreshAfterUnauthorized(first).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect((error as Error).message).toMatch(/^no tokens stored for this tenant: authorize the integration first/);
    expect(fetch.calls).toHaveLength(1);
    expect(await store.load()).toBeUndefined();
  });

  it("starts no refresh once closed: a fresh token is still handed out, a call that needs a refresh fails and sends nothing", async () => {
    const start = fakeClock().now();
    const { provider, store, fetch, clock } = setup({ stored: { refreshToken: "rt-1", accessToken: "fresh-access", accessTokenExpiresAt: start + 10 * MINUTE } });
    provider.close();
    expect(await provider.getAccessToken()).toBe("fresh-access");
    // A 401 to a token another caller already replaced is answered with the replacement, no refresh needed.
    expect(await provider.refreshAfterUnauthorized("replaced-access")).toBe("fresh-access");

    clock.advance(10 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await expect(provider.refreshAfterUnauthorized("fresh-access")).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
  });

  it("with refreshOnlyInWindows, starts a refresh only while a window is open: none after the last one closed, until another opens", async () => {
    const { provider, store, fetch, clock } = setup({ refreshOnlyInWindows: true });
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(fetch.calls).toHaveLength(0);

    const closeFirst = provider.openRefreshWindow();
    const closeSecond = provider.openRefreshWindow();
    const first = await provider.getAccessToken();
    closeFirst();
    // Closing the same window twice does not close the other one.
    closeFirst();
    clock.advance(60 * MINUTE);
    const second = await provider.getAccessToken();
    expect(second).not.toBe(first);
    closeSecond();

    // A call left behind by the work (a 401 after its window closed) sends nothing and keeps what is stored.
    await expect(provider.refreshAfterUnauthorized(second)).rejects.toBeInstanceOf(TokenUnavailableError);
    clock.advance(60 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(fetch.calls).toHaveLength(2);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2", "rt-3"]);

    const closeThird = provider.openRefreshWindow();
    expect(await provider.getAccessToken()).not.toBe(second);
    closeThird();
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2", "rt-3", "rt-4"]);
  });

  it("lets a refresh in flight when its window closes end and save its tokens", async () => {
    const { provider, store, fetch } = setup({ refreshOnlyInWindows: true });
    const slowSave = holdSaves(store);
    const closeWindow = provider.openRefreshWindow();
    const refreshing = provider.getAccessToken();
    await vi.waitFor(() => expect(fetch.calls).toHaveLength(1));

    closeWindow();
    const settled = provider.saveHeldTokens();
    slowSave.finish();

    expect(await settled).toBe(true);
    expect(await refreshing).toEqual(expect.any(String));
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("lets a refresh in flight when it is closed end and save its tokens", async () => {
    const { provider, store, fetch } = setup();
    const slowSave = holdSaves(store);
    const refreshing = provider.getAccessToken();
    await vi.waitFor(() => expect(fetch.calls).toHaveLength(1));

    provider.close();
    const joining = provider.getAccessToken();
    slowSave.finish();

    const token = await refreshing;
    expect(await joining).toBe(token);
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("saves again tokens a failed save had already written (a store that failed after its write), instead of taking them for another's", async () => {
    const { provider, store, logger } = setup();
    // The file was replaced, then the directory fsync failed: the write may not survive a power loss.
    const save = store.save.bind(store);
    store.save = async (tokens) => {
      store.save = save;
      store.set(tokens);
      throw new Error("EIO: directory fsync failed");
    };
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);

    const token = await provider.getAccessToken();

    expect(store.saves.map((s) => [s.refreshToken, s.accessToken])).toEqual([["rt-2", token]]);
    expect(provider.holdsUnsavedTokens).toBe(false);
    expect(logger.lines.filter((l) => l.level === "warn")).toEqual([]);
  });

  it("says so when no tokens are stored", async () => {
    const clock = fakeClock();
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore(undefined), fetch: scriptedFetch(), clock });
    await expect(provider.getAccessToken()).rejects.toThrow(/authorize the integration first/);
  });
});

describe("OAuthTokenProvider with a cross-process lock", () => {
  function fakeLock(busyAttempts: number) {
    const log: string[] = [];
    let attempts = 0;
    const lock: RefreshLock = {
      async tryAcquire(name, ttlMs) {
        attempts += 1;
        log.push(`try:${name}:${ttlMs}`);
        if (attempts <= busyAttempts) return undefined;
        log.push("acquired");
        return { renew: async () => true, release: async () => void log.push("released") };
      },
    };
    return { lock, log };
  }

  it("waits for a busy lock with the injected clock, refreshes under it and releases it", async () => {
    const { lock, log } = fakeLock(3);
    const { provider, fetch, clock, events } = setup({ lock });
    await provider.getAccessToken();
    expect(log.filter((l) => l.startsWith("try"))).toHaveLength(4);
    expect(clock.sleeps).toEqual([250, 250, 250]);
    expect(fetch.calls).toHaveLength(1);
    expect(log.slice(-2)).toEqual(["acquired", "released"]);
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
  });

  it("reports a revoked family, and saved tokens, even when releasing the lease fails", async () => {
    const throttled = Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" });
    const lock: RefreshLock = { tryAcquire: async () => ({ renew: async () => true, release: async () => Promise.reject(throttled) }) };
    const clock = fakeClock();
    const events: TokenEvent[] = [];
    const logger = captureLogger();
    const revoked = new OAuthTokenProvider({
      baseUrl: BASE_URL,
      clientId: "c",
      clientSecret: CLIENT_SECRET,
      store: memoryStore({ refreshToken: "rt-reused" }),
      clock,
      lock,
      logger,
      fetch: scriptedFetch(json(401, { error: "invalid_grant" })),
      onEvent: (e) => events.push(e),
    });
    await expect(revoked.getAccessToken()).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(events).toEqual(["reauthorization_required"]);
    expect(logger.lines.map((l) => l.message)).toContain("releasing the token refresh lease failed; it runs out by itself");

    const rotated = setup({ lock });
    expect(await rotated.provider.getAccessToken()).toBe(rotated.store.saves[0]?.accessToken);
    await expect(rotated.provider.authorizeWithCode("code-1", "https://app.example/cb")).resolves.toBeUndefined();
    expect(rotated.store.saves.map((t) => t.refreshToken)).toEqual(["rt-2", "rt-3"]);
  });

  it("saves the tokens of the code flow under the lease, waiting while another process holds it", async () => {
    const { lock, log } = fakeLock(2);
    const { provider, clock, store } = setup({ lock });
    const save = store.save.bind(store);
    store.save = async (tokens) => {
      log.push(`save:${tokens.refreshToken}`);
      await save(tokens);
    };
    await provider.authorizeWithCode("code-1", "https://app.example/cb");
    expect(clock.sleeps).toEqual([DEFAULT_LOCK_POLL_MS, DEFAULT_LOCK_POLL_MS]);
    expect(log.slice(-3)).toEqual(["acquired", "save:rt-2", "released"]);
  });

  it("keeps the code flow's tokens when the lease stays held, and saves them before their first use", async () => {
    let busy = true;
    const log: string[] = [];
    const lock: RefreshLock = {
      async tryAcquire() {
        if (busy) return undefined;
        log.push("acquired");
        return { renew: async () => true, release: async () => void log.push("released") };
      },
    };
    const { provider, store, fetch } = setup({ lock });
    await expect(provider.authorizeWithCode("code-1", "https://app.example/cb")).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(store.saves).toEqual([]);

    busy = false;
    const token = await provider.getAccessToken();
    expect(store.saves.map((tokens) => tokens.refreshToken)).toEqual(["rt-2"]);
    expect(token).toBe(store.saves[0]?.accessToken);
    expect(fetch.calls, "refreshed instead of using the code flow's tokens").toHaveLength(1);
    expect(log).toEqual(["acquired", "released"]);
  });

  it("never presents the refresh token after its lease could have lapsed, however long the provider asks to wait", async () => {
    const clock = fakeClock();
    const ttlMs = 30_000;
    const { lock, released } = timedLock(clock);
    const sentAt: number[] = [];
    const fetch = scriptedFetch((call: RecordedCall) => {
      sentAt.push(clock.now());
      expect((call.body as Record<string, string>).refresh_token).toBe("rt-1");
      return json(429, { error: "slow_down" }, { "retry-after": "3" });
    });
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: ttlMs });
    const acquiredAt = clock.now();
    await expect(provider.getAccessToken()).rejects.toThrow();
    // Attempts (10 s timeout each) only where a whole one ends in the lease's first half: t=0 and t=3 s; one at t=6 s
    // could still be unanswered at 16 s. Then the lease is released.
    expect(sentAt).toEqual([acquiredAt, acquiredAt + 3_000]);
    expect(released()).toBe(true);
    expect(store.saves).toEqual([]);
  });

  it("never presents the refresh token after its lease could have lapsed in real time, though the wall clock was stepped back meanwhile", async () => {
    // The wall clock (the provider's) and the monotonic one (`elapsed`, on which the file lock's lease runs out): both
    // move with every wait, but only the wall clock is stepped back, an hour, by NTP or a person.
    const { clock, wall, elapsed } = wallAndMonotonic();
    const { lock, released } = timedLock({ now: elapsed, sleep: clock.sleep });
    const sentAt: number[] = [];
    const fetch = scriptedFetch(() => {
      if (sentAt.length === 0) wall.advance(-60 * MINUTE);
      sentAt.push(elapsed());
      return json(429, { error: "slow_down" }, { "retry-after": "10" });
    });
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: wall.now() - 1 });
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: 30_000 };
    const provider = new OAuthTokenProvider({ ...options, elapsed });
    await expect(provider.getAccessToken()).rejects.toThrow();
    // Only the attempt at 0 ends, whole (10 s timeout), in the lease's first 15 s of real time: one 10 s later could
    // still be unanswered at 20 s, and one at 30 s would follow another process's refresh under the lapsed lease.
    expect(sentAt).toEqual([0]);
    expect(released()).toBe(true);
    expect(store.saves).toEqual([]);
  });

  it("pairs the system clock with the monotonic one by default: a wall clock stepped back does not stretch the refresh either", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
    try {
      const start = performance.now();
      const { lock, released } = timedLock({ now: () => performance.now(), sleep: async () => undefined });
      const sentAt: number[] = [];
      const fetch = scriptedFetch(() => {
        // Date only: the monotonic clock (performance.now) is never stepped.
        if (sentAt.length === 0) vi.setSystemTime(Date.now() - 60 * MINUTE);
        sentAt.push(performance.now() - start);
        return json(429, { error: "slow_down" }, { "retry-after": "10" });
      });
      const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: Date.now() - 1 });
      const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, lock, lockTtlMs: 30_000 });
      const outcome = provider.getAccessToken().catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(await outcome).toBeInstanceOf(DeadlineExceededError);
      expect(sentAt).toEqual([0]);
      expect(released()).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("holds the refresh of a refresh token adopted after a rejected grant to the same lease: never presented after it could have lapsed", async () => {
    const clock = fakeClock();
    const { lock, released } = timedLock(clock);
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    const sent: string[] = [];
    const fetch = scriptedFetch((call: RecordedCall) => {
      const token = (call.body as Record<string, string>).refresh_token as string;
      sent.push(`${token}@${clock.now() - acquiredAt}`);
      if (token !== "rt-1") return json(429, { error: "slow_down" }, { "retry-after": "3" });
      // Another process rotated first; the access token it saved has expired since.
      store.set({ refreshToken: "rt-9", accessToken: "stale", accessTokenExpiresAt: clock.now() - 1 });
      return json(401, { error: "invalid_grant" });
    });
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: 30_000 });
    const acquiredAt = clock.now();
    await expect(provider.getAccessToken()).rejects.toThrow();
    // As for the first refresh token: only attempts that end, whole (10 s timeout), in the lease's first half.
    expect(sent).toEqual(["rt-1@0", "rt-9@0", "rt-9@3000"]);
    expect(released()).toBe(true);
  });

  describe("with tokens a failed save left held, over a store emptied meanwhile (a token file removed by hand)", () => {
    /** A provider whose first save failed, over a store then emptied; `renewed` answers the lease's renewals. */
    async function heldOverEmptied(options: { renewed: boolean; tellsEmpty: boolean; quietEvents?: OAuthTokenProviderOptions["quietEvents"] }) {
      const lock: RefreshLock = { tryAcquire: async () => ({ renew: async () => options.renewed, release: async () => undefined }) };
      const held = setup({ lock, quietEvents: options.quietEvents });
      if (options.tellsEmpty) held.store.isEmpty = async () => (await held.store.load()) === undefined;
      held.store.failNextSave = true;
      await expect(held.provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
      held.store.set(undefined as unknown as StoredTokens);
      return held;
    }

    it("writes them into a store that says it is empty while the lease they were issued under was renewed throughout", async () => {
      const { provider, store, fetch, tokenEvents } = await heldOverEmptied({ renewed: true, tellsEmpty: true });
      expect(await provider.saveHeldTokens()).toBe(true);
      expect(store.saves.map((tokens) => tokens.refreshToken)).toEqual(["rt-2"]);
      // Said, so a caller that reported them held can report them saved.
      expect(tokenEvents).toEqual(["held_tokens_saved"]);
      expect(await provider.getAccessToken()).toBe(store.saves[0]?.accessToken);
      expect(fetch.calls).toHaveLength(1);
    });

    it("does not once that lease was lost (another writer may have stored a newer set, since removed too), nor into a store that cannot tell", async () => {
      for (const options of [
        { renewed: false, tellsEmpty: true },
        { renewed: true, tellsEmpty: false },
      ]) {
        const { provider, store, logger, tokenEvents } = await heldOverEmptied(options);
        expect(await provider.saveHeldTokens(), JSON.stringify(options)).toBe(true);
        expect(store.saves, JSON.stringify(options)).toEqual([]);
        expect(tokenEvents, JSON.stringify(options)).toEqual(["held_tokens_dropped"]);
        expect(logger.text()).toContain("the token store changed after the rotated tokens failed to save");
      }
    });

    it("reports them dropped without a line of its own when its caller words that event itself (one event, one line)", async () => {
      const { provider, logger, tokenEvents } = await heldOverEmptied({ renewed: false, tellsEmpty: true, quietEvents: ["held_tokens_dropped"] });
      expect(await provider.saveHeldTokens()).toBe(true);
      expect(tokenEvents).toEqual(["held_tokens_dropped"]);
      expect(logger.text()).not.toContain("the token store changed after the rotated tokens failed to save");
    });
  });

  it("refuses a lease too short for one whole refresh attempt in its first half", () => {
    const lock: RefreshLock = { tryAcquire: async () => undefined };
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore(undefined), lock };
    expect(() => new OAuthTokenProvider({ ...options, lockTtlMs: 19_999, timeoutMs: 10_000 })).toThrow(RangeError);
    expect(() => new OAuthTokenProvider({ ...options, lockTtlMs: 20_000, timeoutMs: 10_000 })).not.toThrow();
  });

  it("takes any request timeout without a lock: there is no lease for a refresh to fit in", () => {
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore(undefined) };
    expect(() => new OAuthTokenProvider({ ...options, timeoutMs: 60_000 })).not.toThrow();
    expect(() => new OAuthTokenProvider({ ...options, lockTtlMs: 1_000, timeoutMs: 10_000 })).not.toThrow();
  });

  it("uses the tokens another process saved while it waited for the lock, without refreshing", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    const fetch = scriptedFetch(json(500, {}));
    let attempts = 0;
    const lock: RefreshLock = {
      async tryAcquire() {
        attempts += 1;
        if (attempts === 1) {
          // The holder finishes its refresh while we wait.
          store.set({ refreshToken: "rt-2", accessToken: "rotated-by-holder", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
          return undefined;
        }
        return { renew: async () => true, release: async () => undefined };
      },
    };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock });
    expect(await provider.getAccessToken()).toBe("rotated-by-holder");
    expect(fetch.calls).toHaveLength(0);
  });

  it("keeps the tokens another process saved, found under the lock, for its next call: no lease taken, no store read", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    let loads = 0;
    const load = store.load.bind(store);
    store.load = async () => {
      loads += 1;
      return load();
    };
    const fetch = scriptedFetch(json(500, {}));
    let acquired = 0;
    const lock: RefreshLock = {
      async tryAcquire() {
        acquired += 1;
        // Another process refreshed after this one read "old" and before it took the lease.
        store.set({ refreshToken: "rt-2", accessToken: "rotated-elsewhere", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
        return { renew: async () => true, release: async () => undefined };
      },
    };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock });
    expect(await provider.getAccessToken()).toBe("rotated-elsewhere");
    expect({ acquired, loads }).toEqual({ acquired: 1, loads: 2 });
    expect(await provider.getAccessToken()).toBe("rotated-elsewhere");
    expect({ acquired, loads }).toEqual({ acquired: 1, loads: 2 });
    expect(fetch.calls).toHaveLength(0);
  });

  it("gives up with TokenUnavailableError when the lock stays busy past lockWaitMs, without refreshing", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const fetch = scriptedFetch(json(500, {}));
    const lock: RefreshLock = { tryAcquire: async () => undefined };
    const provider = new OAuthTokenProvider({
      baseUrl: BASE_URL,
      clientId: "c",
      clientSecret: CLIENT_SECRET,
      store,
      fetch,
      clock,
      lock,
      lockWaitMs: 1000,
      lockPollMs: 100,
    });
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(clock.sleeps).toHaveLength(10);
    expect(fetch.calls).toHaveLength(0);
  });

  it("waits lockWaitMs of real time for a busy lock, though the wall clock is stepped back an hour during the wait", async () => {
    const { clock, elapsed } = wallAndMonotonic({ atMs: 100, byMs: 60 * MINUTE });
    let tries = 0;
    const lock: RefreshLock = {
      async tryAcquire() {
        // A wait stretched by the step fails here at once, not by the test's timeout.
        if (++tries > 20) throw new Error(`tried ${tries} times: the wait outlasted lockWaitMs`);
        return undefined;
      },
    };
    const store = memoryStore({ refreshToken: "rt-1" });
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch: scriptedFetch(), clock, lock, lockWaitMs: 1000, lockPollMs: 100 };
    const provider = new OAuthTokenProvider({ ...options, elapsed });
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect({ tries, waited: elapsed() }).toEqual({ tries: 11, waited: 1000 });
  });

  it("names the lock's holder, where the lock can tell, when it gives up waiting for it", async () => {
    const lock: RefreshLock = { tryAcquire: async () => undefined, holderOf: async (name) => (name === "qashio-token-refresh" ? "pid 4242 on this machine" : undefined) };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore({ refreshToken: "rt-1" }), fetch: scriptedFetch(), clock: fakeClock(), lock, lockWaitMs: 0 });
    await expect(provider.getAccessToken()).rejects.toThrow('token refresh lock "qashio-token-refresh" still held by another process (pid 4242 on this machine) after 0 ms');
  });

  it("waits 20 s by default for a busy lock, trying every 250 ms, before giving up", async () => {
    const clock = fakeClock();
    const fetch = scriptedFetch();
    const lock: RefreshLock = { tryAcquire: async () => undefined };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore({ refreshToken: "rt-1" }), fetch, clock, lock });
    await expect(provider.getAccessToken()).rejects.toThrow(/still held by another process after 20000 ms$/);
    expect(clock.sleeps).toEqual(Array.from({ length: 80 }, () => DEFAULT_LOCK_POLL_MS));
    expect(fetch.calls).toHaveLength(0);
  });

  it("still gives up with TokenUnavailableError, naming no holder, when asking the lock who holds it fails", async () => {
    const lock: RefreshLock = { tryAcquire: async () => undefined, holderOf: async () => Promise.reject(new Error("EACCES reading the lease file")) };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store: memoryStore({ refreshToken: "rt-1" }), fetch: scriptedFetch(), clock: fakeClock(), lock, lockWaitMs: 0 });
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expect((error as Error).message).toBe('token refresh lock "qashio-token-refresh" still held by another process after 0 ms');
  });

  it("takes the lease under the lockName it is given, not the default one", async () => {
    const { lock, log } = fakeLock(0);
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch: rotatingTokenEndpoint(clock, []), clock, lock, lockName: "acme-token-refresh" });
    await provider.getAccessToken();
    expect(log).toEqual(["try:acme-token-refresh:30000", "acquired", "released"]);
  });

  it("releases the lock when the refresh fails", async () => {
    const { lock, log } = fakeLock(0);
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1" });
    const provider = new OAuthTokenProvider({
      baseUrl: BASE_URL,
      clientId: "c",
      clientSecret: CLIENT_SECRET,
      store,
      fetch: scriptedFetch(json(401, {})),
      clock,
      lock,
    });
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(log).toEqual(["try:qashio-token-refresh:30000", "acquired", "released"]);
  });

  it("hands the token out only once the lease is released: a Lambda frozen after the call would leave it held", async () => {
    let finishRelease: (() => void) | undefined;
    const lock: RefreshLock = { tryAcquire: async () => ({ renew: async () => true, release: () => new Promise<void>((resolve) => (finishRelease = resolve)) }) };
    const { provider, store } = setup({ lock });
    let handedOut = false;
    const pending = provider.getAccessToken().then((token) => ((handedOut = true), token));
    // Waits for the release to begin however many turns the refresh takes, then holds it there.
    await vi.waitFor(() => expect(finishRelease, "the lease's release never began").toBeDefined());
    await turns(10);
    expect(handedOut, "handed out while the lease's release was still under way").toBe(false);
    finishRelease?.();
    expect(await pending).toBe(store.saves[0]?.accessToken);
  });
  it("counts the refresh deadline from when the lease was asked for, so a slow acquire cannot let it lapse mid-save", async () => {
    const clock = manualClock();
    const ttlMs = 30_000;
    // As the DynamoDB lease does: the expiry is set before the put, whose answer may come seconds later (SDK retries).
    const { lock } = leaseLock(clock, { firstPutMs: 12_000 });
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    // The provider rotates, answering within the client's timeout but slowly.
    const { presented, reply } = slowTokenEndpoint(clock, 9_000);
    const fetch = scriptedFetch(reply);
    const make = () => new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: ttlMs, lockWaitMs: 60_000 });
    const slowSave = holdSaves(store);
    const first = make().getAccessToken().catch((e: unknown) => e);
    await clock.advance(21_000);
    await clock.advance(9_500);
    const second = make().getAccessToken().catch((e: unknown) => e);
    await clock.advance(1_000);
    slowSave.finish();
    await clock.advance(60_000);
    const [firstOutcome, secondOutcome] = await Promise.all([first, second]);
    expect(presented.filter((t) => t === "rt-1"), "the spent refresh token presented again").toEqual(["rt-1"]);
    // The slow acquire left too little of the lease for a whole refresh: that call gives up before presenting anything.
    expect(firstOutcome).toBeInstanceOf(Error);
    expect(secondOutcome).toBe(store.saves.at(-1)?.accessToken);
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-2"]);
  });

  it("renews the lease as its save starts when a slow refresh used more than a third of it, so a slow renewal still lands in time", async () => {
    const clock = manualClock();
    const ttlMs = 30_000;
    // A renewal whose write lands 7 s after it is asked for (a DynamoDB attempt timed out, then retried).
    const { lock } = leaseLock(clock, { renewMs: 7_000 });
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    // Asked to wait 4 s, then answered 9.5 s later: the rotated tokens arrive 13.5 s into the lease.
    const { presented, reply } = slowTokenEndpoint(clock, 9_500);
    const fetch = scriptedFetch(json(429, { message: "slow down" }, { "retry-after": "4" }), reply);
    const make = () => new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: ttlMs, lockWaitMs: 60_000 });
    const slowSave = holdSaves(store);
    const first = make().getAccessToken();
    await clock.advance(30_200);
    // Counted from the save's start, the first renewal would come at 23.5 s and land at 30.5 s: after the lease ran out.
    const second = make().getAccessToken();
    await clock.advance(1_000);
    slowSave.finish();
    await clock.advance(60_000);
    const [firstToken, secondToken] = await Promise.all([first, second]);
    expect(presented.filter((t) => t === "rt-1"), "the spent refresh token presented again").toEqual(["rt-1"]);
    expect(secondToken).toBe(firstToken);
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-2"]);
  });

  it("takes the lease for the lockTtlMs it is given, so a refresh it lets run past 30 s is not presented again by another process", async () => {
    const clock = manualClock();
    const ttlMs = 90_000;
    const { lock } = leaseLock(clock);
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old", accessTokenExpiresAt: clock.now() - 1 });
    // Answered 38 s in: inside the request timeout and the lease's first half (45 s), past the default lease (30 s).
    const { presented, reply } = slowTokenEndpoint(clock, 38_000);
    const fetch = scriptedFetch(reply);
    const make = () => new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, lockTtlMs: ttlMs, lockWaitMs: 120_000, timeoutMs: 40_000 });
    const first = make().getAccessToken();
    await clock.advance(32_000);
    const second = make().getAccessToken();
    await clock.advance(60_000);
    const [firstToken, secondToken] = await Promise.all([first, second]);
    expect(presented.filter((t) => t === "rt-1"), "the spent refresh token presented again").toEqual(["rt-1"]);
    expect(secondToken).toBe(firstToken);
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-2"]);
  });
});

describe("OAuthTokenProvider held to its caller's deadline (refreshWithinCallDeadline)", () => {
  const TTL_MS = 30_000;

  it("starts no refresh whose whole lease would end after the call's deadline: nothing sent, the refresh token unspent", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    await expect(provider.getAccessToken({ deadline: clock.now() + TTL_MS - 1 })).rejects.toBeInstanceOf(DeadlineExceededError);
    await expect(provider.refreshAfterUnauthorized("expired-access", { deadline: clock.now() + TTL_MS - 1 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
    // With room for the whole lease, the same call refreshes.
    await provider.getAccessToken({ deadline: clock.now() + TTL_MS });
    expect(fetch.calls).toHaveLength(1);
  });

  it("still tries a free lease once when the call's deadline leaves exactly the lease's length, and refreshes under it", async () => {
    const log: string[] = [];
    const lock: RefreshLock = { tryAcquire: async () => (log.push("try"), { renew: async () => true, release: async () => void log.push("released") }) };
    const { provider, fetch, clock } = setup({ lock, refreshWithinCallDeadline: true });
    await provider.getAccessToken({ deadline: clock.now() + TTL_MS });
    expect(fetch.calls).toHaveLength(1);
    expect(log).toEqual(["try", "released"]);
  });

  it("checks the deadline again after the store's re-read before spending the refresh token: a slow read leaves no room, nothing is sent", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    const load = store.load.bind(store);
    let loads = 0;
    store.load = async () => {
      // The first read (the provider's first use) is quick; the re-read before a refresh takes 2 s.
      if ((loads += 1) > 1) clock.advance(2_000);
      return load();
    };
    await expect(provider.getAccessToken({ deadline: clock.now() + TTL_MS })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(loads).toBeGreaterThan(1);
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
  });

  it("gives up the wait for a busy lease once a refresh taking it could no longer end by the deadline, as out of time", async () => {
    let tries = 0;
    const lock: RefreshLock = { tryAcquire: async () => (++tries > 1_000 ? { renew: async () => true, release: async () => undefined } : undefined) };
    const { provider, fetch, clock } = setup({ lock, refreshWithinCallDeadline: true });
    const deadline = clock.now() + TTL_MS + 2_000;
    const error = await provider.getAccessToken({ deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    // The call's own deadline (a cycle compares it with its own to tell that it ran out of time), and why, in words.
    expect(error).toMatchObject({ deadline, message: "token refresh not started: its 30000 ms lease would end after the calling request's deadline" });
    expect(fetch.calls).toHaveLength(0);
    // It waited about the 2 s the deadline left, not the 20 s a wait takes otherwise.
    expect(clock.now()).toBeGreaterThanOrEqual(deadline - TTL_MS);
    expect(clock.now()).toBeLessThanOrEqual(deadline - TTL_MS + DEFAULT_LOCK_POLL_MS);
  });

  it("lets a caller that joined a refresh its starter's deadline stopped try on its own, when its deadline leaves room", async () => {
    let tries = 0;
    // Busy for about 4 s (the poll is 250 ms), then free.
    const lock: RefreshLock = { tryAcquire: async () => (++tries > 16 ? { renew: async () => true, release: async () => undefined } : undefined) };
    const { provider, fetch, clock } = setup({ lock, refreshWithinCallDeadline: true });
    const start = clock.now();
    const hurried = provider.getAccessToken({ deadline: start + TTL_MS + 2_000 });
    const patient = provider.getAccessToken({ deadline: start + TTL_MS + 60_000 });
    await expect(hurried).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(await patient).toMatch(/^ey/);
    expect(fetch.calls).toHaveLength(1);
    // A joiner with no more time than the starter gets the starter's error, without a try of its own: not even when
    // the lease is free right after the starter's last try, made at the very edge of the room both deadlines leave.
    const starterTries = 2_000 / DEFAULT_LOCK_POLL_MS + 1;
    tries = 0;
    const freedAfterStarter: RefreshLock = { tryAcquire: async () => (++tries > starterTries ? { renew: async () => true, release: async () => undefined } : undefined) };
    const again = setup({ lock: freedAfterStarter, refreshWithinCallDeadline: true });
    const deadline = again.clock.now() + TTL_MS + 2_000;
    const results = await Promise.allSettled([again.provider.getAccessToken({ deadline }), again.provider.getAccessToken({ deadline })]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(again.fetch.calls).toHaveLength(0);
    expect(tries).toBe(starterTries);
  });

  it("hands out a token inside its early-refresh window when no refresh fits before the deadline but it outlives the call", async () => {
    // Expires in 40 s (inside the 60 s early-refresh window), the call's deadline in 20 s: no 30 s lease fits.
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    store.set({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 40_000 });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("early-access");
    // Without the call's length given, the token must outlive the deadline.
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000 })).toBe("early-access");
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
    // Still due: a call with room for the lease refreshes it.
    expect(await provider.getAccessToken({ deadline: clock.now() + TTL_MS })).not.toBe("early-access");
    expect(fetch.calls).toHaveLength(1);
  });

  it("hands out the early token it knows when no refresh fits before the deadline and the store cannot be read again", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    store.set({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 40_000 });
    const load = store.load.bind(store);
    let loads = 0;
    store.load = async () => {
      if ((loads += 1) > 1) throw new Error("store down");
      return load();
    };
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("early-access");
    expect(loads).toBe(2);
    expect(fetch.calls).toHaveLength(0);
  });

  it("still refuses, out of time, a token that could expire while the call carrying it runs, or one refused", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    store.set({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 8_000 });
    // 8 s left, the call may take 10 s.
    await expect(provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    // Valid past the call's end, not past the deadline it was given without its length.
    await expect(provider.getAccessToken({ deadline: clock.now() + 20_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    // The provider answered 401 for it: never handed back, however long it would have been valid.
    const fresh = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 40_000 } });
    await expect(fresh.provider.refreshAfterUnauthorized("early-access", { deadline: fresh.clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    await expect(fresh.provider.getAccessToken({ deadline: fresh.clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
    expect(fresh.fetch.calls).toHaveLength(0);
  });

  it("hands out a token due for its early refresh that expires exactly as the call may end, not one a millisecond short", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true });
    store.set({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 10_000 });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("early-access");
    const short = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 9_999 } });
    await expect(short.provider.getAccessToken({ deadline: short.clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
  });

  it("hands out the early token only when no refresh could start: a refresh made and refused (a revoked family) is thrown", async () => {
    const clock = fakeClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 40_000 });
    const fetch = scriptedFetch(json(400, { error: "invalid_grant" }));
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshWithinCallDeadline: true });
    // The deadline leaves room for the lease: the refresh is made, and its refusal must reach the caller.
    await expect(provider.getAccessToken({ deadline: clock.now() + 35_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(fetch.calls).toHaveLength(1);
  });

  it("sends a cycle's last call (an acknowledge) with the still-valid token when no refresh fits before the deadline", async () => {
    const clock = fakeClock();
    const id = "0b9f7c1e-3d2a-4c5b-8e6f-1a2b3c4d5e6f";
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: clock.now() + 40_000 });
    const fetch = scriptedFetch((call) => (call.url.pathname === "/oauth2/token" ? json(500, {}) : json(200, { status: "success", data: {} })));
    const tokenProvider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshWithinCallDeadline: true });
    const client = new QashioClient({ baseUrl: BASE_URL, fetch, clock, tokenProvider });
    await expect(client.acknowledgeTransactions([id], { deadline: clock.now() + 20_000 })).resolves.toMatchObject({ acknowledged: 1 });
    expect(fetch.calls.map((c) => [c.url.pathname, c.headers.authorization])).toEqual([["/public/v1/erp/transactions/acknowledge", "Bearer early-access"]]);
    // The rule is the call's own 10 s timeout, not the deadline: a token for 15 s more still goes out, one for 9 s not.
    store.set({ refreshToken: "rt-1", accessToken: "later-access", accessTokenExpiresAt: clock.now() + 15_000 });
    const later = new QashioClient({ baseUrl: BASE_URL, fetch, clock, tokenProvider: new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshWithinCallDeadline: true }) });
    await expect(later.acknowledgeTransactions([id], { deadline: clock.now() + 20_000 })).resolves.toMatchObject({ acknowledged: 1 });
    store.set({ refreshToken: "rt-1", accessToken: "last-access", accessTokenExpiresAt: clock.now() + 9_000 });
    const last = new QashioClient({ baseUrl: BASE_URL, fetch, clock, tokenProvider: new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshWithinCallDeadline: true }) });
    await expect(last.acknowledgeTransactions([id], { deadline: clock.now() + 20_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls.map((c) => c.headers.authorization)).toEqual(["Bearer early-access", "Bearer later-access"]);
  });

  it("replays a call answered 401 near the deadline with the token another process already stored: no refresh, no lease", async () => {
    const clock = fakeClock();
    const id = "0b9f7c1e-3d2a-4c5b-8e6f-1a2b3c4d5e6f";
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old-access", accessTokenExpiresAt: clock.now() + 10 * MINUTE });
    let leases = 0;
    const lock: RefreshLock = { tryAcquire: async () => (++leases, { renew: async () => true, release: async () => undefined }) };
    const fetch = scriptedFetch((call) => {
      if (call.url.pathname === "/oauth2/token") return json(500, {});
      return call.headers.authorization === "Bearer new-access" ? json(200, { status: "success", data: {} }) : json(401, {});
    });
    const tokenProvider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, lock, refreshWithinCallDeadline: true });
    const client = new QashioClient({ baseUrl: BASE_URL, fetch, clock, tokenProvider });
    expect(await tokenProvider.getAccessToken()).toBe("old-access");
    // The other poller (or the rotation) rotated meanwhile: the provider now answers 401 for the token in memory.
    store.set({ refreshToken: "rt-2", accessToken: "new-access", accessTokenExpiresAt: clock.now() + 15 * MINUTE });
    await expect(client.acknowledgeTransactions([id], { deadline: clock.now() + 20_000 })).resolves.toMatchObject({ acknowledged: 1 });
    expect(fetch.calls.map((c) => [c.url.pathname, c.headers.authorization])).toEqual([
      ["/public/v1/erp/transactions/acknowledge", "Bearer old-access"],
      ["/public/v1/erp/transactions/acknowledge", "Bearer new-access"],
    ]);
    expect(leases).toBe(0);
    expect(store.saves).toEqual([]);
    // Held from then on: the next call sends it without looking again.
    store.load = async () => {
      throw new Error("not read again");
    };
    expect(await tokenProvider.getAccessToken({ deadline: clock.now() + 20_000 })).toBe("new-access");
  });

  it("hands out the token another process stored when the one in memory expired and no refresh fits before the deadline", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "old-access", accessTokenExpiresAt: Date.UTC(2025, 0, 15, 12, 5, 0) } });
    expect(await provider.getAccessToken()).toBe("old-access");
    clock.advance(5 * MINUTE);
    store.set({ refreshToken: "rt-2", accessToken: "new-access", accessTokenExpiresAt: clock.now() + 15 * MINUTE });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("new-access");
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
  });

  it("hands out a token another process stored whose expiry is unknown (the spec shows no lifetime): fresh until a 401, not refused for want of one", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "old-access", accessTokenExpiresAt: Date.UTC(2025, 0, 15, 12, 5, 0) } });
    expect(await provider.getAccessToken()).toBe("old-access");
    clock.advance(5 * MINUTE);
    store.set({ refreshToken: "rt-2", accessToken: "new-access" });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("new-access");
    expect(fetch.calls).toHaveLength(0);
  });

  it("prefers the token another process stored to the early one in memory that would still do, and holds it from then on", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: Date.UTC(2025, 0, 15, 12, 0, 0) + 40_000 } });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("early-access");
    store.set({ refreshToken: "rt-2", accessToken: "new-access", accessTokenExpiresAt: clock.now() + 15 * MINUTE });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("new-access");
    store.load = async () => {
      throw new Error("not read again");
    };
    expect(await provider.getAccessToken()).toBe("new-access");
    expect(fetch.calls).toHaveLength(0);
  });

  it("keeps the tokens a refresh in this process saved while its read of the store was answering, not that older read", async () => {
    const { provider, fetch, clock, store } = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "early-access", accessTokenExpiresAt: Date.UTC(2025, 0, 15, 12, 0, 0) + 40_000 } });
    expect(await provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).toBe("early-access");
    // The next read of the store sees the early token, then answers only once released.
    const load = store.load.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    store.load = async () => {
      const tokens = await load();
      if (!held) {
        held = true;
        await gate;
      }
      return tokens;
    };
    const hurried = provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 });
    await turns(10);
    expect(held).toBe(true);
    // A caller with time refreshes meanwhile (its own read of the store answers at once).
    const refreshed = await provider.getAccessToken();
    expect(refreshed).not.toBe("early-access");
    expect(fetch.calls).toHaveLength(1);
    release();
    // The hurried call may send what its read found (valid for its whole timeout) ...
    expect(await hurried).toBe("early-access");
    // ... but the refreshed tokens stay the ones held: no read, no refresh for the next call.
    store.load = async () => {
      throw new Error("not read again");
    };
    expect(await provider.getAccessToken()).toBe(refreshed);
    expect(fetch.calls).toHaveLength(1);
  });

  it("still ends out of time when the store holds nothing better (the refused token, an expired one) or cannot be read", async () => {
    const { provider, fetch, clock, store, logger } = setup({ refreshWithinCallDeadline: true, stored: { refreshToken: "rt-1", accessToken: "old-access", accessTokenExpiresAt: Date.UTC(2025, 0, 15, 13, 0, 0) } });
    expect(await provider.getAccessToken()).toBe("old-access");
    // The store still holds the token just refused.
    await expect(provider.refreshAfterUnauthorized("old-access", { deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    // The store holds another token, expiring before the call could end.
    store.set({ refreshToken: "rt-2", accessToken: "short-access", accessTokenExpiresAt: clock.now() + 3_000 });
    await expect(provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    // The store's read fails: out of time as before, not the store's error.
    store.load = async () => {
      throw new Error("throttled");
    };
    await expect(provider.getAccessToken({ deadline: clock.now() + 20_000, requestTimeoutMs: 10_000 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(logger.lines).toEqual([{ level: "warn", message: "reading the token store for a token another process stored failed", attributes: { reason: "Error" } }]);
    expect(fetch.calls).toHaveLength(0);
    expect(store.saves).toEqual([]);
  });

  it("replays a call answered 401 with the token another caller refreshed meanwhile, when it outlives the call though not the deadline", async () => {
    const clock = fakeClock();
    const id = "0b9f7c1e-3d2a-4c5b-8e6f-1a2b3c4d5e6f";
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "old-access", accessTokenExpiresAt: clock.now() + 60 * MINUTE });
    const fetch = scriptedFetch(async (call) => {
      if (call.url.pathname === "/oauth2/token") return json(200, { access_token: "new-access", token_type: "Bearer", refresh_token: "rt-2", expires_in: 30 });
      if (call.headers.authorization !== "Bearer old-access") return json(200, { status: "success", data: {} });
      // Another caller met the 401 first and refreshed, 16 s ago: the new token (30 s) is due for its early refresh.
      await tokenProvider.refreshAfterUnauthorized("old-access");
      clock.advance(16_000);
      return json(401, {});
    });
    const tokenProvider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, refreshWithinCallDeadline: true });
    const client = new QashioClient({ baseUrl: BASE_URL, fetch, clock, tokenProvider });
    // At the replay 24 s are left to the deadline: no 30 s lease fits, and the new token ends before the deadline but
    // after the replay's 10 s timeout.
    await expect(client.acknowledgeTransactions([id], { deadline: clock.now() + 40_000 })).resolves.toMatchObject({ acknowledged: 1 });
    expect(fetch.calls.map((c) => c.headers.authorization ?? c.url.pathname)).toEqual(["Bearer old-access", "/oauth2/token", "Bearer new-access"]);
  });

  it("ignores call deadlines without the option (local mode, whose budget may be shorter than the lease)", async () => {
    const { provider, fetch, clock } = setup();
    await provider.getAccessToken({ deadline: clock.now() + 1 });
    expect(fetch.calls).toHaveLength(1);
  });
});

describe("OAuthTokenProvider saving rotated tokens under the lease", () => {
  const TTL = 30_000;

  /** Processes sharing one store, lease and rotating token endpoint, over a clock that moves only when told to. */
  function processes(options: { renew?: () => Promise<boolean>; renewMs?: number; lifetimeMs?: number } = {}) {
    const clock = manualClock();
    const start = clock.now();
    const events: string[] = [];
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: start - 1 }, events);
    const fetch = rotatingTokenEndpoint(clock, events, options.lifetimeMs);
    const { lock, renewals } = leaseLock(clock, { renew: options.renew, renewMs: options.renewMs });
    const logger = captureLogger();
    /** A process's provider; `over` replaces its options (its own view of the store, say). */
    const spawn = (over: Partial<OAuthTokenProviderOptions> = {}) =>
      new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch, clock, logger, lock, lockTtlMs: TTL, lockWaitMs: 60_000, ...over });
    const presented = () => fetch.calls.map((call) => (call.body as Record<string, string>).refresh_token);
    return { clock, start, events, store, lock, renewals, logger, spawn, presented };
  }

  /**
   * A view of `store` whose second save (the first re-save of tokens a failed save left held) fails again a second
   * later, just as a call left behind starts asking (`ask`) at every turn (its calls in `leftovers`); every later save
   * waits for `later` (given the tokens and the save's number) before it lands.
   */
  function resaveFailingAsCallsArrive(clock: Clock, store: TokenStore, ask: () => Promise<string>, later: (tokens: StoredTokens, save: number) => Promise<void>) {
    const leftovers: Promise<unknown>[] = [];
    const askAtEveryTurn = async () => {
      for (let i = 0; i < 30; i += 1) {
        leftovers.push(ask().catch((error: unknown) => error));
        await Promise.resolve();
      }
    };
    let saves = 0;
    const view: TokenStore = {
      load: () => store.load(),
      save: async (tokens) => {
        saves += 1;
        if (saves === 2) {
          await clock.sleep(1_000);
          void askAtEveryTurn();
          throw new Error("throttled");
        }
        if (saves > 2) await later(tokens, saves);
        await store.save(tokens);
      },
    };
    return { view, leftovers, saves: () => saves };
  }

  it("keeps the lease while a save outlasts it: a second process waits, then uses the saved tokens, and no refresh token is presented twice", async () => {
    const { clock, events, store, lock, spawn, presented } = processes();
    const slowSave = holdSaves(store);
    const first = spawn().getAccessToken();
    await turns();
    expect(events).toEqual(["refresh:rt-1"]);
    await clock.advance(TTL + 5_000); // the save is still running past the lease it started under
    const second = spawn().getAccessToken();
    await clock.advance(5_000);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined();
    slowSave.finish();
    const token = await first;
    await clock.advance(1_000); // the second process's next poll takes the released lease
    const secondToken = await second;
    expect(presented()).toEqual(["rt-1"]);
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
    expect(secondToken).toBe(token);
  });

  it("makes a caller already past its first read when a refresh fails to save re-save first: it neither waits on its own lease nor presents the spent token", async () => {
    const { clock, start, store, spawn, presented } = processes();
    const provider = spawn();
    // The second caller's first read of the store waits until the first caller's refresh has failed to save.
    const load = store.load.bind(store);
    let reads = 0;
    let letSecondRead!: () => void;
    const secondRead = new Promise<void>((resolve) => (letSecondRead = resolve));
    store.load = async () => {
      reads += 1;
      if (reads === 2) await secondRead;
      return load();
    };
    store.failNextSave = true;
    const first = provider.getAccessToken().catch((error: unknown) => error);
    const second = provider.getAccessToken();
    expect(await first).toBeInstanceOf(TokenUnavailableError);
    letSecondRead();
    const token = await second; // the clock has not moved: it did not wait for the kept lease to run out
    expect(presented()).toEqual(["rt-1"]);
    expect((await store.load())?.accessToken).toBe(token);
    expect(clock.now()).toBe(start);
  });

  it("saves the code flow's tokens under the lease it kept since a failed save, without waiting on it, and gives it back", async () => {
    const { clock, start, store, lock, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL), "the failed save's lease is kept").toBeUndefined();

    await provider.authorizeWithCode("code-1", "https://app.example/cb");

    expect(clock.now(), "it waited on its own lease").toBe(start);
    // The code flow's family replaces the rotated tokens that never got saved.
    expect((await store.load())?.refreshToken).toBe("rt-3");
    const free = await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL);
    expect(free, "the lease was not given back").toBeDefined();
  });

  it("lets a re-save of earlier tokens finish before saving the code flow's, so the old family never lands over the new", async () => {
    const { store, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    // The next save (the re-save of rt-2, after its check) waits until released; later saves go through.
    const save = store.save.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let saves = 0;
    store.save = async (tokens) => {
      if (++saves === 1) await gate;
      await save(tokens);
    };
    const resave = provider.getAccessToken();
    await turns();
    const signIn = provider.authorizeWithCode("code-1", "https://app.example/cb");
    await turns(20);
    release();
    await Promise.all([resave, signIn]);
    expect((await store.load())?.refreshToken, "the re-save wrote the old family over the sign-in").toBe("rt-3");
  });

  it("lets no re-save of earlier tokens start while the code flow's are being saved: the old family never lands over the new", async () => {
    // Renewals that take a second: a call arrives while the code flow renews the lease kept since the failed save.
    const { clock, store, spawn } = processes({ renewMs: 1_000 });
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    // Saves that wait until let through: the code flow's (rt-3), and a re-save of the held rt-2 should one run.
    const gates = new Map<string, { open(): void; opened: Promise<void> }>();
    for (const token of ["rt-2", "rt-3"]) {
      let open!: () => void;
      gates.set(token, { open: () => open(), opened: new Promise<void>((resolve) => (open = resolve)) });
    }
    const save = store.save.bind(store);
    store.save = async (tokens) => {
      await gates.get(tokens.refreshToken)?.opened;
      await save(tokens);
    };
    const signIn = provider.authorizeWithCode("code-1", "https://app.example/cb");
    await turns();
    const leftover = provider.getAccessToken();
    await clock.advance(1_000);
    gates.get("rt-3")!.open();
    await clock.advance(1_000);
    gates.get("rt-2")!.open();
    await clock.advance(1_000);
    await signIn;
    await leftover;
    expect((await store.load())?.refreshToken, "the re-save wrote the old family over the sign-in").toBe("rt-3");
  });

  it("waits, before saving the code flow's tokens, for a re-save a call left behind started just as the one it waited for failed", async () => {
    // Renewals that take a second: the next re-save and the code flow's save each renew the kept lease first.
    const { clock, store, spawn } = processes({ renewMs: 1_000 });
    // The next re-save of the held tokens is slow (ten seconds), then lands.
    const { view, leftovers, saves } = resaveFailingAsCallsArrive(clock, store, () => provider.getAccessToken(), async (tokens) => {
      if (tokens.refreshToken === "rt-2") await clock.sleep(10_000);
    });
    const provider = spawn({ store: view });
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    leftovers.push(provider.getAccessToken().catch((error: unknown) => error));
    await turns();

    const signIn = provider.authorizeWithCode("code-1", "https://app.example/cb");
    for (let i = 0; i < 15; i += 1) await clock.advance(1_000);
    await signIn;
    await Promise.all(leftovers);
    expect((await store.load())?.refreshToken, "the re-save wrote the old family over the sign-in").toBe("rt-3");
    expect(saves()).toBe(4);
  });

  it("tells a last try that waited for the code flow's save why it failed, as a try that re-saved itself would", async () => {
    const { store, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    // The code flow's save waits until let through, then fails.
    const slowSave = holdSaves(store);
    const signIn = provider.authorizeWithCode("code-1", "https://app.example/cb").catch((error: unknown) => error);
    await turns();
    // An exit's last try (saveHeldTokens) comes while the sign-in saves: it waits for that save.
    const lastTry = provider.saveHeldTokens();
    await turns();
    store.failNextSave = true;
    slowSave.finish();
    expect(await signIn).toBeInstanceOf(TokenUnavailableError);
    expect(await lastTry).toBe(false);
    expect(provider.heldTokensFailure, "the lost tokens' message would give no reason").toBeInstanceOf(TokenUnavailableError);
  });

  it("hands out the re-saved tokens even when releasing the lease kept since the failed save fails (it runs out by itself)", async () => {
    const { store, lock, logger, spawn, presented } = processes();
    const tryAcquire = lock.tryAcquire.bind(lock);
    lock.tryAcquire = async (name, ttlMs) => {
      const handle = await tryAcquire(name, ttlMs);
      return handle && { ...handle, release: () => Promise.reject(new Error("network down")) };
    };
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const token = await provider.getAccessToken();
    expect((await store.load())?.accessToken).toBe(token);
    expect(presented()).toEqual(["rt-1"]);
    expect(logger.lines.filter((l) => l.level === "warn").map((l) => l.message)).toContain(
      "releasing the token refresh lease failed; it runs out by itself",
    );
  });

  it("keeps renewing the lease kept after a failed save while the process idles: another process waits instead of presenting the spent token", async () => {
    // A loop between two cycles (or a Lambda container between invocations) holds the new refresh token in memory only.
    const { clock, events, store, lock, renewals, logger, spawn, presented } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(3 * TTL);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined();
    // A `run --once` beside the loop needs a refresh (the stored access token expired): it waits and gives up.
    const other = spawn().getAccessToken();
    const refused = expect(other).rejects.toThrow(/still held by another process/);
    await clock.advance(60_000);
    await refused;
    expect(presented()).toEqual(["rt-1"]);
    expect(renewals.length).toBeGreaterThanOrEqual(9); // every third of the lease
    expect(logger.lines.filter((l) => l.level === "warn")).toEqual([]);
    // The next call saves the tokens, stops renewing and gives the lease back.
    const token = await provider.getAccessToken();
    expect(store.saves.map((s) => [s.refreshToken, s.accessToken])).toEqual([["rt-2", token]]);
    const renewed = renewals.length;
    await clock.advance(3 * TTL);
    expect(renewals.length).toBe(renewed);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
    expect(presented()).toEqual(["rt-1"]);
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
  });

  it("has the successor keep renewing the lease handed over with held tokens: another process waits instead of presenting the spent token", async () => {
    const { clock, store, lock, spawn, presented } = processes();
    const old = spawn();
    store.failNextSave = true;
    await expect(old.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const successor = spawn({ clientSecret: "rotated-secret" });
    await old.handOverHeldTokens(successor);
    await clock.advance(3 * TTL);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL), "the handed-over lease ran out").toBeUndefined();
    await successor.getAccessToken();
    expect(presented()).toEqual(["rt-1"]);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL), "the lease was not given back once saved").toBeDefined();
  });

  it("keeps the lease when the code flow's save fails, renewed until the next call saves its tokens, then gives it back", async () => {
    const { clock, store, lock, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.authorizeWithCode("code-1", "https://app.example/cb")).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(2 * TTL);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL), "another process could take the lease and refresh the old family").toBeUndefined();
    await provider.getAccessToken();
    expect((await store.load())?.refreshToken).toBe("rt-2");
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("keeps no lease renewed for tokens a refresh in flight when the provider closed failed to save: the lease runs out", async () => {
    const { clock, store, lock, renewals, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    const slowSave = holdSaves(store);
    const refreshing = provider.getAccessToken().catch((error: unknown) => error);
    await turns();
    provider.close();
    slowSave.finish();
    expect(await refreshing).toBeInstanceOf(TokenUnavailableError);
    const renewed = renewals.length;
    await clock.advance(3 * TTL);
    expect(renewals.length, "a closing process's timer kept renewing").toBe(renewed);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("keeps the code flow's tokens under the lease it kept when renewing it fails, and saves them at the next call without waiting on it", async () => {
    let failRenew = false;
    const { clock, start, store, spawn } = processes({
      renew: async () => {
        if (!failRenew) return true;
        failRenew = false;
        throw new Error("network down");
      },
    });
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    failRenew = true;
    await expect(provider.authorizeWithCode("code-1", "https://app.example/cb")).rejects.toBeInstanceOf(TokenUnavailableError);
    expect(provider.holdsUnsavedTokens).toBe(true);
    await provider.getAccessToken();
    expect(clock.now(), "it waited on its own lease").toBe(start);
    expect((await store.load())?.refreshToken).toBe("rt-3");
  });

  it("renews no lease after close when the last try could not renew the kept one: a closing process's timer does not hold it for good", async () => {
    let failRenew = false;
    const { clock, store, renewals, spawn } = processes({
      renew: async () => {
        if (failRenew) throw new Error("network down");
        return true;
      },
    });
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    provider.close();
    failRenew = true;
    expect(await provider.saveHeldTokens()).toBe(false);
    expect(provider.heldTokensFailure).toBeInstanceOf(TokenUnavailableError);
    const renewed = renewals.length;
    await clock.advance(3 * TTL);
    expect(renewals.length, "the closed provider kept renewing the lease").toBe(renewed);
  });

  it("hands held tokens over whole while a call the old provider left behind asks for a token: it re-saves none of them, so the spent token is never stored over the successor's rotation", async () => {
    // Renewals that take a second: the handover waits for the kept lease's renewal in flight.
    const { clock, store, spawn, presented } = processes({ renewMs: 1_000 });
    // The old provider's saves go through a view of the store whose saves can be held back (a slow Secrets Manager).
    let holding = false;
    let letSave!: () => void;
    const slow = new Promise<void>((resolve) => (letSave = resolve));
    const oldView: TokenStore = {
      load: () => store.load(),
      save: async (tokens) => {
        if (holding) await slow;
        await store.save(tokens);
      },
    };
    const old = spawn({ store: oldView });
    store.failNextSave = true;
    await expect(old.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    holding = true;
    await clock.advance(TTL / 3); // the kept lease's renewal is under way

    const successor = spawn();
    const handingOver = old.handOverHeldTokens(successor);
    await turns();
    // A call the old runtime left behind (a retry waking up) asks for a token meanwhile.
    const leftover = old.getAccessToken().catch((error: unknown) => error);
    await clock.advance(2_000);
    await handingOver;
    expect(old.holdsUnsavedTokens).toBe(false);

    // The successor saves the held tokens, and rotates them once they are due.
    const resaved = successor.getAccessToken();
    await clock.advance(2_000);
    await resaved;
    await clock.advance(16 * MINUTE);
    const rotated = successor.getAccessToken();
    await clock.advance(2_000);
    await rotated;
    letSave();
    await turns(20);
    expect(await leftover).toBeInstanceOf(TokenUnavailableError);
    expect((await store.load())?.refreshToken, "the old provider stored the spent token over its successor").toBe("rt-3");

    // The next refresh, in any process, presents the newest refresh token: none is presented twice.
    await clock.advance(16 * MINUTE);
    const next = spawn().getAccessToken();
    await clock.advance(2_000);
    await next;
    expect(presented()).toEqual(["rt-1", "rt-2", "rt-3"]);
  });

  it("waits, before handing held tokens over, for a re-save a call left behind started just as the one it waited for failed", async () => {
    const { clock, start, store, spawn, presented } = processes();
    // The next one hangs until twenty minutes in (Secrets Manager slow to answer), then lands.
    const { view: oldView, leftovers, saves } = resaveFailingAsCallsArrive(clock, store, () => old.getAccessToken(), async (_tokens, save) => {
      if (save === 3) await clock.sleep(start + 20 * MINUTE - clock.now());
    });
    const old = spawn({ store: oldView });
    store.failNextSave = true;
    await expect(old.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    leftovers.push(old.getAccessToken().catch((error: unknown) => error));
    await turns();

    const successor = spawn();
    // The rebuilt runtime uses its provider once the handover is done, and again once its token is due.
    const used = old.handOverHeldTokens(successor).then(async () => {
      await successor.getAccessToken();
      await clock.sleep(16 * MINUTE);
      await successor.getAccessToken();
    });
    for (let i = 0; i < 45; i += 1) await clock.advance(MINUTE);
    await used;
    await Promise.all(leftovers);
    expect(saves()).toBe(3);
    // The next refresh, in any process, presents the newest refresh token: none is presented twice.
    const next = spawn().getAccessToken();
    await clock.advance(MINUTE);
    await next;
    expect(presented().filter((token, i, all) => all.indexOf(token) !== i), "a spent refresh token presented again").toEqual([]);
  });

  it("stops renewing the kept lease once a renewal found it lost, with one warning", async () => {
    const { clock, store, renewals, logger, spawn } = processes({ renew: async () => false });
    store.failNextSave = true;
    await expect(spawn().getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const renewed = renewals.length;
    await clock.advance(10 * TTL);
    expect(renewals.length).toBe(renewed + 1);
    expect(logger.lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([expect.stringMatching(/kept for rotated tokens not yet saved was lost; another process may refresh with the spent token$/)]);
  });

  it("stops renewing the kept lease once closed: a closing process's timer does not hold it for good", async () => {
    const { clock, store, lock, renewals, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(TTL);
    provider.close();
    const renewed = renewals.length;
    await clock.advance(TTL);
    expect(renewals.length).toBe(renewed);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("releases the kept lease once the next call saved the tokens again: another owner takes it at once", async () => {
    const { events, store, lock, spawn } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await provider.getAccessToken(); // the clock has not moved: the lease would hold for 30 s more
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("cuts the kept lease's hung renewal short when the next call re-saves, instead of waiting on it for ever", async () => {
    // The kept lease's first renewal hangs (a silent endpoint) until its signal aborts, as the DynamoDB lease's does.
    let hung = false;
    const { clock, store, spawn } = processes();
    const { lock } = leaseLock(clock);
    const hangingFirstRenewal: RefreshLock = {
      async tryAcquire(name, ttlMs) {
        const handle = await lock.tryAcquire(name, ttlMs);
        if (handle === undefined) return undefined;
        return {
          renew: (ttl, signal) => {
            if (hung) return handle.renew(ttl, signal);
            hung = true;
            return new Promise<boolean>((_resolve, reject) => signal?.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))));
          },
          release: () => handle.release(),
        };
      },
    };
    const provider = spawn({ lock: hangingFirstRenewal });
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(TTL / 3); // the kept lease's renewal hangs
    expect(hung).toBe(true);
    let resaved = false;
    const pending = provider.getAccessToken().then(() => (resaved = true));
    await clock.advance(1_000);
    expect(resaved, "the re-save waited on the hung renewal").toBe(true);
    await pending;
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-2"]);
  });

  it("waits for the kept lease's renewal in flight before a re-save renews and releases it: a late write cannot take it back", async () => {
    const clock = manualClock();
    const store = memoryStore({ refreshToken: "rt-1", accessToken: "expired-access", accessTokenExpiresAt: clock.now() - 1 });
    // A lease that checks its owner, then writes (as the file lock does); its first renewal takes 5 s to write.
    let lease: { owner: number; expiresAt: number } | undefined;
    let owners = 0;
    let renewals = 0;
    const lock: RefreshLock = {
      async tryAcquire(_name, ttlMs) {
        if (lease !== undefined && lease.expiresAt > clock.now()) return undefined;
        const owner = ++owners;
        lease = { owner, expiresAt: clock.now() + ttlMs };
        return {
          renew: async (ttl) => {
            if (lease?.owner !== owner) return false;
            if ((renewals += 1) === 1) await clock.sleep(5_000);
            lease = { owner, expiresAt: clock.now() + ttl };
            return true;
          },
          release: async () => {
            if (lease?.owner === owner) lease = undefined;
          },
        };
      },
    };
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch: rotatingTokenEndpoint(clock, []), clock, lock, lockTtlMs: TTL });
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(TTL / 3); // the kept lease's renewal is writing
    expect(renewals).toBe(1);
    const resaved = provider.getAccessToken();
    await clock.advance(5_000);
    await resaved;
    await clock.advance(5_000);
    expect(store.saves.map((t) => t.refreshToken)).toEqual(["rt-2"]);
    expect(lease, "a renewal in flight wrote the lease back after its release").toBeUndefined();
  });

  it("does not wait on its own kept lease when the tokens it saved again need a refresh at once", async () => {
    // Tokens past half their 30 s life (the refresh skew is capped at half), the kept lease (30 s) still held: the
    // call that saves them again must refresh them too.
    const { clock, events, store, spawn, presented } = processes({ lifetimeMs: 30_000 });
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(16_000);
    let token: string | undefined;
    void provider.getAccessToken().then((t) => (token = t));
    await turns(20); // no clock advance: a wait for the lease would never end
    expect(token).toBeDefined();
    expect(events).toEqual(["refresh:rt-1", "save:rt-2", "refresh:rt-2", "save:rt-3"]);
    expect(presented()).toEqual(["rt-1", "rt-2"]);
  });

  it("drops the unsaved tokens when the store changed after the failed save (a re-authorization), and uses the stored tokens as read under the lease", async () => {
    const { clock, store, lock, logger, spawn, presented } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const expiresAt = clock.now() + 15 * MINUTE;
    const reauthorized = { refreshToken: "rt-operator", accessToken: jwt({ sub: "company-1", exp: Math.floor(expiresAt / 1000) }), accessTokenExpiresAt: expiresAt };
    store.set(reauthorized);
    const load = vi.spyOn(store, "load");
    expect(await provider.getAccessToken()).toBe(reauthorized.accessToken);
    expect(load).toHaveBeenCalledTimes(1); // the tokens read under the lease are handed out, not read again
    expect(await store.load()).toEqual(reauthorized);
    expect(store.saves).toEqual([]);
    expect(presented()).toEqual(["rt-1"]);
    expect(logger.lines.filter((l) => l.level === "warn").map((l) => [l.message, l.attributes])).toEqual([
      // In the words docs/runbook.md (Function errors) quotes.
      ["the token store changed after the rotated tokens failed to save; using the stored tokens instead", undefined],
    ]);
    expect(logger.text()).not.toMatch(/rt-\d|rt-operator/);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined(); // the kept lease was released
  });

  it("re-saves only under a lease it holds: a re-authorization written under the lock while the kept lease had run out is not overwritten", async () => {
    // Renewals that do not land (a throttled table): the lease kept since the failed save runs out.
    const { clock, store, lock, spawn, presented } = processes({ renew: async () => false });
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(TTL);
    const operator = await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL); // `authorize` saves under the same lock
    expect(operator).toBeDefined();
    const pending = provider.getAccessToken();
    await turns(20);
    expect(store.saves).toEqual([]); // it waits for the lease: no load-check-save while another holds it
    const expiresAt = clock.now() + 15 * MINUTE;
    const reauthorized = { refreshToken: "rt-operator", accessToken: jwt({ sub: "company-1", exp: Math.floor(expiresAt / 1000) }), accessTokenExpiresAt: expiresAt };
    store.set(reauthorized);
    await operator?.release();
    await clock.advance(DEFAULT_LOCK_POLL_MS);
    expect(await pending).toBe(reauthorized.accessToken);
    expect(await store.load()).toEqual(reauthorized);
    expect(store.saves).toEqual([]);
    expect(presented()).toEqual(["rt-1"]);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined(); // and it released the lease it waited for
  });

  it("keeps its lease, renewed past its TTL, when a re-save fails before saving: no other process presents the spent token", async () => {
    const { clock, store, lock, spawn, presented } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    await clock.advance(TTL); // the kept lease is renewed while the tokens are unsaved, so no other process takes it:
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined(); // (the next test lets it lapse)
    failNextLoad(store);
    await expect(provider.getAccessToken()).rejects.toThrow(/store down/);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined(); // still held: the store holds the spent token
    const token = await provider.getAccessToken(); // its own next call saves, then releases
    expect((await store.load())?.accessToken).toBe(token);
    expect(presented()).toEqual(["rt-1"]);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("keeps a lease it took anew, once the kept one ran out, when a re-save fails before saving: no other process presents the spent token", async () => {
    const { clock, store, lock, spawn, presented } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    provider.close(); // no longer renewed: the kept lease runs out, and another process takes it and lets it go
    await clock.advance(TTL);
    await (await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL))?.release();
    failNextLoad(store);
    expect(await provider.saveHeldTokens()).toBe(false);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined(); // the new lease is held: the store holds the spent token
    expect(await provider.saveHeldTokens()).toBe(true);
    expect((await store.load())?.refreshToken).toBe("rt-2");
    expect(presented()).toEqual(["rt-1"]);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("fails the call at once when renewing the kept lease fails, instead of waiting for its own lease, and saves at the next call", async () => {
    const { clock, start, store, lock, spawn, presented } = processes();
    let renewFails = false;
    const down = new Error("network down");
    const tryAcquire = lock.tryAcquire.bind(lock);
    lock.tryAcquire = async (name, ttlMs) => {
      const handle = await tryAcquire(name, ttlMs);
      return handle && { ...handle, renew: (ttl: number, signal?: AbortSignal) => (renewFails ? Promise.reject(down) : handle.renew(ttl, signal)) };
    };
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    renewFails = true;
    // Chained, so a caller can tell why (the CLI words a lease file it could not read).
    await expect(provider.getAccessToken()).rejects.toMatchObject({ message: expect.stringMatching(/renewing the token refresh lease failed \(Error\)/), cause: down });
    expect(clock.now()).toBe(start); // no wait on its own lease
    renewFails = false;
    // The lease is still renewed while the tokens wait: no other process takes it meanwhile.
    await clock.advance(3 * TTL);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined();
    const token = await provider.getAccessToken();
    expect((await store.load())?.accessToken).toBe(token);
    expect(presented()).toEqual(["rt-1"]);
  });

  it("keeps the lease alive while a re-save outlasts it, so no other process takes it and presents the spent token", async () => {
    const { clock, start, store, lock, renewals, spawn, presented } = processes();
    const provider = spawn();
    store.failNextSave = true;
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(TokenUnavailableError);
    const slowSave = holdSaves(store);
    const pending = provider.getAccessToken();
    await clock.advance(TTL + 5_000);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeUndefined();
    expect(renewals.length).toBeGreaterThanOrEqual(3); // the kept lease renewed up front, then every third of its length
    slowSave.finish();
    const token = await pending;
    expect((await store.load())?.accessToken).toBe(token);
    expect(presented()).toEqual(["rt-1"]);
    expect(clock.now() - start).toBeGreaterThanOrEqual(TTL);
    expect(await lock.tryAcquire(DEFAULT_LOCK_NAME, TTL)).toBeDefined();
  });

  it("renews the lease every third of its length while the save runs, and stops once the save settles", async () => {
    const { clock, start, store, renewals, spawn } = processes();
    const slowSave = holdSaves(store);
    const pending = spawn().getAccessToken();
    await clock.advance(35_000);
    expect(renewals.map((at) => at - start)).toEqual([10_000, 20_000, 30_000]);
    slowSave.finish();
    await pending;
    expect(clock.sleeping).toBe(0); // the keep-alive's wait was cut short, not left pending
    await clock.advance(60_000);
    expect(renewals).toHaveLength(3);
  });

  it("logs a renewal that finds the lease lost or fails, without any token, and still saves and hands out the new tokens", async () => {
    const outcomes = [
      async () => false,
      async () => {
        throw Object.assign(new Error("throttled while writing rt-2"), { name: "ThrottlingException" });
      },
    ];
    const { clock, store, logger, spawn } = processes({ renew: () => (outcomes.shift() ?? (async () => true))() });
    const slowSave = holdSaves(store);
    const pending = spawn().getAccessToken();
    await clock.advance(25_000);
    slowSave.finish();
    const token = await pending;
    expect(store.saves.map((s) => s.refreshToken)).toEqual(["rt-2"]);
    expect(logger.lines.map((l) => [l.level, l.message, l.attributes])).toEqual([
      // The risk in words, for whoever reads the warning: what a lost lease may cost.
      ["warn", expect.stringMatching(/lease lost while saving the rotated tokens; another process may refresh with the spent token$/), undefined],
      ["warn", expect.stringMatching(/renewing the token refresh lease failed/), { error: "ThrottlingException" }],
    ]);
    expect(logger.text()).not.toMatch(/rt-\d/);
    expect(logger.text()).not.toContain(token);
  });

  it("does not starve a save that needs event-loop turns when the clock's sleep returns at once", async () => {
    const clock = fakeClock();
    const events: string[] = [];
    const store = memoryStore({ refreshToken: "rt-1" }, events);
    const save = store.save.bind(store);
    store.save = async (tokens) => {
      await turns(20);
      await save(tokens);
    };
    const { lock } = leaseLock(clock);
    const provider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: CLIENT_SECRET, store, fetch: rotatingTokenEndpoint(clock, events), clock, lock });
    await provider.getAccessToken();
    expect(events).toEqual(["refresh:rt-1", "save:rt-2"]);
  });
});

describe("StaticTokenProvider", () => {
  it("hands out the next token after a 401 and counts refreshes", async () => {
    const provider = new StaticTokenProvider(["a", "b"]);
    expect(await provider.getAccessToken()).toBe("a");
    expect(await provider.refreshAfterUnauthorized("a")).toBe("b");
    expect(await provider.refreshAfterUnauthorized("b")).toBe("b");
    expect(provider.refreshCount).toBe(2);
  });

  it("hands out the token a refresh moved to on later calls too", async () => {
    const provider = new StaticTokenProvider(["a", "b"]);
    await provider.refreshAfterUnauthorized("a");
    expect(await provider.getAccessToken()).toBe("b");
  });

  it("refuses an empty token list", () => {
    expect(() => new StaticTokenProvider([])).toThrow(new TypeError("StaticTokenProvider needs at least one token"));
  });
});
