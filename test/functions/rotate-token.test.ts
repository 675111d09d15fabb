import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PutSecretValueCommand, UpdateSecretVersionStageCommand } from "@aws-sdk/client-secrets-manager";
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { ACCESS_TOKEN_TTL_SECONDS, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { DEFAULT_TIMEOUT_MS } from "../../shared/qashio/http.js";
import { ReauthorizationNeededError } from "../../shared/bridge/index.js";
import { exchangeCode, refresh } from "../../shared/qashio/auth/oauth.js";
import { OAuthTokenProvider, type RefreshLock } from "../../shared/qashio/auth/token-provider.js";
import { IncompleteTokenSetError, ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import { ProviderClientRejectedError, RotationError, SecretVersionQuotaError } from "../../shared/aws/errors.js";
import { SECRET_VERSIONS_EARLY_REFRESH_LIMIT, SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { accessTokenItemKey, leaseItemKey, leaseNames } from "../../shared/aws/keys.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { TOKEN_LEASE_TTL_MS } from "../../shared/aws/runtime.js";
import { MIN_ROTATION_TIMEOUT_MS, REFRESH_TIMEOUT_MARGIN_MS } from "../../shared/aws/config.js";
import { awaitingOnboarding, rotateProviderSecret, skipRotation, type RotationDeps, type RotationEvent } from "../../shared/aws/rotation.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { awsError } from "../aws/support/fake-secrets-manager.js";
import { runbookSaid } from "../runbook-section.js";
import { bare401For, createHarness, emfValues, lambdaContext, levelsLogged, PII_SALT, REDIRECT_URI, TENANT, type Harness } from "./support/harness.js";

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

const REFRESH_LEASE = leaseNames.tokenRefresh(TENANT);

/** The first log line with `message`, parsed (undefined when none was logged). */
const logged = (message: string) => h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === message);

/** How many times the version `token` was read (a GetSecretValue of that VersionId). */
const versionReads = (token: string) => h.secrets.calls.filter((call) => call.operation === "GetSecretValue" && call.input.VersionId === token).length;

/** The sandbox's token endpoint, reached as the deployed secret's client. */
const sandboxOAuth = () => ({ baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch: h.sandbox.fetch });

/**
 * Revokes the bridge's token family at the provider (its spent first refresh token presented again, after a rotation)
 * and lets the access token expire; the bridge has not met the revocation yet.
 */
async function revokeFamily(): Promise<void> {
  const first = h.secrets.current().refresh_token as string;
  await rotate();
  await refresh(sandboxOAuth(), first).catch(() => undefined);
  h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
}

/** A new token family, as a person's `authorize` starts one. */
async function newFamily(): ReturnType<typeof exchangeCode> {
  const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI });
  return exchangeCode(sandboxOAuth(), { code, redirectUri: REDIRECT_URI });
}

/** Another owner contending for the refresh lease, on the harness clock. */
const contender = () => new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });

/** True once `check` holds, tried across event-loop turns for up to 5 real seconds (the harness clock stays put). */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  const started = Date.now();
  while (Date.now() - started < 5_000) {
    if (await check()) return true;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return false;
}

/** True when the refresh lease, as the table holds it, was just renewed: it runs a whole TTL from now. */
async function leaseRenewedNow(): Promise<boolean> {
  const { Item } = await h.table.doc.send(new GetCommand({ TableName: h.table.tableName, Key: leaseItemKey(REFRESH_LEASE) }));
  return Item?.expiresAt === h.clock.now() + TOKEN_LEASE_TTL_MS;
}

/** The refresh lease as the table holds it (undefined once released, or never taken). */
const refreshLease = async () => (await h.table.doc.send(new GetCommand({ TableName: h.table.tableName, Key: leaseItemKey(REFRESH_LEASE) }))).Item;

/** The harness's fetch, with the token endpoint's answers stripped of `token_type`: a 200 that is not a token set. */
function tokenAnswersWithoutTokenType(): typeof h.fetch {
  return async (input, init) => {
    const response = await h.fetch(input, init);
    if (!String(input).endsWith("/oauth2/token")) return response;
    const { token_type: _, ...rest } = (await response.json()) as Record<string, unknown>;
    return new Response(JSON.stringify(rest), { status: response.status, headers: { "content-type": "application/json" } });
  };
}

/**
 * A rotation container's clients counting its tries at the refresh lease (each a PutItem of the lease item), and
 * calling `answered` as each try's answer comes back.
 */
function countingLeaseTries(answered?: () => void): { clients: ReturnType<Harness["clients"]>; tries: () => number } {
  let tries = 0;
  const clients = h.clients((dynamo) =>
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const item = (args.input as { Item?: { pk?: { S?: string } } }).Item;
        const leaseTry = String(context.commandName) === "PutItemCommand" && item?.pk?.S === leaseItemKey(REFRESH_LEASE).pk;
        if (leaseTry) tries += 1;
        const result = await next(args);
        if (leaseTry) answered?.();
        return result;
      },
      { step: "build", name: "countLeaseTries" },
    ),
  );
  return { clients, tries: () => tries };
}

/** A rotation container whose DynamoDB client fails every delete of the refresh lease (a throttled table, say). */
function failingLeaseRelease(): ReturnType<Harness["clients"]> {
  return h.clients((dynamo) =>
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: { pk?: { S?: string } } }).Key;
        if (String(context.commandName).startsWith("Delete") && key?.pk?.S === leaseItemKey(REFRESH_LEASE).pk) {
          throw awsError("ProvisionedThroughputExceededException");
        }
        return next(args);
      },
      { step: "build", name: "failLeaseRelease" },
    ),
  );
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
    expect(levelsLogged(h.output, "createSecret: refreshed the provider token and wrote it as AWSCURRENT")).toEqual(["INFO"]);
    // The line docs/runbook.md (TokenFamilyRevoked) quotes as a rotation's refresh, its start.
    expect(levelsLogged(h.output, runbookSaid("TokenFamilyRevoked", /the rotation logs `([^`]+?) \.\.\.`/))).toEqual(["INFO"]);
    // setSecret has nothing to do: it logs so, and does not run createSecret again.
    expect(h.output.join("\n")).toContain("setSecret: nothing to set, the provider issued the token");
    expect(h.output.join("\n")).not.toContain("createSecret: version already written");
    expect(await h.familyStillValid()).toBe(true);
  });

  it("writes the rotation's version with AWSPENDING and AWSCURRENT in one PutSecretValue (pending and promoted at once)", async () => {
    const token = await rotate();
    const writes = h.secrets.calls.filter((call) => call.operation === "PutSecretValue" && call.input.ClientRequestToken === token);
    expect(writes.map((call) => [...(call.input.VersionStages as string[])].sort())).toEqual([["AWSCURRENT", "AWSPENDING"]]);
  });

  it("counts its refresh in TokenRefreshes, with the tenant, as the pollers count theirs (the dashboard's refreshes line)", async () => {
    await rotate();
    const emf = h.output.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const refreshes = emf.filter((doc) => doc["TokenRefreshes"] !== undefined);
    expect(refreshes.map((doc) => doc["TokenRefreshes"])).toEqual([1]);
    expect(refreshes[0]).toMatchObject({ tenant: TENANT });
  });

  it("publishes the token family's state in TokenFamilyRevoked: 0 for its refresh, 1 for a revoked family, 0 again after re-onboarding", async () => {
    const revoked = (from: number) => emfValues(h.output, "TokenFamilyRevoked", from);
    // revokeFamily rotates first: that refresh is answered.
    await revokeFamily();
    expect(revoked(0)).toEqual([0]);
    let from = h.output.length;
    const failed = randomUUID();
    h.secrets.startRotation(failed);
    await expect(h.rotator()(eventFor(failed, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(revoked(from)).toEqual([1]);
    const tokens = await newFamily();
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), refresh_token: tokens.refresh_token }) }),
    );
    from = h.output.length;
    await rotate();
    expect(revoked(from)).toEqual([0]);
  });

  it("refuses a rotation event for another secret than SECRET_ID, without refreshing or writing", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const versions = h.secrets.versionCount;
    const other: RotationEvent = { ...eventFor(token, "createSecret"), SecretId: `${h.secrets.secretId}-other` };
    await expect(h.rotator()(other)).rejects.toBeInstanceOf(RotationError);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionCount).toBe(versions);
  });

  it("refuses a hand-made event that is not a rotation event, naming its shape, without refreshing or writing", async () => {
    const versions = h.secrets.versionCount;
    // A Step missing or not a string is the event's shape too, not an unknown Step.
    const withoutStep = { SecretId: h.secrets.secretId, ClientRequestToken: randomUUID() };
    for (const event of [null, {}, { SecretId: h.secrets.secretId, Step: "createSecret" }, withoutStep, { ...withoutStep, Step: 1 }]) {
      const error = await h.rotator()(event as unknown as RotationEvent).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RotationError);
      expect((error as Error).message).toContain("{SecretId, ClientRequestToken, Step}");
    }
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionCount).toBe(versions);
  });

  it("names an unknown Step or an empty ClientRequestToken of a hand-made event as such, before any Secrets Manager read", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const versions = h.secrets.versionCount;
    const cases: [RotationEvent, string][] = [
      // Not under rotation, and under rotation: either way the Step is what is wrong, not the version.
      [eventFor(randomUUID(), "createsecret"), 'Step must be one of "createSecret", "setSecret", "testSecret", "finishSecret"'],
      [eventFor(token, "rotate"), 'Step must be one of "createSecret", "setSecret", "testSecret", "finishSecret"'],
      [eventFor("", "createSecret"), "ClientRequestToken must not be empty"],
      // Blank is empty too: no version is named by spaces.
      [eventFor("  ", "createSecret"), "ClientRequestToken must not be empty"],
    ];
    for (const [event, message] of cases) {
      const error = await h.rotator()(event).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RotationError);
      expect((error as Error).message).toContain(message);
    }
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionCount).toBe(versions);
  });

  it("refuses an unknown Step in the exported step runners too, for a caller that bypasses the handler's check", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const event = eventFor(token, "rotate");
    const logger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    await expect(skipRotation(event, { secrets: h.secrets.client, logger }, "nothing to refresh")).rejects.toThrow("Unknown rotation step rotate");
    // Refused before any other dependency is reached.
    await expect(rotateProviderSecret(event, { secrets: h.secrets.client, logger } as unknown as RotationDeps)).rejects.toThrow("Unknown rotation step rotate");
    expect(h.secrets.stagesOf(token)).toEqual(["AWSPENDING"]);
  });

  it("skips from SECRET_VERSIONS_EARLY_REFRESH_LIMIT versions of the last day on (the pollers refresh often), and rotates below", async () => {
    h.secrets.now = () => h.clock.now();
    const value = JSON.stringify(h.secrets.current());
    // With the setup's version and the rotation's own placeholder, the next rotation counts one below the limit.
    for (let i = 0; i < SECRET_VERSIONS_EARLY_REFRESH_LIMIT - 3; i += 1) {
      await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: value }));
    }
    const presented = h.refreshTokensPresented.length;
    await rotate();
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    // Its version (the placeholder it filled) and the next rotation's placeholder make the limit: a skip, not a failure.
    const current = h.secrets.versionWith("AWSCURRENT");
    const token = await rotate();
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(current);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(h.secrets.stagesOf(token)).toEqual([]);
    expect(levelsLogged(h.output, `createSecret: skipped, the secret has ${SECRET_VERSIONS_EARLY_REFRESH_LIMIT} versions of the last 24 hours`)).toEqual(["INFO"]);
    // Nearly a day on, those versions still count: the rotation skips.
    h.sandbox.control.advanceClock(86_399);
    await rotate();
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    // A day on, they no longer count: the rotation refreshes.
    h.sandbox.control.advanceClock(2);
    await rotate();
    expect(h.refreshTokensPresented).toHaveLength(presented + 2);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("finds its version written, not skipped, when Secrets Manager retries a createSecret that refreshed", async () => {
    h.secrets.now = () => h.clock.now();
    const value = JSON.stringify(h.secrets.current());
    const token = randomUUID();
    h.secrets.startRotation(token);
    await h.rotator()(eventFor(token, "createSecret"));
    const presented = h.refreshTokensPresented.length;
    // Many versions since: a new rotation would skip, but this one already refreshed.
    for (let i = 0; i < SECRET_VERSIONS_EARLY_REFRESH_LIMIT; i += 1) {
      await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: value, VersionStages: [] }));
    }
    h.output.length = 0;
    await h.rotator()(eventFor(token, "createSecret"));
    expect(h.output.join("\n")).toContain("createSecret: version already written");
    expect(h.output.join("\n")).not.toContain("skipped");
    expect(h.refreshTokensPresented).toHaveLength(presented);
    for (const step of steps.slice(1)) await h.rotator()(eventFor(token, step));
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
  });

  it("has pollers keep a working access token while the secret is at its version quota, failing only once it expired", async () => {
    expect((await h.poller("transactions")()).status).toBe("completed");
    h.secrets.now = () => h.clock.now();
    // Versions of the last day that leave AWSCURRENT, and the shared access token bound to it, where they are.
    for (let i = 0; i < SECRET_VERSIONS_PER_DAY_LIMIT; i += 1) {
      await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: `{"n":${i}}`, VersionStages: [] }));
    }
    const presented = h.refreshTokensPresented.length;
    // 30 s left: a refresh is due (60 s skew) but the store turns it down; the token still works, so the poll does too.
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS - 30);
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(presented);
    // Expired: nothing to fall back on; the poll fails, still spending no refresh token.
    h.sandbox.control.advanceClock(31);
    const failed = await h.poller("transactions")().catch((e: unknown) => e);
    expect((failed as Error).cause).toBeInstanceOf(SecretVersionQuotaError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    // A day on, the versions have aged out: the next poll refreshes, and the family is intact.
    h.sandbox.control.advanceClock(86_400);
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
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
    const reads = versionReads(token);
    await rotator(eventFor(token, "createSecret"));
    // The skip check read the version; its AWSCURRENT label then tells createSecret it is written, with no second read.
    expect(versionReads(token) - reads).toBe(1);
    expect(h.refreshTokensPresented).toHaveLength(1);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
  });

  it("does not refresh twice when Secrets Manager invokes createSecret again while the first invocation still runs", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    // The first invocation's write of the rotation's version is slow: the second arrives meanwhile and waits for the lease.
    const slowWrite = h.secrets.holdNext("PutSecretValue");
    const first = h.rotator()(eventFor(token, "createSecret"));
    await slowWrite.reached;
    const second = h.rotator()(eventFor(token, "createSecret"));
    // Each invocation reads the rotation's version twice (skip check, then createSecret): the second found it empty.
    expect(await eventually(async () => versionReads(token) >= 4)).toBe(true);
    slowWrite.release();
    await Promise.all([first, second]);
    expect(h.refreshTokensPresented).toHaveLength(1);
    // Only the invocation that refreshed says so.
    expect(h.output.filter((line) => line.includes("createSecret: refreshed the provider token"))).toHaveLength(1);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
    for (const step of steps.slice(1)) await h.rotator()(eventFor(token, step));
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it.each([
    {
      status: 401,
      name: "UnauthorizedError",
      why: "401: expired, revoked or invalid",
      // The provider refuses the new access token, unexpired (an expired one is refreshed first: see the reattempt tests).
      refuse: () => h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/oauth2/validate", status: 401, count: 1 }),
    },
    {
      status: 403,
      name: "ForbiddenError",
      why: "403: API access disabled for the company",
      refuse: () => h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/oauth2/validate", status: 403, count: 1 }),
    },
  ])("fails testSecret naming the $status the provider answers the stored access token with", async ({ status, name, why, refuse }) => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    await rotator(eventFor(token, "setSecret"));
    refuse();
    const error = await rotator(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RotationError);
    expect(error).toMatchObject({ step: "testSecret", message: `The provider did not accept the new access token (${why})` });
    expect((error as Error).cause).toMatchObject({ name, status });
  });

  it("names the secret's client_id and client_secret when the provider refuses them (invalid_client), and spends no refresh token", async () => {
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), client_secret: "wrong-client-secret-0123456789" }) }),
    );
    const before = h.secrets.current().refresh_token;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const error = await h.rotator()(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderClientRejectedError);
    for (const named of ["client_id", "client_secret", h.secrets.secretId]) expect((error as Error).message).toContain(named);
    expect(h.output.join("\n")).not.toContain("wrong-client-secret-0123456789");
    expect(h.secrets.current().refresh_token).toBe(before);
    expect(h.output.some((line) => line.includes('"TokenFamilyRevoked"'))).toBe(false);
    expect(await h.familyStillValid()).toBe(true);
  });

  /** Lines of the TokenFamilyRevoked metric logged so far. */
  const revokedMetrics = () => h.output.filter((line) => line.includes('"TokenFamilyRevoked"')).length;

  /**
   * A rotation that refreshed but whose testSecret failed (the provider's validate down through every retry), then a
   * day with the pollers paused: Secrets Manager reattempts that same rotation (same ClientRequestToken) in its next
   * window, by which time the access token createSecret stored has long expired.
   */
  async function failedRotationADayAgo(): Promise<string> {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    await rotator(eventFor(token, "setSecret"));
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/oauth2/validate", status: 503, count: 100 });
    await expect(rotator(eventFor(token, "testSecret"))).rejects.toThrow();
    h.sandbox.control.state.faults.clear();
    h.sandbox.control.advanceClock(86_400);
    return token;
  }

  it("refreshes at a reattempted testSecret whose stored access token expired since (pollers paused), and completes the rotation", async () => {
    h.secrets.now = () => h.clock.now();
    const token = await failedRotationADayAgo();
    const presented = h.refreshTokensPresented.length;
    const rotator = h.rotator();
    for (const step of steps) await rotator(eventFor(token, step));
    // One refresh, under the lease, saved as a new AWSCURRENT version before its access token was validated.
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    const current = h.secrets.versionWith("AWSCURRENT");
    expect(current).not.toBe(token);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(levelsLogged(h.output, "testSecret: the stored access token had expired or was absent; refreshed the provider token")).toEqual(["INFO"]);
    expect(await refreshLease()).toBeUndefined();
    // A retried testSecret finds the new access token valid: no second refresh.
    await rotator(eventFor(token, "testSecret"));
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refuses a reattempted testSecret's refresh of an expired access token at the secret's version quota, spending no refresh token", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    h.secrets.now = () => h.clock.now();
    // Versions of the last day that leave AWSCURRENT where it is: the new refresh token could not be stored.
    for (let i = 0; i < SECRET_VERSIONS_PER_DAY_LIMIT; i += 1) {
      await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: `{"n":${i}}`, VersionStages: [] }));
    }
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    const presented = h.refreshTokensPresented.length;
    const failed = await rotator(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(SecretVersionQuotaError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(await refreshLease()).toBeUndefined();
  });

  it.each([
    { left: "less than", leftMs: DEFAULT_TIMEOUT_MS / 2 },
    { left: "just", leftMs: DEFAULT_TIMEOUT_MS },
  ])("refreshes at testSecret an access token valid for $left the time a validate call may take, instead of testing it as it expires", async ({ leftMs }) => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    // createSecret and setSecret: the access token its refresh stored is the one testSecret meets.
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    const expiresAt = (await h.tokenStore().load())?.accessTokenExpiresAt;
    if (expiresAt === undefined) throw new Error("no access token expiry stored");
    // Still valid now, but for no longer than the validate call may take.
    h.sandbox.control.advanceClock((expiresAt - h.clock.now() - leftMs) / 1_000);
    const presented = h.refreshTokensPresented.length;
    await rotator(eventFor(token, "testSecret"));
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(levelsLogged(h.output, "testSecret: the stored access token had expired or was absent; refreshed the provider token")).toEqual(["INFO"]);
  });

  it("refreshes at testSecret an empty stored access token, as an absent one, instead of presenting it to the provider", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    // Its expiry still ahead: only the empty token tells it cannot be validated.
    await h.table.doc.send(
      new UpdateCommand({ TableName: h.table.tableName, Key: accessTokenItemKey(TENANT), UpdateExpression: "SET accessToken = :empty", ExpressionAttributeValues: { ":empty": "" } }),
    );
    expect((await h.tokenStore().load())?.accessToken).toBe("");
    const presented = h.refreshTokensPresented.length;
    await rotator(eventFor(token, "testSecret"));
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(levelsLogged(h.output, "testSecret: the stored access token had expired or was absent; refreshed the provider token")).toEqual(["INFO"]);
    expect((await h.tokenStore().load())?.accessToken).not.toBe("");
  });

  /** The shared access token's expiry forgotten, as stored for a provider that sends no JWT times and no `expires_in`. */
  async function forgetAccessTokenExpiry(): Promise<void> {
    await h.table.doc.send(new UpdateCommand({ TableName: h.table.tableName, Key: accessTokenItemKey(TENANT), UpdateExpression: "REMOVE accessTokenExpiresAt" }));
    expect((await h.tokenStore().load())?.accessTokenExpiresAt).toBeUndefined();
  }

  it("refreshes once at a reattempted testSecret whose access token of unknown expiry the provider rejects with 401, and completes the rotation", async () => {
    const token = await failedRotationADayAgo();
    await forgetAccessTokenExpiry();
    const presented = h.refreshTokensPresented.length;
    const rotator = h.rotator();
    for (const step of steps) await rotator(eventFor(token, step));
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(h.secrets.versionWith("AWSCURRENT")).not.toBe(token);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(levelsLogged(h.output, "testSecret: the provider rejected the stored access token of unknown expiry (401); refreshed the provider token")).toEqual(["INFO"]);
    expect(await refreshLease()).toBeUndefined();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("tests an access token of unknown expiry that the provider accepts as it is: createSecret's refresh is the rotation's only one", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    await forgetAccessTokenExpiry();
    const presented = h.refreshTokensPresented.length;
    for (const step of steps.slice(1)) await rotator(eventFor(token, step));
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
  });

  it.each([
    // Only a 401 is taken for the token's expiry: a 403 is no cue to refresh.
    { answers: "a 403", status: 403, count: 1, refreshes: 0, refreshed: "nothing", why: "403: API access disabled for the company" },
    // The token the 401's refresh brought is validated too: a 401 to it fails the step.
    { answers: "a 401 twice", status: 401, count: 2, refreshes: 1, refreshed: "once", why: "401: expired, revoked or invalid" },
  ])("fails testSecret when the provider answers an access token of unknown expiry with $answers, refreshing $refreshed", async ({ status, count, refreshes, why }) => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    await forgetAccessTokenExpiry();
    const presented = h.refreshTokensPresented.length;
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/oauth2/validate", status, count });
    const error = await rotator(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(error).toMatchObject({ step: "testSecret", message: `The provider did not accept the new access token (${why})` });
    expect(h.refreshTokensPresented).toHaveLength(presented + refreshes);
  });

  it("does not refresh again on a 401 to the access token its refresh of an expired one brought, though that one's expiry is unknown", async () => {
    const token = await failedRotationADayAgo();
    // The provider's token answers carry an opaque access token and no expires_in: its expiry is unknown.
    const fetch: typeof h.fetch = async (input, init) => {
      const response = await h.fetch(input, init);
      if (!String(input).endsWith("/oauth2/token")) return response;
      const { expires_in: _, ...rest } = (await response.json()) as Record<string, unknown>;
      return new Response(JSON.stringify({ ...rest, access_token: `opaque-${randomUUID()}` }), { status: response.status, headers: { "content-type": "application/json" } });
    };
    const rotator = h.rotator({ fetch });
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    const presented = h.refreshTokensPresented.length;
    const error = await rotator(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(error).toMatchObject({ step: "testSecret", message: "The provider did not accept the new access token (401: expired, revoked or invalid)" });
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
  });

  it("refreshes at a reattempted testSecret when createSecret's IncompleteTokenSetError left no access token, instead of failing every day", async () => {
    const fetch = tokenAnswersWithoutTokenType();
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator({ fetch })(eventFor(token, "createSecret"))).rejects.toBeInstanceOf(IncompleteTokenSetError);
    h.sandbox.control.advanceClock(86_400);
    const rotator = h.rotator();
    for (const step of steps) await rotator(eventFor(token, step));
    expect(h.refreshTokensPresented).toHaveLength(2);
    expect(new Set(h.refreshTokensPresented).size).toBe(2);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("fails a reattempted testSecret whose refresh meets a revoked family with the re-authorize error and its metric, and presents nothing at the next", async () => {
    const first = h.secrets.current().refresh_token as string;
    const token = await failedRotationADayAgo();
    // The spent first refresh token presented again (a stale copy): the provider revokes the family.
    await refresh(sandboxOAuth(), first).catch(() => undefined);
    const revokedBefore = revokedMetrics();
    const presented = h.refreshTokensPresented.length;
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    await rotator(eventFor(token, "setSecret"));
    await expect(rotator(eventFor(token, "testSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(revokedMetrics() - revokedBefore).toBe(1);
    expect(await h.tokenStore().revokedVersion()).toBeDefined();
    // The next window's reattempt stops before any provider call, counting the metric again: no loop of refreshes.
    h.sandbox.control.advanceClock(86_400);
    await rotator(eventFor(token, "createSecret"));
    await expect(rotator(eventFor(token, "testSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
    expect(revokedMetrics() - revokedBefore).toBe(2);
  });

  it("validates the access token a poller stored while a reattempted testSecret waited for the refresh lease, without refreshing", async () => {
    const token = await failedRotationADayAgo();
    const held = await contender().tryAcquire(REFRESH_LEASE, TOKEN_LEASE_TTL_MS);
    expect(held).toBeDefined();
    const lease = countingLeaseTries();
    const rotator = h.rotator({ clients: lease.clients });
    await rotator(eventFor(token, "createSecret"));
    await rotator(eventFor(token, "setSecret"));
    const testing = rotator(eventFor(token, "testSecret"));
    expect(await eventually(async () => lease.tries() > 0)).toBe(true);
    // The lease's holder refreshes and saves meanwhile, then gives the lease back.
    expect(await h.familyStillValid()).toBe(true);
    const presented = h.refreshTokensPresented.length;
    await held?.release();
    await testing;
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(h.output.join("\n")).not.toContain("testSecret: the stored access token had expired");
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refreshes after a 401 when the token set a poller stored while testSecret waited for the lease has no access token to test", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    for (const step of steps.slice(0, 2)) await h.rotator()(eventFor(token, step));
    await forgetAccessTokenExpiry();
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/oauth2/validate", status: 401, count: 1 });
    const held = await contender().tryAcquire(REFRESH_LEASE, TOKEN_LEASE_TTL_MS);
    expect(held).toBeDefined();
    const lease = countingLeaseTries();
    const testing = h.rotator({ clients: lease.clients })(eventFor(token, "testSecret"));
    expect(await eventually(async () => lease.tries() > 0)).toBe(true);
    // The lease's holder refreshes meanwhile and stores the new refresh token only (its answer was not a token set).
    const polled = await refresh(sandboxOAuth(), (await h.tokenStore().load())?.refreshToken ?? "");
    await h.tokenStore().save({ refreshToken: polled.refresh_token });
    expect((await h.tokenStore().load())?.accessToken).toBeUndefined();
    const presented = h.refreshTokensPresented.length;
    await held?.release();
    // A token set that changed is not enough: with no access token to test, the step refreshes and tests the new one.
    await testing;
    expect(h.refreshTokensPresented.slice(presented)).toEqual([polled.refresh_token]);
    expect(levelsLogged(h.output, "testSecret: the provider rejected the stored access token of unknown expiry (401); refreshed the provider token")).toEqual(["INFO"]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("fails testSecret when the provider answers the stored access token with active false", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    await h.rotator()(eventFor(token, "createSecret"));
    // A validate answer the spec does not show (it lists `{ active: true }` only): the token is still not accepted.
    const inactive = h.rotator({
      fetch: async (input, init) =>
        input.endsWith("/oauth2/validate") ? new Response(JSON.stringify({ active: false }), { status: 200, headers: { "content-type": "application/json" } }) : h.fetch(input, init),
    });
    const error = await inactive(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RotationError);
    expect(error).toMatchObject({ step: "testSecret", message: "The provider did not accept the new access token" });
  });

  it("does not refresh again when Secrets Manager retries a createSecret whose version a poller's refresh has moved AWSCURRENT from", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    await h.poller("transactions")();
    const newer = h.secrets.versionWith("AWSCURRENT");
    expect(newer).not.toBe(token);
    expect(h.secrets.stagesOf(token)).not.toContain("AWSCURRENT");
    const presented = h.refreshTokensPresented.length;
    h.output.length = 0;
    await rotator(eventFor(token, "createSecret"));
    expect(h.output.join("\n")).toContain("createSecret: version already written");
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(newer);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("fails testSecret with the client's own error for a validate answer that is neither a verdict nor a 401 or 403", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    await h.rotator()(eventFor(token, "createSecret"));
    const garbled = h.rotator({
      fetch: async (input, init) =>
        input.endsWith("/oauth2/validate") ? new Response(JSON.stringify({ ok: true }), { status: 200, headers: { "content-type": "application/json" } }) : h.fetch(input, init),
    });
    const error = await garbled(eventFor(token, "testSecret")).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "InvalidResponseError" });
    expect(error).not.toBeInstanceOf(RotationError);
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
    // Its log line says so, for an operator reading why AWSCURRENT is not the rotation's version.
    expect(logged("finishSecret: rotation complete")).toMatchObject({ currentIsRotationVersion: false });
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

  it("stops refreshing a revoked family at the next rotation and the next poll, until a new secret version arrives", async () => {
    await revokeFamily();
    const failedRotation = randomUUID();
    h.secrets.startRotation(failedRotation);
    await expect(h.rotator()(eventFor(failedRotation, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    const presented = h.refreshTokensPresented.length;

    const nextRotation = randomUUID();
    h.secrets.startRotation(nextRotation);
    const from = h.output.length;
    await expect(h.rotator()(eventFor(nextRotation, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    // Refused at the mark, the family is still revoked: the gauge stays up.
    expect(emfValues(h.output, "TokenFamilyRevoked", from)).toEqual([1]);
    await expect(h.poller("transactions")()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(h.refreshTokensPresented).toHaveLength(presented);

    const tokens = await newFamily();
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), refresh_token: tokens.refresh_token }) }),
    );
    await rotate();
    expect(h.refreshTokensPresented.at(-1)).toBe(tokens.refresh_token);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("meets a rejected refresh token first with the re-authorize error and its metric even when writing the revoked mark fails", async () => {
    await revokeFamily();
    // The table refuses the revoked mark's put (throttled): no poller or earlier step wrote it either.
    const clients = h.clients((dynamo) =>
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          const item = (args.input as { Item?: { sk?: { S?: string } } }).Item;
          if (String(context.commandName) === "PutItemCommand" && item?.sk?.S === "REVOKED") throw awsError("ProvisionedThroughputExceededException");
          return next(args);
        },
        { step: "build", name: "failRevokedMark" },
      ),
    );
    const token = randomUUID();
    h.secrets.startRotation(token);
    const revokedBefore = revokedMetrics();
    const error = await h.rotator({ clients })(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect(error).not.toBeInstanceOf(RotationError);
    expect((error as Error).message).toMatch(/re-authorize/);
    expect(revokedMetrics() - revokedBefore).toBe(1);
    expect(h.output.join("\n")).toContain("Could not record the revoked token family");
    expect(await h.tokenStore().revokedVersion()).toBeUndefined();
  });

  it("says the provider refused the refresh token when the secret cannot be read after it to tell a rotation elsewhere from a revoked family", async () => {
    await revokeFamily();
    const refused = h.secrets.current().refresh_token as string;
    // The secret's re-read that follows the token endpoint's refusal is denied.
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      if (String(input).endsWith("/oauth2/token")) h.secrets.failNext("GetSecretValue", awsError("AccessDeniedException"));
      return response;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const revokedBefore = revokedMetrics();
    const error = await h.rotator({ fetch })(eventFor(token, "createSecret")).catch((e: unknown) => e);
    // The step fails with the secret's error, the family not reported revoked (another process may have rotated)...
    expect(error).toMatchObject({ name: "SecretStoreError", operation: "GetSecretValue" });
    expect(revokedMetrics()).toBe(revokedBefore);
    expect(await h.tokenStore().revokedVersion()).toBeUndefined();
    // ...and the refusal, which that error does not name, is logged with the secret error's name, no token.
    const warning = "the provider refused the refresh token, and reading the token store to tell a rotation by another process from a revoked family failed";
    expect(levelsLogged(h.output, warning)).toEqual(["WARN"]);
    expect(logged(warning)).toMatchObject({ status: 401, reason: "SecretStoreError" });
    expect(h.refreshTokensPresented.slice(-1)).toEqual([refused]);
    expect(h.output.join("\n")).not.toContain(refused);
  });

  it("names no refresh token in the re-authorize error or any log line when the provider rejects the rotation's refresh", async () => {
    await revokeFamily();
    const refused = h.secrets.current().refresh_token as string;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const error = await h.rotator()(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect(h.refreshTokensPresented.slice(-1)).toEqual([refused]);
    expect((error as Error).message).not.toContain(refused);
    expect(h.output.join("\n")).not.toContain(refused);
  });

  it("says at the next rotation to check the secret's client_id and client_secret first when the refusal was a 401 without an error code", async () => {
    const right = h.secrets.current();
    const putSecret = (value: Record<string, unknown>) =>
      h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify(value) }));
    await putSecret({ ...right, client_secret: "mistyped-client-secret" });
    const bare401 = bare401For(h, "mistyped-client-secret");
    const failed = randomUUID();
    h.secrets.startRotation(failed);
    await expect(h.rotator({ fetch: bare401 })(eventFor(failed, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);

    const presented = h.refreshTokensPresented.length;
    const next = randomUUID();
    h.secrets.startRotation(next);
    const error = await h.rotator()(eventFor(next, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect((error as Error).message).toContain("check the secret's client_id and client_secret first");
    expect((error as Error).message).toContain("clears this mark");

    await putSecret(right);
    await rotate();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("adopts the refresh token re-onboarding wrote while its own refresh was rejected, instead of marking the new family revoked", async () => {
    await revokeFamily();
    const reonboarded = await newFamily();
    // The operator's `authorize --secret-id` lands while the rotation's refresh of the dead token is in flight.
    let written = false;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.sandbox.fetch(input, init);
      if (!written && String(input).endsWith("/oauth2/token")) {
        written = true;
        await putSecret({ ...h.secrets.current(), refresh_token: reonboarded.refresh_token });
      }
      return response;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator({ fetch });
    for (const step of steps) await rotator(eventFor(token, step));
    expect(written).toBe(true);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(token);
    expect(await h.tokenStore().revokedVersion()).toBeUndefined();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("reports a revoked family, with its metric and marker, when the token re-onboarding wrote is rejected too", async () => {
    await revokeFamily();
    // The operator's `authorize --secret-id` lands while the rotation's refresh of the dead token is in flight, but with
    // a refresh token the provider rejects as well (spent already): no family is left to refresh.
    const stale = h.secrets.current().refresh_token as string;
    let reonboardedVersion: string | undefined;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.sandbox.fetch(input, init);
      if (reonboardedVersion === undefined && String(input).endsWith("/oauth2/token")) {
        reonboardedVersion = await putSecret({ ...h.secrets.current(), refresh_token: `${stale}-pasted` });
      }
      return response;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const revokedBefore = h.output.filter((line) => line.includes('"TokenFamilyRevoked"')).length;
    const error = await h.rotator({ fetch })(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as Error).message).toMatch(/re-authorize/);
    expect(h.output.filter((line) => line.includes('"TokenFamilyRevoked"')).length - revokedBefore).toBe(1);
    // Marked for the version holding the token rejected last: the next poll stops without presenting it again.
    expect(await h.tokenStore().revokedVersion()).toBe(reonboardedVersion);
    const presented = h.refreshTokensPresented.length;
    await expect(h.poller("transactions")()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
  });

  it("adopts a token written meanwhile once only: one written again while the adopted one is rejected is not presented", async () => {
    await revokeFamily();
    const stale = h.secrets.current().refresh_token as string;
    // Each of the first two refreshes sees another pasted (and spent) token written while it is in flight.
    let writes = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      if (writes < 2 && String(input).endsWith("/oauth2/token")) {
        writes += 1;
        await putSecret({ ...h.secrets.current(), refresh_token: `${stale}-pasted-${writes}` });
      }
      return response;
    };
    const presented = h.refreshTokensPresented.length;
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator({ fetch })(eventFor(token, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(h.refreshTokensPresented.slice(presented)).toEqual([stale, `${stale}-pasted-1`]);
  });

  it("marks no version a re-authorization wrote while the adopted token was refused: its token was never presented, and the next poll uses it", async () => {
    await revokeFamily();
    const stale = h.secrets.current().refresh_token as string;
    const reonboarded = await newFamily();
    // A pasted (spent) token lands while the first refresh is in flight, then the operator's `authorize --secret-id`
    // while the refresh of the adopted pasted token is.
    const written = [`${stale}-pasted`, reonboarded.refresh_token];
    let writes = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      if (writes < written.length && String(input).endsWith("/oauth2/token")) {
        await putSecret({ ...h.secrets.current(), refresh_token: written[writes++] });
      }
      return response;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator({ fetch })(eventFor(token, "createSecret"))).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(writes).toBe(2);
    expect(await h.tokenStore().revokedVersion()).toBeUndefined();
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
    expect(await h.familyStillValid()).toBe(true);
  });

  it("gives up a refresh the provider asks to delay past half the lease, without presenting the token again", async () => {
    const before = h.secrets.current().refresh_token;
    // Retry-After 20 s: a retry would come after the 15 s the 30 s lease leaves for the refresh call.
    h.sandbox.control.state.faults.add({ method: "POST", pathPrefix: "/oauth2/token", status: 429, count: 1, retryAfter: 20 });
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator()(eventFor(token, "createSecret"))).rejects.toThrow();
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.current().refresh_token).toBe(before);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("keeps the refresh lease while writing the rotated secret outlasts it: another container waits, then uses the new token", async () => {
    const before = h.secrets.current().refresh_token;
    const slowPut = h.secrets.holdNext("PutSecretValue");
    const token = randomUUID();
    h.secrets.startRotation(token);
    const creating = h.rotator()(eventFor(token, "createSecret"));
    await slowPut.reached;
    // 40 s of a 30 s lease, renewed every 10 s while the write is pending.
    for (let step = 0; step < 4; step += 1) {
      h.sandbox.control.advanceClock(10);
      expect(await eventually(leaseRenewedNow)).toBe(true);
    }
    // A container that needs a token now finds the lease held (the secret still holds the spent token).
    const lock = contender();
    const attempts: boolean[] = [];
    const counted: RefreshLock = {
      async tryAcquire(name, ttlMs) {
        const lease = await lock.tryAcquire(name, ttlMs);
        attempts.push(lease !== undefined);
        return lease;
      },
    };
    const { client_id: clientId, client_secret: clientSecret } = h.secrets.current() as { client_id: string; client_secret: string };
    const container = new OAuthTokenProvider({
      baseUrl: SANDBOX_IN_PROCESS_URL,
      clientId,
      clientSecret,
      fetch: h.fetch,
      store: h.tokenStore(),
      lock: counted,
      lockName: REFRESH_LEASE,
      clock: h.clock,
    });
    const waiting = container.getAccessToken();
    expect(await eventually(async () => attempts.length > 0)).toBe(true);
    expect(attempts[0]).toBe(false);
    slowPut.release();
    await creating;
    expect(await waiting).toBe((await h.tokenStore().load())?.accessToken);
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("renews the refresh lease as soon as a write starts late in it: the lease runs from when it was asked for", async () => {
    const slowPut = h.secrets.holdNext("PutSecretValue");
    // The token endpoint answers 14 s after the lease was asked for, past the third of it when a renewal is due.
    const fetch: typeof h.fetch = async (input, init) => {
      const response = await h.fetch(input, init);
      if (String(input).endsWith("/oauth2/token")) h.sandbox.control.advanceClock(14);
      return response;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const creating = h.rotator({ fetch })(eventFor(token, "createSecret"));
    await slowPut.reached;
    expect(await eventually(leaseRenewedNow)).toBe(true);
    slowPut.release();
    await creating;
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
  });

  it("writes the rotated token as a new AWSCURRENT version when writing the rotation's version fails, so the family survives", async () => {
    const before = h.secrets.current().refresh_token;
    h.secrets.failNext("PutSecretValue", awsError("InvalidRequestException"));
    const token = await rotate();
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.current().refresh_token).not.toBe(before);
    expect(h.secrets.versionWith("AWSCURRENT")).not.toBe(token);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    // By the error's name, never its message.
    expect(logged("createSecret: writing the rotation's version failed; writing the rotated token as a new AWSCURRENT version instead")).toMatchObject({
      error: "SecretStoreError",
    });
    expect(await contender().tryAcquire(REFRESH_LEASE, TOKEN_LEASE_TTL_MS)).toBeDefined();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("holds the rotated token in the table when neither write of the secret lands: the rotation completes and the family survives", async () => {
    const before = h.secrets.current().refresh_token;
    h.secrets.failNext("PutSecretValue", awsError("AccessDeniedException"), 2);
    const token = await rotate();
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.current().refresh_token).toBe(before);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(h.secrets.versionWith("AWSCURRENT")).not.toBe(token);
    expect(h.output.some((line) => line.includes('"TokenSecretWriteFailed"'))).toBe(true);
    expect(await contender().tryAcquire(REFRESH_LEASE, TOKEN_LEASE_TTL_MS)).toBeDefined();
    // The pollers present the held token, not the spent one, and their refresh writes the secret.
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(2);
    expect(h.refreshTokensPresented[1]).not.toBe(before);
    expect(h.secrets.current().refresh_token).not.toBe(before);
    expect(await h.familyStillValid()).toBe(true);
    // That refresh loaded the held token (1) and wrote it (0): its invocation publishes the gauge once, at 0, so the
    // TokenSecretWriteFailed alarm (the gauge's maximum per period) clears with it.
    const gauges = h.output.filter((line) => line.includes('"TokenHeldInTable"')).map((line) => (JSON.parse(line) as Record<string, unknown>)["TokenHeldInTable"]);
    expect(gauges.at(-1)).toBe(0);
  });

  it("saves the new refresh token of a 200 token answer that is not a token set, then fails the step: the pollers go on with it", async () => {
    const before = h.secrets.current().refresh_token;
    // The provider rotates, but its answer lacks token_type.
    const fetch = tokenAnswersWithoutTokenType();
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator({ fetch })(eventFor(token, "createSecret"))).rejects.toBeInstanceOf(IncompleteTokenSetError);
    const saved = h.secrets.current().refresh_token;
    expect(saved).not.toBe(before);
    // The token was spent and its successor saved: a refresh, counted as one.
    expect(emfValues(h.output, "TokenRefreshes")).toEqual([1]);
    expect(h.output.join("\n")).not.toContain(saved as string);
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toEqual([before, saved]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("completes a createSecret that refreshed and saved even when releasing the refresh lease fails: the lease runs out by itself", async () => {
    const before = h.secrets.current().refresh_token as string;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator({ clients: failingLeaseRelease() });
    await rotator(eventFor(token, "createSecret"));
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.stagesOf(token)).toContain("AWSCURRENT");
    const saved = h.secrets.current().refresh_token as string;
    const log = h.output.join("\n");
    // By the error's name, never its message.
    expect(logged("createSecret: releasing the token refresh lease failed; it runs out by itself")).toMatchObject({ error: "ProvisionedThroughputExceededException" });
    expect(log).not.toContain(saved);
    expect(log).not.toContain(before);
    for (const step of steps.slice(1)) await rotator(eventFor(token, step));
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    // The unreleased lease still holds off others until it runs out; then the pollers refresh with the new token.
    expect(await contender().tryAcquire(REFRESH_LEASE, TOKEN_LEASE_TTL_MS)).toBeUndefined();
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toEqual([before, saved]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("fails a createSecret that met a revoked family with the re-authorize error even when releasing the refresh lease fails", async () => {
    await revokeFamily();
    const token = randomUUID();
    h.secrets.startRotation(token);
    const error = await h.rotator({ clients: failingLeaseRelease() })(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as Error).message).toMatch(/re-authorize/);
    expect(await h.tokenStore().revokedVersion()).toBeDefined();
  });

  it("fails a later step whose read of the rotation's version fails for another reason than not found, instead of taking it for a skipped rotation", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    for (const step of steps.slice(0, 2)) await rotator(eventFor(token, step));
    // The step's first read, of the rotation's version, is denied: nothing says createSecret skipped.
    h.secrets.failNext("GetSecretValue", awsError("AccessDeniedException"));
    await expect(rotator(eventFor(token, "testSecret"))).rejects.toMatchObject({ name: "SecretStoreError", message: expect.stringContaining("GetSecretValue") });
    expect(h.output.join("\n")).not.toContain("testSecret: skipped");
    // Its failure line names the step, which the error (an AWS call's) does not carry.
    expect(logged("Rotation step failed")).toMatchObject({ step: "testSecret", error: { name: "SecretStoreError" } });
    // Secrets Manager's retry tests the token.
    await rotator(eventFor(token, "testSecret"));
    expect(h.output.join("\n")).not.toContain("testSecret: skipped");
  });

  it("names the step that failed on its failure line for a RotationError too", async () => {
    await expect(h.rotator()(eventFor(randomUUID(), "finishSecret"))).rejects.toThrow(/no stage for rotation/);
    expect(logged("Rotation step failed")).toMatchObject({ step: "finishSecret", error: { name: "RotationError" } });
  });

  it("names the step on the line of an invocation that ran into its timeout, which the step's own failure line never reaches", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    // The step's first secret read hangs; middy gives the invocation up INVOCATION_EARLY_END_MS (1 s) before its end.
    const hung = h.secrets.holdNext("GetSecretValue");
    const error = await h.rotator()(eventFor(token, "createSecret"), lambdaContext(1_050)).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TimeoutError" });
    const timedOut = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => String(doc["message"]).startsWith("Invocation timed out"));
    expect(timedOut).toMatchObject({ step: "createSecret", error: { name: "TimeoutError" } });
    // The abandoned step goes on once the read answers (a thaw), and ends before the next test: its 1 s left start no refresh.
    hung.release();
    expect(await eventually(async () => logged("Rotation step failed") !== undefined)).toBe(true);
    expect(h.refreshTokensPresented).toEqual([]);
  });

  it("echoes no step of a hand-made invoke that names none of Secrets Manager's four on its failure line", async () => {
    await expect(h.rotator()(eventFor(randomUUID(), "createSecrett"))).rejects.toThrow(/Step must be one of/);
    const line = logged("Rotation step failed");
    expect(line).toMatchObject({ error: { name: "RotationError" } });
    expect(JSON.stringify(line)).not.toContain("createSecrett");
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

  it("refuses createSecret for an empty version whose AWSPENDING was moved to another label by hand, spending nothing", async () => {
    const token = randomUUID();
    h.secrets.startRotation(token);
    const { secretId, client } = h.secrets;
    await client.send(new UpdateSecretVersionStageCommand({ SecretId: secretId, VersionStage: "HELD", MoveToVersionId: token }));
    await client.send(new UpdateSecretVersionStageCommand({ SecretId: secretId, VersionStage: "AWSPENDING", RemoveFromVersionId: token }));
    const error = await h.rotator()(eventFor(token, "createSecret")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RotationError);
    expect(error).toMatchObject({ step: "createSecret", message: expect.stringContaining(`Version ${token} is not AWSPENDING`) });
    expect(h.refreshTokensPresented).toHaveLength(0);
    expect(h.secrets.stagesOf(token)).toEqual(["HELD"]);
  });

  it("does nothing on a finishSecret Secrets Manager retries after the rotation completed", async () => {
    const token = await rotate();
    const stageCalls = () => h.secrets.calls.filter((call) => call.operation === "UpdateSecretVersionStage").length;
    const before = stageCalls();
    await h.rotator()(eventFor(token, "finishSecret"));
    expect(stageCalls()).toBe(before);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
  });

  it("does nothing on a finishSecret Secrets Manager retries once the pollers' refreshes left the rotation's version without labels", async () => {
    const token = await rotate();
    // Two refreshes since: AWSCURRENT, then AWSPREVIOUS moved past the rotation's version.
    for (let i = 0; i < 2; i += 1) {
      h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
      expect((await h.poller("transactions")()).status).toBe("completed");
    }
    expect(h.secrets.stagesOf(token)).toEqual([]);
    const current = h.secrets.versionWith("AWSCURRENT");
    const stageCalls = () => h.secrets.calls.filter((call) => call.operation === "UpdateSecretVersionStage").length;
    const before = stageCalls();
    await h.rotator()(eventFor(token, "finishSecret"));
    expect(stageCalls()).toBe(before);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(current);
    expect(h.output.join("\n")).toContain("finishSecret: AWSPENDING already detached");
    // Only a finishSecret is done with such a version: any other step of it is not under rotation.
    const presented = h.refreshTokensPresented.length;
    for (const step of ["createSecret", "testSecret"]) await expect(h.rotator()(eventFor(token, step))).rejects.toThrow(/no stage for rotation/);
    expect(h.refreshTokensPresented).toHaveLength(presented);
  });
});

describe("rotate-token handler with too little of its invocation left (a Lambda timeout lowered by hand)", () => {
  it("refuses createSecret's refresh with 20 s left, before spending the refresh token: the timeout could cut it before the save", async () => {
    const before = h.secrets.current().refresh_token;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const versions = h.secrets.versionCount;
    const lease = countingLeaseTries();
    const error = await h.rotator({ clients: lease.clients })(eventFor(token, "createSecret"), lambdaContext(20_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RotationError);
    expect((error as Error).message).toMatch(/not started.*20 s .*left.*timeout.*nothing was spent/s);
    // The timeout to set back: the one with which a refresh always starts, not merely the lease and margin.
    expect((error as Error).message).toContain(`at least ${MIN_ROTATION_TIMEOUT_MS / 1000} s`);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionCount).toBe(versions);
    expect(h.secrets.current().refresh_token).toBe(before);
    // Not even asked for: a lease taken and given back would hold off a poller's refresh meanwhile.
    expect(lease.tries()).toBe(0);
    expect(await refreshLease()).toBeUndefined();
    expect(logged("Rotation step failed")).toMatchObject({ error: { name: "RotationError" } });
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refreshes when its lease ends REFRESH_TIMEOUT_MARGIN_MS before the timeout, and not 1 ms later", async () => {
    const before = h.secrets.current().refresh_token;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const leaseAndMargin = TOKEN_LEASE_TTL_MS + REFRESH_TIMEOUT_MARGIN_MS;
    await expect(h.rotator()(eventFor(token, "createSecret"), lambdaContext(leaseAndMargin - 1))).rejects.toThrow(/not started/);
    expect(h.refreshTokensPresented).toEqual([]);
    await h.rotator()(eventFor(token, "createSecret"), lambdaContext(leaseAndMargin));
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT", "AWSPENDING"]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("has the rotated token stored before its timeout when Secrets Manager hangs, though the refresh started at the latest it may", async () => {
    const before = h.secrets.current().refresh_token;
    const token = randomUUID();
    h.secrets.startRotation(token);
    const { context, endsAt } = h.invocation(TOKEN_LEASE_TTL_MS + REFRESH_TIMEOUT_MARGIN_MS);
    const hang = h.hangingSecrets(endsAt);
    // The token endpoint answers 14 s after the lease was asked for (within its first half); from then on every write
    // of the secret times out after the SDK's 3 attempts of 4 s: the rotation's version, then the plain version.
    const fetch: typeof h.fetch = async (input, init) => {
      const response = await h.fetch(input, init);
      if (String(input).endsWith("/oauth2/token")) {
        h.sandbox.control.advanceClock(14);
        hang.on = true;
      }
      return response;
    };
    await h.rotator({ clients: hang.clients, fetch })(eventFor(token, "createSecret"), context);
    expect(h.refreshTokensPresented).toEqual([before]);
    // What a Lambda stopped at its timeout leaves: the new refresh token (held in the table), not the spent one.
    const stored = await hang.storedAtEnd();
    expect(stored).toBeDefined();
    expect(stored).not.toBe(before);
    expect(h.clock.now()).toBeLessThan(endsAt);
    expect(h.output.some((line) => line.includes('"TokenSecretWriteFailed"'))).toBe(true);
    hang.on = false;
    expect(await h.familyStillValid()).toBe(true);
  });

  /**
   * createSecret's outcome when the invocation had `leftMs` at entry and its first read of the secret answered 10 s
   * late; the context counts down with the clock, as Lambda's does.
   */
  async function createSecretAfterSlowFirstRead(leftMs: number): Promise<unknown> {
    const endsAt = h.clock.now() + leftMs;
    const context = { ...lambdaContext(), getRemainingTimeInMillis: () => endsAt - h.clock.now() };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const slow = h.secrets.holdNext("GetSecretValue");
    const creating = h.rotator()(eventFor(token, "createSecret"), context).catch((e: unknown) => e);
    await slow.reached;
    h.sandbox.control.advanceClock(10);
    slow.release();
    return creating;
  }

  it("counts the time its invocation spent before createSecret against it: a slow Secrets Manager call leaves the refresh too little", async () => {
    // 5 s more than a refresh needs at entry.
    const error = await createSecretAfterSlowFirstRead(TOKEN_LEASE_TTL_MS + REFRESH_TIMEOUT_MARGIN_MS + 5_000);
    expect(error).toBeInstanceOf(RotationError);
    expect((error as Error).message).toMatch(/not started: 40 s of the invocation were left/);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("says 0 s of the invocation were left, not a negative count, when a slow Secrets Manager call took it past its end", async () => {
    // 5 s left at entry: the slow read ends 5 s past the invocation's end.
    const error = await createSecretAfterSlowFirstRead(5_000);
    expect(error).toBeInstanceOf(RotationError);
    expect((error as Error).message).toMatch(/not started: 0 s of the invocation were left/);
    expect(h.refreshTokensPresented).toEqual([]);
  });

  it("bounds its refresh by half the lease counted from when it asked for it, not from a slow answer", async () => {
    // The lease's put answers 10 s late: the lease runs from the ask, so the refresh has 5 s of its first half left.
    const lease = countingLeaseTries(() => h.sandbox.control.advanceClock(10));
    const token = randomUUID();
    h.secrets.startRotation(token);
    const error = await h.rotator({ clients: lease.clients })(eventFor(token, "createSecret"), lambdaContext(MIN_ROTATION_TIMEOUT_MS)).catch((e: unknown) => e);
    // 5 s is less than a whole attempt at the token endpoint takes: not sent (a retry, later, takes a lease of its own).
    expect(error).toMatchObject({ name: "DeadlineExceededError", message: expect.stringContaining("POST /oauth2/token was not sent") });
    expect(lease.tries()).toBe(1);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(await h.familyStillValid()).toBe(true);
  });

  /**
   * createSecret with `remainingMs` left while a poller holds the refresh lease for `heldMs`: time passes 1 s at a time once
   * the rotation met the lease held. What it settled with, and how many seconds passed.
   */
  async function createSecretBehindPoller(remainingMs: number, heldMs = 15_000): Promise<{ error: unknown; waitedS: number }> {
    const held = await contender().tryAcquire(REFRESH_LEASE, heldMs);
    expect(held).toBeDefined();
    const lease = countingLeaseTries();
    const token = randomUUID();
    h.secrets.startRotation(token);
    let settled = false;
    const creating = h
      .rotator({ clients: lease.clients })(eventFor(token, "createSecret"), lambdaContext(remainingMs))
      .then(
        () => undefined,
        (e: unknown) => e,
      )
      .finally(() => (settled = true));
    expect(await eventually(async () => lease.tries() > 0)).toBe(true);
    let waitedS = 0;
    while (!settled && waitedS < 60) {
      h.sandbox.control.advanceClock(1);
      waitedS += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { error: await creating, waitedS };
  }

  it("waits for a poller's refresh lease only as long as a lease taken then would still end in time, and spends nothing", async () => {
    // 55 s left: a lease asked for later than 10 s from now would end less than the margin before the timeout.
    const { error, waitedS } = await createSecretBehindPoller(MIN_ROTATION_TIMEOUT_MS - 10_000);
    expect(error).toBeInstanceOf(RotationError);
    // The clock steps 1 s every 50 ms of real time: on a loaded machine the wait may see the 45 s mark a step late.
    expect((error as Error).message).toMatch(/not started: 4[45] s of the invocation were left/);
    expect(waitedS).toBeLessThan(15);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("refuses a lease its wait took a little too late (the try after the last pause), and gives it back", async () => {
    // Pauses of the wait take their time here: tries at 0, 0.25 s, ... 9.75 s, then 10 s, later than the 9.9 s the
    // 54.9 s left allow; the poller's lease runs out at 9.95 s, so that last try takes it.
    expect(await contender().tryAcquire(REFRESH_LEASE, 9_950)).toBeDefined();
    const token = randomUUID();
    h.secrets.startRotation(token);
    const error = await h.rotator({ clock: h.waitingClock })(eventFor(token, "createSecret"), lambdaContext(MIN_ROTATION_TIMEOUT_MS - 10_100)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RotationError);
    expect((error as Error).message).toMatch(/not started: 44 s of the invocation were left/);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(await refreshLease()).toBeUndefined();
    expect(await h.familyStillValid()).toBe(true);
  });

  it("with time to spare, waits for a refresh lease held elsewhere no longer than its lease wait, and spends nothing", async () => {
    // The stack's 10 minutes left; the lease is held for 40 s, twice the 20 s wait.
    const { error, waitedS } = await createSecretBehindPoller(600_000, 40_000);
    expect(error).toBeInstanceOf(RotationError);
    expect((error as Error).message).toBe("Token refresh lease still held after 20000 ms");
    expect(waitedS).toBeLessThan(25);
    expect(h.refreshTokensPresented).toEqual([]);
  });

  it("with MIN_ROTATION_TIMEOUT_MS left, waits out a poller's refresh lease and refreshes", async () => {
    const before = h.secrets.current().refresh_token;
    const { error } = await createSecretBehindPoller(MIN_ROTATION_TIMEOUT_MS);
    expect(error).toBeUndefined();
    expect(h.refreshTokensPresented).toEqual([before]);
    expect(await h.familyStillValid()).toBe(true);
  });
});

/** The secret as the stack creates it (infra/constructs/tenant-secret.ts): placeholders, a generated salt, no token. */
const AS_DEPLOYED = { client_id: "", client_secret: "", refresh_token: "", pii_salt: PII_SALT };

async function putSecret(value: Record<string, unknown>): Promise<string> {
  const put = await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify(value) }));
  return put.VersionId as string;
}

/** Lines the handlers logged at ERROR level. */
const errorsLogged = () => h.output.filter((line) => /"level":\s*"ERROR"/.test(line));

describe("rotate-token handler before onboarding (no refresh token yet)", () => {
  it("completes every step as a logged skip: no error, no provider call, AWSCURRENT kept, no AWSPENDING left", async () => {
    const deployed = await putSecret(AS_DEPLOYED);
    const versions = h.secrets.versionCount;
    const token = await rotate();
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(deployed);
    expect(h.secrets.current()).toEqual(AS_DEPLOYED);
    expect(h.secrets.versionCount).toBe(versions);
    expect(h.secrets.stagesOf(token)).toEqual([]);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(errorsLogged()).toEqual([]);
    expect(levelsLogged(h.output, "createSecret: skipped, the secret holds no refresh_token yet (tenant not onboarded")).toEqual(["INFO"]);
    // The line docs/runbook.md (Not yet onboarded) quotes, its start.
    expect(levelsLogged(h.output, runbookSaid("Not yet onboarded", /it skips \(log line `([^`]+)`\)/))).toEqual(["INFO"]);
  });

  it("skips at every scheduled rotation without blocking the next, and refreshes once the tenant is onboarded", async () => {
    await putSecret({ ...AS_DEPLOYED, client_id: "sandbox-client", client_secret: "sandbox-secret" });
    await rotate();
    await rotate();
    expect(h.refreshTokensPresented).toEqual([]);
    const tokens = await newFamily();
    await putSecret({ ...h.secrets.current(), refresh_token: tokens.refresh_token });
    const token = await rotate();
    expect(h.refreshTokensPresented).toEqual([tokens.refresh_token]);
    expect(h.secrets.stagesOf(token)).toEqual(["AWSCURRENT"]);
    expect(await h.familyStillValid()).toBe(true);
    expect(errorsLogged()).toEqual([]);
  });

  it("finishes a skipped rotation as skipped when the tenant is onboarded between its steps", async () => {
    await putSecret(AS_DEPLOYED);
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator();
    await rotator(eventFor(token, "createSecret"));
    const onboarded = await putSecret({ client_id: "sandbox-client", client_secret: "sandbox-secret", refresh_token: "rt-from-authorize", pii_salt: PII_SALT });
    for (const step of steps.slice(1)) await rotator(eventFor(token, step));
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(onboarded);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(errorsLogged()).toEqual([]);
  });

  it("does nothing on a finishSecret Secrets Manager retries after the skipped rotation finished (its placeholder has no label left)", async () => {
    await putSecret(AS_DEPLOYED);
    const token = await rotate();
    expect(h.secrets.stagesOf(token)).toEqual([]);
    const current = h.secrets.versionWith("AWSCURRENT");
    await h.rotator()(eventFor(token, "finishSecret"));
    expect(h.secrets.versionWith("AWSCURRENT")).toBe(current);
    expect(h.secrets.versionWith("AWSPENDING")).toBeUndefined();
    expect(errorsLogged()).toEqual([]);
  });

  it("still refuses a token not under rotation and an event for another secret", async () => {
    await putSecret(AS_DEPLOYED);
    await expect(h.rotator()(eventFor(randomUUID(), "createSecret"))).rejects.toThrow(/no stage for rotation/);
    await expect(h.rotator()(eventFor(randomUUID(), "finishSecret"))).rejects.toThrow(/no stage for rotation/);
    await expect(
      h.rotator()({ SecretId: "arn:aws:secretsmanager:eu-west-1:1:secret:other", ClientRequestToken: "t", Step: "createSecret" }),
    ).rejects.toBeInstanceOf(RotationError);
  });

  it("rotates (and fails) as before a secret that is malformed rather than awaiting onboarding", async () => {
    expect(awaitingOnboarding(JSON.stringify(AS_DEPLOYED))).toBe(true);
    expect(awaitingOnboarding(JSON.stringify({ client_id: "c", pii_salt: PII_SALT }))).toBe(true);
    expect(awaitingOnboarding(JSON.stringify({ ...AS_DEPLOYED, refresh_token: "rt" }))).toBe(false);
    expect(awaitingOnboarding("not json")).toBe(false);
    expect(awaitingOnboarding("[]")).toBe(false);
    expect(awaitingOnboarding(undefined)).toBe(false);
    await putSecret({ ...AS_DEPLOYED, refresh_token: "rt-without-client" });
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator()(eventFor(token, "createSecret"))).rejects.toThrow(/missing or has invalid fields: client_id, client_secret/);
    expect(h.secrets.versionWith("AWSPENDING")).toBe(token);
  });
});
