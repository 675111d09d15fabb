/**
 * End-to-end: how `bridge run --once` reports problems with the tokens and the client credentials, against the sandbox.
 * Each message must point at the real fix (settings, the seed, re-authorize) and never print a token or secret.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { CLIENT, idsWithStatus, runInProcess, startHarness, type Harness } from "./helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(): Promise<Harness> {
  harness = await startHarness();
  return harness;
}

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
});
