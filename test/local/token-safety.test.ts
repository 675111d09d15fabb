/**
 * Token safety in local mode: two bridge processes sharing one state directory refresh through the FileLock,
 * so the single-use refresh token is presented once and the token family survives many rounds.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSandbox, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { OAuthTokenProvider, QashioClient, exchangeCode, storedTokensOf } from "../../shared/qashio/index.js";
import { FileLock, FileTokenStore } from "../../shared/local/index.js";
import { FakeClock } from "../bridge/fakes.js";

const START = "2025-03-15T12:00:00Z";
const REDIRECT = "http://127.0.0.1:8765/callback";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bridge-tokens-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

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

    const clock = new FakeClock(Date.parse(START));
    // Each "process" has its own store and lock instances over the same files.
    const processes = Array.from({ length: 3 }, () => {
      // Waiters poll every fake millisecond: the fake time they burn while a real refresh runs stays far below the lease.
      // The holder's keep-alive sleeps while the real file save runs, moving the fake clock 10 s a round (the lease is
      // renewed each time): the waiters' budget allows for several rounds.
      const lock = new FileLock(dir, { clock });
      const tokenProvider = new OAuthTokenProvider({ ...oauth, store: new FileTokenStore(dir), lock, lockPollMs: 1, lockWaitMs: 120_000, clock });
      return new QashioClient({ baseUrl: SANDBOX_IN_PROCESS_URL, tokenProvider, fetch, clock });
    });

    const rounds = 6;
    for (let round = 0; round < rounds; round++) {
      // Past the access token's lifetime: every process wants a refresh at once.
      sandbox.control.advanceClock(1000);
      clock.advance(1000_000);
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
    const clock = new FakeClock(Date.parse(START));
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
      const tokenProvider = new OAuthTokenProvider({ ...oauth, store, lock: new FileLock(dir, { clock }), lockPollMs: 1_000, lockWaitMs: 60_000, clock });
      return new QashioClient({ baseUrl: SANDBOX_IN_PROCESS_URL, tokenProvider, fetch: sandbox.fetch, clock });
    };
    const loop = spawn(loopStore);
    const once = spawn(new FileTokenStore(dir));
    const list = (client: QashioClient) => client.listErpCards({ page: 1, page_size: 1 });

    // Past the access token's lifetime: the loop refreshes, and the save of the new refresh token fails.
    sandbox.control.advanceClock(1000);
    clock.advance(1000_000);
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
