/**
 * Pollers near the end of their invocation, whose remaining time counts down with the harness clock as Lambda's does
 * with real time (`Harness.invocation`): a slow provider, a `Retry-After` longer than the time left, a token refresh
 * due near the end. Each invocation ends before its timeout with a documented outcome, and nothing is lost: the next
 * invocations deliver everything, a subject sent twice under the same event id, the refresh token family intact.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HandlerOptions, PollResult } from "../../shared/aws/handlers.js";
import { createHarness, subjectIds, type Harness, type PublishedEvent } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

type Fetch = NonNullable<HandlerOptions["fetch"]>;

const company = () => {
  const data = h.sandbox.control.company(h.companyId);
  if (data === undefined) throw new Error("no company");
  return data;
};

function pathOf(input: string | URL | Request): string {
  return new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url).pathname;
}

/**
 * The harness's fetch whose every answer (token endpoint included) comes `seconds` of sandbox time after its request,
 * under the client's 10 s request timeout; requests sent together are answered together. `onAnswer` sees each.
 */
function slowProvider(seconds: number, onAnswer?: (method: string, path: string) => void): Fetch {
  return async (input, init) => {
    const answeredAt = h.clock.now() + seconds * 1_000;
    const response = await h.fetch(input, init);
    const behind = answeredAt - h.clock.now();
    if (behind > 0) h.sandbox.control.advanceClock(behind / 1_000);
    onAnswer?.(init?.method ?? "GET", pathOf(input));
    return response;
  };
}

/** One invocation with `remainingMs` left, counting down: what it returned, and whether it ended before its timeout. */
async function invoke(poll: ReturnType<Harness["poller"]>, remainingMs = 60_000): Promise<PollResult & { endedInTime: boolean }> {
  const { context, endsAt } = h.invocation(remainingMs);
  const result = await poll(undefined, context);
  return { ...result, endedInTime: h.clock.now() < endsAt };
}

/** Invokes `poll` until the provider has nothing pending (at most `max` times): every result. */
async function untilDrained(poll: ReturnType<Harness["poller"]>, max = 20): Promise<(PollResult & { endedInTime: boolean })[]> {
  const results: (PollResult & { endedInTime: boolean })[] = [];
  while (h.pendingAtProvider() > 0 && results.length < max) results.push(await invoke(poll));
  return results;
}

/**
 * Invokes `poll` until the provider has nothing pending, then expects every invocation to have ended in time and the
 * whole `backlog` delivered, each subject under one event id.
 */
async function expectRestDelivered(poll: ReturnType<Harness["poller"]>, backlog: ReadonlySet<string>): Promise<void> {
  const rest = await untilDrained(poll);
  expect(rest.every((r) => r.status === "completed" && r.endedInTime)).toBe(true);
  expect(subjectIds(h.published, "transaction.created")).toEqual(backlog);
  expect(oneIdPerSubject(h.published)).toBe(true);
}

/** Whether every subject was sent under one event id per type, however often it was sent. */
function oneIdPerSubject(events: readonly PublishedEvent[]): boolean {
  const ids = new Map<string, Set<string>>();
  for (const { detailType, detail } of events) {
    const key = `${detailType} ${detail.subject.id}`;
    ids.set(key, (ids.get(key) ?? new Set()).add(detail.id));
  }
  return [...ids.values()].every((set) => set.size === 1);
}

/** The ids of the provider's transactions not yet acknowledged. */
const backlogIds = () => new Set(company().transactions.all().filter((t) => t.client_sync_status !== "synced").map((t) => t.id));

/**
 * A backlog of `transactions`, and an access token stored with its expiry by a card cycle (the harness seeds a refresh
 * token only): a transaction cycle then starts without a refresh.
 */
async function warmedBacklog(transactions: number): Promise<{ backlog: Set<string>; expiresAt: number; refreshToken: string }> {
  h.sandbox.control.reset({ transactions, companyId: h.companyId });
  expect(await h.poller("cards")()).toMatchObject({ outcome: "complete", published: 0 });
  const stored = await h.tokenStore().load();
  if (stored?.accessTokenExpiresAt === undefined) throw new Error("no access token expiry stored");
  return { backlog: backlogIds(), expiresAt: stored.accessTokenExpiresAt, refreshToken: stored.refreshToken };
}

/** The sum of metric `name` over every EMF document written so far. */
function metricSum(name: string): number {
  const docs = h.output.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  return docs.reduce((sum, doc) => sum + (typeof doc[name] === "number" ? doc[name] : 0), 0);
}

/** Whether no refresh token was presented twice, and the stored one still refreshes (the family is intact). */
async function familyIntact(): Promise<boolean> {
  return new Set(h.refreshTokensPresented).size === h.refreshTokensPresented.length && (await h.familyStillValid());
}

describe("poll-transactions near the end of its invocation", () => {
  it("stops at its deadline before the timeout when every provider answer takes 9 s, and the next invocations deliver the rest", async () => {
    h.sandbox.control.reset({ transactions: 450, companyId: h.companyId });
    const backlog = backlogIds();
    const poll = h.poller("transactions", { fetch: slowProvider(9) });
    const results = await untilDrained(poll);
    expect(results[0]).toMatchObject({ status: "completed", outcome: "deadline", endedInTime: true });
    expect(results.length).toBeGreaterThan(2);
    expect(results.every((r) => r.status === "completed" && r.endedInTime)).toBe(true);
    expect(results.at(-1)?.outcome).toBe("complete");
    expect(subjectIds(h.published, "transaction.created")).toEqual(backlog);
    expect(oneIdPerSubject(h.published)).toBe(true);
    expect(await familyIntact()).toBe(true);
  });

  it("does not wait out a Retry-After longer than the time left: it ends `deadline` before the timeout, and the next invocation goes on", async () => {
    const { backlog } = await warmedBacklog(450);
    let acknowledges = 0;
    // Once the first page is acknowledged, the provider throttles the next list for 30 s: with 9 s answers, the
    // call deadline (15 s past the cycle's, 30 s before the timeout) is nearer than the wait and an attempt.
    const fetch = slowProvider(9, (method, path) => {
      if (method === "POST" && path.endsWith("/acknowledge") && ++acknowledges === 1) {
        h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 429, count: 1, retryAfter: 30 });
      }
    });
    // Waits take their time: a Retry-After waited out would show on the clock.
    const poll = h.poller("transactions", { fetch, clock: h.waitingClock });
    const first = await invoke(poll);
    expect(first).toMatchObject({ status: "completed", outcome: "deadline", endedInTime: true });
    expect(first.published).toBeGreaterThan(0);
    expect(h.sandbox.control.state.faults.list()).toEqual([]);
    await expectRestDelivered(poll, backlog);
    expect(await familyIntact()).toBe(true);
  });

  it("waits out a Retry-After that still fits before the call deadline, and goes on within the same invocation", async () => {
    const { backlog } = await warmedBacklog(150);
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 429, count: 1, retryAfter: 5 });
    const started = h.clock.now();
    const result = await invoke(h.poller("transactions", { clock: h.waitingClock }));
    expect(result).toMatchObject({ status: "completed", outcome: "complete", endedInTime: true });
    expect(h.clock.now() - started).toBeGreaterThanOrEqual(5_000);
    expect(subjectIds(h.published, "transaction.created")).toEqual(backlog);
  });

  it("finishes, saved, a token refresh a slow provider starts near the latest it may, before the timeout", async () => {
    const { backlog, expiresAt } = await warmedBacklog(450);
    // The access token falls due (60 s before it expires) 8 s into the invocation, and expires 52 s later: the read
    // ahead at 9 s needs its refresh, whose 30 s lease then ends 6 s before the call deadline (45 s in).
    h.sandbox.control.advanceClock((expiresAt - 68_000 - h.clock.now()) / 1_000);
    const presented = h.refreshTokensPresented.length;
    const poll = h.poller("transactions", { fetch: slowProvider(9) });
    const first = await invoke(poll);
    expect(first).toMatchObject({ status: "completed", outcome: "deadline", endedInTime: true });
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    // The refresh token it got is the one stored: nothing spent without being saved.
    expect(await familyIntact()).toBe(true);
    await expectRestDelivered(poll, backlog);
    expect(await familyIntact()).toBe(true);
  });

  it("has the refreshed token stored before its timeout when Secrets Manager hangs during the save: a slow read, then every write timing out", async () => {
    const { backlog, expiresAt } = await warmedBacklog(450);
    // As above: the refresh starts 9 s in and is answered at 18 s. From then on the secret's read takes 11 s and each
    // write times out after the SDK's 3 attempts of 4 s: 18 + 11 + 3 x 12 s would end past the 60 s timeout.
    h.sandbox.control.advanceClock((expiresAt - 68_000 - h.clock.now()) / 1_000);
    const { context, endsAt } = h.invocation();
    const hang = h.hangingSecrets(endsAt, 11_000);
    const onAnswer = (method: string, path: string) => {
      if (method === "POST" && path === "/oauth2/token") hang.on = true;
    };
    const presented = h.refreshTokensPresented.length;
    const result = await h.poller("transactions", { clients: hang.clients, fetch: slowProvider(9, onAnswer) })(undefined, context);
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    // What a Lambda stopped at its timeout leaves: the new refresh token (held in the table), not the spent one.
    const stored = await hang.storedAtEnd();
    expect(stored).toBeDefined();
    expect(h.refreshTokensPresented).not.toContain(stored);
    expect(result.status).toBe("completed");
    expect(h.clock.now()).toBeLessThan(endsAt);
    expect(metricSum("TokenSecretWriteFailed")).toBe(1);
    hang.on = false;
    await expectRestDelivered(h.poller("transactions", { fetch: slowProvider(9) }), backlog);
    expect(await familyIntact()).toBe(true);
  });

  it("spends no refresh token when the token endpoint throttles a refresh past its lease's first half: the invocation fails before its timeout, the next one goes on", async () => {
    const { backlog, expiresAt, refreshToken } = await warmedBacklog(450);
    // The access token falls due 8 s into the invocation: the refresh the read-ahead needs at 9 s is answered 429 at
    // 18 s, with a Retry-After of 20 s, past the first half of its lease (24 s), which bounds the refresh call.
    h.sandbox.control.advanceClock((expiresAt - 68_000 - h.clock.now()) / 1_000);
    h.sandbox.control.state.faults.add({ method: "POST", pathPrefix: "/oauth2/token", status: 429, count: 1, retryAfter: 20 });
    const poll = h.poller("transactions", { fetch: slowProvider(9), clock: h.waitingClock });
    const { context, endsAt } = h.invocation();
    // A refresh stopped by its lease, not by the cycle's deadline, is a token failure: the invocation fails (the
    // engine's `provider`), in time, with the Retry-After not waited out.
    await expect(poll(undefined, context)).rejects.toMatchObject({ name: "CycleAbortedError", message: expect.stringContaining("POST /oauth2/token was not retried") });
    expect(h.clock.now()).toBeLessThan(endsAt);
    expect(h.sandbox.control.state.faults.list()).toEqual([]);
    expect((await h.tokenStore().load())?.refreshToken).toBe(refreshToken);
    await expectRestDelivered(poll, backlog);
    expect(await h.familyStillValid()).toBe(true);
  });
});

/** Adds `count` active cards to the sandbox's list and records them all with one full walk, which publishes nothing. */
async function recordedCards(count: number): Promise<{ id: string; status: string }[]> {
  const cards = company().cards as unknown as { id: string; status: string }[];
  const [model] = company().cards;
  for (let n = 0; n < count; n += 1) cards.push({ ...model, id: `CA${String(n).padStart(10, "0")}`, status: "Active" } as never);
  expect(await h.poller("cards")()).toMatchObject({ status: "completed", outcome: "complete", published: 0 });
  return cards;
}

/**
 * Invokes the card poller until its walk completes (at most 20 times); expects the first invocation to stop at its
 * deadline and every one to end in time.
 */
async function expectWalkedOverInvocations(poll: ReturnType<Harness["poller"]>): Promise<void> {
  const results: (PollResult & { endedInTime: boolean })[] = [];
  do results.push(await invoke(poll));
  while (results.at(-1)?.outcome !== "complete" && results.length < 20);
  expect(results[0]).toMatchObject({ status: "completed", outcome: "deadline", endedInTime: true });
  expect(results.every((r) => r.status === "completed" && r.endedInTime)).toBe(true);
  expect(results.at(-1)?.outcome).toBe("complete");
}

describe("poll-cards near the end of its invocation", () => {
  it("stops its walk at the deadline before the timeout when every answer takes 1.5 s, and the next invocations finish it from its cursor", async () => {
    const cards = await recordedCards(450);
    // Then cards all along the list are suspended, and every card is read in detail.
    const suspended = cards.filter((card, i) => card.status === "Active" && i % 40 === 0);
    for (const card of suspended) h.sandbox.control.state.setCardStatus(card as never, "Suspended");
    const poll = h.poller("cards", { fetch: slowProvider(1.5), env: { ...h.env, CARD_DETAILS: "true" } });
    await expectWalkedOverInvocations(poll);
    expect(subjectIds(h.published, "card.suspended")).toEqual(new Set(suspended.map((card) => card.id)));
    expect(oneIdPerSubject(h.published)).toBe(true);
    expect(await familyIntact()).toBe(true);
    // The cards whose reads the deadline left unmade were counted (CardDetailsUnread): the walk could not read them.
    expect(metricSum("CardDetailsUnread")).toBeGreaterThan(0);
  });

  it("reads every card in detail when the answers take 0.4 s and the walk spans invocations: a page started before the deadline is read whole, none counted unread", async () => {
    await recordedCards(450);
    const poll = h.poller("cards", { fetch: slowProvider(0.4), env: { ...h.env, CARD_DETAILS: "true" } });
    await expectWalkedOverInvocations(poll);
    // A walk longer than one invocation is no failure to read: the CardDetailsUnread alarm must not page on it.
    expect(metricSum("CardDetailsUnread")).toBe(0);
  });
});
