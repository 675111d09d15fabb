import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { RotationError } from "../../shared/aws/errors.js";
import type { RotationEvent } from "../../shared/aws/rotation.js";
import { createHarness, type Harness } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

const steps = ["createSecret", "setSecret", "testSecret", "finishSecret"] as const;
const eventFor = (token: string, Step: string): RotationEvent => ({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step });

async function rotate(token = randomUUID()): Promise<string> {
  h.secrets.startRotation(token);
  const rotator = h.rotator();
  for (const step of steps) await rotator(eventFor(token, step));
  return token;
}

describe("rotate-token handler (Secrets Manager rotation)", () => {
  it("refreshes the token family and leaves the rotation's version AWSCURRENT, with AWSPENDING detached", async () => {
    const before = h.secrets.current().refresh_token;
    const token = await rotate();
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(h.secrets.current().refresh_token).not.toBe(before);
    expect(h.secrets.current()).toMatchObject({ client_id: "sandbox-client", pii_salt: expect.any(String) });
    expect(await h.familyStillValid()).toBe(true);
  });

  it("lets pollers use the rotated token at once, without refreshing again", async () => {
    await rotate();
    const presented = h.refreshTokensPresented.length;
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(presented);
  });

  it("does not refresh twice when Secrets Manager retries createSecret", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    await rotator(eventFor(token, "createSecret"));
    expect(h.refreshTokensPresented).toHaveLength(1);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
  });

  it("never moves AWSCURRENT back when a poller rotated the token between createSecret and finishSecret", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    await h.poller("transactions")();
    const newer = h.secrets.versionWith("AWSCURRENT");
    expect(newer).not.toBe(token);
    await rotator(eventFor(token, "setSecret"));
    await rotator(eventFor(token, "testSecret"));
    await rotator(eventFor(token, "finishSecret"));
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(newer);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("shares the refresh lease with pollers: a rotation racing three pollers presents no refresh token twice", async () => {
    await h.poller("transactions")();
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await Promise.all([rotator(eventFor(token, "createSecret")), h.poller("transactions")(), h.poller("cards")(), h.poller("transactions")()]);
    for (const step of steps.slice(1)) await rotator(eventFor(token, step));
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refuses an event for another secret", async () => {
    const rotator = h.rotator();
    await expect(rotator({ SecretId: "arn:aws:secretsmanager:eu-west-1:1:secret:other", ClientRequestToken: "t", Step: "createSecret" })).rejects.toBeInstanceOf(
      RotationError,
    );
    expect(h.refreshTokensPresented).toHaveLength(0);
  });

  it("refuses a token that is not under rotation", async () => {
    await expect(h.rotator()(eventFor(randomUUID(), "createSecret"))).rejects.toThrow(/no stage for rotation/);
  });
});
