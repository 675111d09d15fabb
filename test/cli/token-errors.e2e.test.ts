/**
 * End-to-end: how `bridge run --once` reports problems with the tokens and the client credentials, against the sandbox.
 * Each message must point at the real fix (settings, the seed, re-authorize) and never print a token or secret.
 */
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { EXIT } from "../../shared/cli/errors.js";
import { bindLocalSettings } from "../../shared/cli/local-bridge.js";
import { CLIENT, dueForRefresh, harnessPerTest, idsWithStatus, runInProcess } from "./helpers.js";

const start = harnessPerTest();

describe("bridge run --once: token and credential errors", () => {
  it("reports a wrong client secret as a settings problem naming both client settings, exit 2, and the family stays valid", async () => {
    const h = await start();
    const wrong = { ...h.env, QASHIO_CLIENT_SECRET: "wrong-secret-value" };

    const { code, stderr } = await runInProcess(["run", "--once"], wrong);

    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET: refused by the provider's token endpoint (invalid_client)");
    expect(stderr).not.toMatch(/revoked this integration|sign in again/);
    expect(stderr).not.toContain("wrong-secret-value");
    expect(stderr).not.toContain(CLIENT.secret);
    // Nothing was revoked: the right secret works without authorizing again.
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  // Spec §4.2 answers a spent or revoked refresh token and wrong client credentials alike with 401; one naming no OAuth
  // code cannot tell which, so the message puts the client settings first, and the bridge keeps the refresh token it
  // holds (nothing marks the family revoked locally): once the credentials are right again, the next run uses it.
  it("reports a refresh answered by a bare 401 as the client settings or the token family, exit 3, and keeps the refresh token for the next run", async () => {
    const h = await start();
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    const tokens = JSON.parse(before) as { refreshToken: string; accessToken?: string };
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 401, bare: true, count: 1 });

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code).toBe(EXIT.reauthorize);
    expect(refused.stderr).toContain("the provider refused this integration's refresh token or QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET");
    expect(refused.stderr.indexOf("QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET")).toBeLessThan(refused.stderr.indexOf("npm run bridge -- authorize"));
    expect(refused.stderr).not.toContain("revoked this integration's token family");
    for (const secret of [CLIENT.secret, tokens.refreshToken, tokens.accessToken ?? CLIENT.secret, h.env.QASHIO_REFRESH_TOKEN as string]) {
      expect(refused.stdout + refused.stderr).not.toContain(secret);
    }
    // The fault answered the one refresh tried; the stored token was neither replaced nor dropped.
    expect(await h.control("GET", "/faults")).toEqual({ data: [] });
    expect(await stored()).toBe(before);
    expect(idsWithStatus(h, "not_synced")).toHaveLength(2);

    const next = await runInProcess(["run", "--once"], h.env);

    expect(next.code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    // The family was intact: the same refresh token rotated.
    expect((JSON.parse(await stored()) as { refreshToken: string }).refreshToken).not.toBe(tokens.refreshToken);
  });

  it("stores nothing for a rejected QASHIO_REFRESH_TOKEN, so a corrected one is used on the next run and then ignored", async () => {
    const h = await start();
    const tokensFile = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
    const valid = h.env.QASHIO_REFRESH_TOKEN as string;

    const rejected = await runInProcess(["run", "--once"], { ...h.env, QASHIO_REFRESH_TOKEN: "not-a-real-token" });

    expect(rejected.code).toBe(EXIT.reauthorize);
    expect(rejected.stderr).toContain("the provider rejected QASHIO_REFRESH_TOKEN");
    expect(rejected.stderr).not.toContain("not-a-real-token");
    await expect(readFile(tokensFile, "utf8")).rejects.toThrow(/ENOENT/);
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const stored = JSON.parse(await readFile(tokensFile, "utf8")) as { refreshToken: string };
    expect(stored.refreshToken).not.toBe(valid);
    // From now on the rotated token is used: neither a bogus nor the spent seed is sent again.
    expect((await runInProcess(["run", "--once"], { ...h.env, QASHIO_REFRESH_TOKEN: "not-a-real-token" })).code).toBe(EXIT.ok);
    await h.control("POST", "/clock", { advance_seconds: 3_600 });
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  });

  it("makes a token file its group and others may read (restored, 0644, in a 0755 directory) private at start, with a warning naming it and its mode, never its tokens", async () => {
    const h = await start();
    const state = h.env.BRIDGE_STATE_DIR as string;
    const tokensFile = join(state, "tokens.json");
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const stored = JSON.parse(await readFile(tokensFile, "utf8")) as { refreshToken: string; accessToken?: string };
    // As a copy restored with the umask's modes leaves them.
    await chmod(state, 0o755);
    await chmod(tokensFile, 0o644);

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.ok);
    expect((await stat(tokensFile)).mode & 0o777).toBe(0o600);
    expect(stderr).toContain(`${tokensFile} was readable by its group or others (mode 0644): made it readable by its owner only (0600)`);
    expect(stderr).not.toContain(stored.refreshToken);
    if (stored.accessToken !== undefined) expect(stderr).not.toContain(stored.accessToken);
    // Private already: no word about it.
    expect((await runInProcess(["run", "--once"], h.env)).stderr).not.toContain("was readable by its group or others");
  });

  it.each([
    ['{"refreshToken":', "not valid JSON"],
    ["{}", "holds no refresh token"],
  ])("names a corrupt token file (%s) and the fix, exit 3", async (content, reason) => {
    const h = await start();
    const state = h.env.BRIDGE_STATE_DIR as string;
    // A directory in use: bound to these settings, as the first run or authorize leaves it.
    await bindLocalSettings(readLocalSettings(h.env, h.dir), h.env);
    await writeFile(join(state, "tokens.json"), content);

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.reauthorize);
    expect(stderr).toContain(`cannot use the token file ${join(state, "tokens.json")}`);
    expect(stderr).toContain(reason);
    expect(stderr).toContain("run `npm run bridge -- authorize` to store a new token set");
    expect(stderr).toContain(`QASHIO_REFRESH_TOKEN is not read while ${join(state, "tokens.json")} exists`);
    expect(stderr).not.toContain("unexpected");
  });
});
