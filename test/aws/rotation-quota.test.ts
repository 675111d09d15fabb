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
import type { RotationEvent } from "../../shared/aws/rotation.js";
import { SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { createHarness, type Harness } from "../functions/support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

describe("rotation at the secret's version quota", () => {
  it("refuses testSecret's refresh of an expired access token before spending the refresh token", async () => {
    h.secrets.now = () => h.clock.now();
    const token = randomUUID();
    const event = (Step: string): RotationEvent => ({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step });
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(event("createSecret"));
    await rotator(event("setSecret"));
    // Versions of the last day that leave AWSCURRENT, and the access token bound to it, where they are.
    for (let i = 0; i < SECRET_VERSIONS_PER_DAY_LIMIT; i += 1) {
      await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: `{"n":${i}}`, VersionStages: [] }));
    }
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    const presented = h.refreshTokensPresented.length;
    const failed = await rotator(event("testSecret")).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(SecretVersionQuotaError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(await h.familyStillValid()).toBe(true);
  });
});
