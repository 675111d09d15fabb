/**
 * Token safety in local mode: two bridge processes sharing one state directory refresh through the FileLock,
 * so the single-use refresh token is presented once and the token family survives many rounds.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createSandbox, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { OAuthTokenProvider, QashioClient, exchangeCode, storedTokensOf } from "../../shared/qashio/index.js";
import { FileLock, FileTokenStore } from "../../shared/local/index.js";
import { FakeClock } from "../bridge/fakes.js";
import { Process } from "../functions/support/process-death.js";
import { tempDirPerTest } from "../temp-dir.js";

const START = "2025-03-15T12:00:00Z";
/** How long a token save takes, in real time. */
const SLOW_SAVE_MS = 25;
const REDIRECT = "http://127.0.0.1:8765/callback";

let dir: string;
tempDirPerTest("bridge-tokens-", (made) => (dir = made));

describe("token refresh across processes sharing a state directory", () => {
  it("keeps the token family valid through many concurrent refresh rounds", async () => {
    const sandbox = createSandbox({ seed: 5, startTime: START });
    const [company] = sandbox.control.companies().filter((c) => c.apiAccessEnabled);
    let tokenCalls = 0;
    const fetch: typeof sandbox.fetch = (input, init) => {
      if (String(input).endsWith("/oauth2/token")) tokenCalls += 1;
      return sandbox.fetch(input, init);
    };
    const oauth = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch };
    const code = sandbox.control.issueAuthorizationCode({ companyId: company!.id, redirectUri: REDIRECT });
    await new FileTokenStore(dir).save(storedTokensOf(await exchangeCode(oauth, { code, redirectUri: REDIRECT }), Date.parse(START)));

    const time = new FakeClock(Date.parse(START));
    // Every file and provider call of the three processes runs through `io`, whose clock ends a wait only once none is
    // in flight (Process.clock): a wait beside one (the holder's lease keep-alive beside its token save, the waiters'
    // polls beside its refresh) ends after it and overlapping waits do not add up, so fake time moves as a real clock
    // would, whatever the calls take.
    const io = new Process();
    const clock = io.clock({ now: () => time.now(), advanceClock: (seconds) => time.advance(seconds * 1_000) });
    // Each "process" has its own store and lock instances over the same files.
    const processes = Array.from({ length: 3 }, () => {
      const lock = io.through(new FileLock(dir, { clock }));
      // A save as slow as a loaded disk's: the outcome must not turn on how fast the file system answers.
      const store = new FileTokenStore(dir);
      const save = store.save.bind(store);
      store.save = async (tokens) => (await sleep(SLOW_SAVE_MS), save(tokens));
      const tokenProvider = new OAuthTokenProvider({ ...oauth, store: io.through(store), lock, lockPollMs: 1, lockWaitMs: 120_000, clock });
      return new QashioClient({ baseUrl: SANDBOX_IN_PROCESS_URL, tokenProvider, fetch: (input, init) => io.call("fetch", () => fetch(input, init)), clock });
    });

    const rounds = 6;
    for (let round = 0; round < rounds; round++) {
      // Past the access token's lifetime: every process wants a refresh at once.
      sandbox.control.advanceClock(1000);
      time.advance(1000_000);
      const pages = await Promise.all(processes.map((client) => client.listErpCards({ page: 1, page_size: 1 })));
      for (const page of pages) expect(page.data.length).toBe(1);
    }
    // One exchange plus one refresh per round: no process presented a consumed refresh token.
    expect(tokenCalls).toBe(1 + rounds);
  });

  it("keeps the family valid when a refresh's save failed and another process needs a refresh while the first idles", async () => {
    const sandbox = createSandbox({ seed: 5, startTime: START });
    const [company] = sandbox.control.companies().filter((c) => c.apiAccessEnabled);
    const oauth = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch: sandbox.fetch };
    const code = sandbox.control.issueAuthorizationCode({ companyId: company!.id, redirectUri: REDIRECT });
    await new FileTokenStore(dir).save(storedTokensOf(await exchangeCode(oauth, { code, redirectUri: REDIRECT }), Date.parse(START)));
    const time = new FakeClock(Date.parse(START));
    // As in the test above: the loop's lease keep-alive and the other's lease polls wait beside each other's file calls,
    // so fake time must move as a real clock would (Process.clock), or the polls' waits add up past the lease between
    // two renewals and the outcome turns on how fast the file system answers.
    const io = new Process();
    const clock = io.clock({ now: () => time.now(), advanceClock: (seconds) => time.advance(seconds * 1_000) });
    // The loop's store fails its next save once (EIO after the probe passed).
    const loopStore = new FileTokenStore(dir);
    let failNextSave = false;
    const save = loopStore.save.bind(loopStore);
    loopStore.save = async (tokens) => {
      if (failNextSave) {
        failNextSave = false;
        throw Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
      }
      await save(tokens);
    };
    const spawn = (store: FileTokenStore) => {
      const lock = io.through(new FileLock(dir, { clock }));
      const tokenProvider = new OAuthTokenProvider({ ...oauth, store: io.through(store), lock, lockPollMs: 1_000, lockWaitMs: 60_000, clock });
      return new QashioClient({ baseUrl: SANDBOX_IN_PROCESS_URL, tokenProvider, fetch: (input, init) => io.call("fetch", () => sandbox.fetch(input, init)), clock });
    };
    const loop = spawn(loopStore);
    const once = spawn(new FileTokenStore(dir));
    const list = (client: QashioClient) => client.listErpCards({ page: 1, page_size: 1 });

    // Past the access token's lifetime: the loop refreshes, and the save of the new refresh token fails.
    sandbox.control.advanceClock(1000);
    time.advance(1000_000);
    failNextSave = true;
    await expect(list(loop)).rejects.toMatchObject({ name: "TokenUnavailableError" });
    // The loop idles until its next cycle; a `run --once` beside it needs a refresh too. It must not present the
    // refresh token the loop spent (the sandbox would revoke the family): it waits for the lease and gives up.
    await expect(list(once)).rejects.toMatchObject({ name: "TokenUnavailableError", message: expect.stringMatching(/still held by another process/) });
    // The loop's next cycle saves the new tokens first; from then on both use them.
    expect((await list(loop)).data.length).toBe(1);
    expect((await list(once)).data.length).toBe(1);
  });
});
