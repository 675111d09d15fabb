/**
 * The rotation's own refreshes against the secret's version quota: a testSecret that must refresh first (its access
 * token expired) is refused before the refresh token is spent, as the pollers' refreshes are (the rotation's
 * createSecret skips near the quota, so testSecret is where the rotation's check is met).
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { SecretVersionQuotaError } from "../../shared/aws/errors.js";
import { SECRET_VERSIONS_EARLY_REFRESH_LIMIT, SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { createHarness, type Harness } from "../functions/support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/**
 * A rotation through setSecret, then `versions` more versions of the last day that leave AWSCURRENT (and the access
 * token bound to it) where they are, and that access token expired: its testSecret must refresh first.
 */
async function expiredAtTestSecret(versions: number): Promise<(Step: string) => Promise<void>> {
  h.secrets.now = () => h.clock.now();
  const token = randomUUID();
  const rotator = h.rotator();
  const step = (Step: string) => rotator({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step });
  h.secrets.startRotation(token);
  await step("createSecret");
  await step("setSecret");
  for (let i = 0; i < versions; i += 1) {
    await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: `{"n":${i}}`, VersionStages: [] }));
  }
  h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
  return step;
}

describe("rotation at the secret's version quota", () => {
  it("refuses testSecret's refresh of an expired access token before spending the refresh token", async () => {
    const step = await expiredAtTestSecret(SECRET_VERSIONS_PER_DAY_LIMIT);
    const presented = h.refreshTokensPresented.length;
    const failed = await step("testSecret").catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SecretVersionQuotaError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refreshes at testSecret from the early-refresh limit up to the quota: an expired access token's refresh is no early one", async () => {
    // Over the limit at which createSecret skips, yet with room for the new version.
    const step = await expiredAtTestSecret(SECRET_VERSIONS_EARLY_REFRESH_LIMIT);
    const presented = h.refreshTokensPresented.length;
    await step("testSecret");
    await step("finishSecret");
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(await h.familyStillValid()).toBe(true);
  });
});
