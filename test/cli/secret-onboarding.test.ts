import { readFileSync } from "node:fs";
import { DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DeleteCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { leaseNames } from "../../shared/aws/keys.js";
import { EXIT, UsageError } from "../../shared/cli/errors.js";
import { PII_SALT_MIN_LENGTH } from "../../shared/bridge/pii.js";
import { SecretOnboardingError, assertUsableSalt, awsClock, onboardingSecretsClient, openTokenLease, secretRegion, type OnboardingSecret, readOnboardingSecret, readTokenLeaseTarget, secretTokenStore } from "../../shared/cli/secret-onboarding.js";
import { FakeClock } from "../aws/support/clock.js";

const ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme-AbCdEf";
const secrets = new SecretsManagerClient({ region: "eu-west-1" });
const mock = mockClient(secrets);

/** What Secrets Manager answers past its request rate: a name only, no value. */
function throttled(): Error {
  return Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException", $metadata: { httpStatusCode: 400 } });
}

function retrying() {
  const clock = new FakeClock();
  return { clock, retry: { clock, backoff: { random: () => 0.5, maxAttempts: 3 } } };
}

function written(): Record<string, unknown> {
  const call = mock.commandCalls(PutSecretValueCommand)[0];
  return JSON.parse(call?.args[0].input.SecretString ?? "null") as Record<string, unknown>;
}

describe("secretTokenStore", () => {
  beforeEach(() => mock.reset());

  it("merges the refresh token and the client it was issued to into the secret, keeping salt and other fields", async () => {
    mock.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ client_id: "cid", client_secret: "csecret-old", pii_salt: "salt-from-cdk", refresh_token: "old", note: "x" }),
      VersionId: "v1",
    });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    await secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "csecret-new" }).save({ refreshToken: "rt-new", accessToken: "at" });
    expect(written()).toEqual({ client_id: "cid", client_secret: "csecret-new", pii_salt: "salt-from-cdk", refresh_token: "rt-new", note: "x" });
    expect(mock.commandCalls(PutSecretValueCommand)[0]?.args[0].input.SecretId).toBe(ARN);
  });

  it("fills client credentials and a random salt into an empty secret, and never stores the access token", async () => {
    mock.on(GetSecretValueCommand).rejects(new ResourceNotFoundException({ message: "no value", $metadata: {} }));
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v1" });
    await secretTokenStore(secrets, ARN, { client_id: "env-id", client_secret: "env-secret" }).save({ refreshToken: "rt", accessToken: "at" });
    const secret = written();
    expect(secret).toMatchObject({ client_id: "env-id", client_secret: "env-secret", refresh_token: "rt" });
    expect(secret.pii_salt).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(secret)).not.toContain('"at"');
  });

  it("fills the empty placeholders the stack creates the secret with (client_id, client_secret, refresh_token: \"\")", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_id: "", client_secret: "", refresh_token: "" }), VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
    const store = secretTokenStore(secrets, ARN, { client_id: "env-id", client_secret: "env-secret" });
    expect(await store.load()).toBeUndefined();
    await store.save({ refreshToken: "rt", accessToken: "at" });
    expect(written()).toMatchObject({ client_id: "env-id", client_secret: "env-secret", refresh_token: "rt" });
  });

  it("loads the refresh token the secret holds, and nothing else of it", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_id: "cid", client_secret: "cs", refresh_token: "rt-stored" }), VersionId: "v1" });
    expect(await secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "cs" }).load()).toEqual({ refreshToken: "rt-stored" });
  });

  it("says a secret that does not exist is not there, in which region, and what to pass instead; a secret without a value yet reads as empty", async () => {
    // A secret name looked up in another region than the stack's (or a typo) is not found; read as empty, it went on to
    // "the secret has no client_id" or a DescribeSecret error naming the token lease, neither of which says what is wrong.
    const notFound = () => new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: { httpStatusCode: 400 } });
    mock.on(GetSecretValueCommand).rejects(notFound());
    mock.on(DescribeSecretCommand).rejects(notFound());
    const error = await readOnboardingSecret(secrets, "qashio-acme").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect((error as Error).message).toBe(
      "there is no secret qashio-acme in eu-west-1 for the AWS account of these credentials: pass the tenant stack's output " +
        "SecretArn (it names the secret's region), with AWS credentials of the tenant's account",
    );
    mock.reset();
    mock.on(GetSecretValueCommand).rejects(notFound());
    mock.on(DescribeSecretCommand).resolves({ ARN });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
  });

  it("treats a placeholder text secret as empty", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: "run npm run bridge -- authorize --secret-id <arn>", VersionId: "v1" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
  });

  it("treats a version without a SecretString (binary only) as empty", async () => {
    mock.on(GetSecretValueCommand).resolves({ VersionId: "v1" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
  });

  it("treats a JSON array as empty, merging none of its items into the secret as fields", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify(["x", "y"]), VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
    await secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "cs" }).save({ refreshToken: "rt" });
    expect(Object.keys(written()).sort()).toEqual(["client_id", "client_secret", "pii_salt", "refresh_token"]);
  });

  it("reads a JSON null, string or number as empty", async () => {
    for (const text of ["null", JSON.stringify("qashio"), "42"]) {
      mock.on(GetSecretValueCommand).resolves({ SecretString: text, VersionId: "v1" });
      expect(await readOnboardingSecret(secrets, ARN), text).toEqual({});
    }
  });

  it("refuses a broken JSON object behind leading whitespace as well (a hand edit's line break)", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: '\n  {"client_id":"cid","pii_salt":"kept-salt-0123456789abcdef",}', VersionId: "v1" });
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(SecretOnboardingError);
  });

  it("keeps fields holding null, 0 or false: only an empty string is a placeholder not yet filled", async () => {
    const kept = { pii_salt: "salt-from-cdk", note: null, retries: 0, paused: false };
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_id: "", ...kept }), VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    await secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "cs" }).save({ refreshToken: "rt" });
    expect(written()).toEqual({ ...kept, client_id: "cid", client_secret: "cs", refresh_token: "rt" });
  });

  it("refuses a JSON object broken by a hand edit instead of reading it as empty, so its pii_salt is never replaced", async () => {
    const salt = "kept-salt-0123456789abcdef";
    mock.on(GetSecretValueCommand).resolves({ SecretString: `{"client_id":"cid","pii_salt":"${salt}",}`, VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    const read = readOnboardingSecret(secrets, ARN);
    await expect(read).rejects.toThrow(SecretOnboardingError);
    await expect(read).rejects.toThrow(`secret ${ARN} holds a JSON object that does not parse`);
    await expect(read).rejects.not.toThrow(salt);
    await expect(secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "cs" }).save({ refreshToken: "rt" })).rejects.toThrow(SecretOnboardingError);
    expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  });

  it("explains a read that failed before any request (no credentials), and names a write failure only", async () => {
    mock.on(GetSecretValueCommand).rejects(new Error("Could not load credentials from any providers"));
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(`cannot read secret ${ARN}: Error: Could not load credentials from any providers`);
    // An answer of Secrets Manager is named only: its name says what went wrong.
    mock.reset();
    const denied = Object.assign(new Error("User: arn:aws:iam::111122223333:user/dev is not authorized"), { name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } });
    mock.on(GetSecretValueCommand).rejects(denied);
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(
      new SecretOnboardingError(`cannot read secret ${ARN}: AccessDeniedException (use AWS credentials of the tenant's account 111122223333 allowed what README's "3. Onboard: authorize once" lists)`, ARN),
    );
    mock.reset();
    mock.on(GetSecretValueCommand).resolves({ SecretString: "{}", VersionId: "v1" });
    mock.on(PutSecretValueCommand).rejects(new Error("failed writing rt-secret"));
    const error = await secretTokenStore(secrets, ARN, { client_id: "a", client_secret: "b" }).save({ refreshToken: "rt-secret" }).catch((e: unknown) => e);
    expect((error as Error).message).toBe(`cannot write secret ${ARN}: Error`);
  });

  it("names the fix of a missing AWS credential and of an access AWS refused: credentials of the tenant's account, the one the ARN names", async () => {
    // The SDK's "Could not load credentials from any providers" and a bare AccessDeniedException say what failed, not
    // what to do; a wrong account (a profile of another tenant's account) looks the same as a missing permission.
    const noCredentials = Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" });
    mock.on(GetSecretValueCommand).rejects(noCredentials);
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(
      `cannot read secret ${ARN}: CredentialsProviderError: Could not load credentials from any providers ` +
        "(give the command AWS credentials of the tenant's account 111122223333: a profile named by AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
    );
    mock.reset();
    const denied = Object.assign(new Error("User: arn:aws:iam::444455556666:user/dev is not authorized"), { name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } });
    mock.on(GetSecretValueCommand).rejects(denied);
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(
      `cannot read secret ${ARN}: AccessDeniedException (use AWS credentials of the tenant's account 111122223333 allowed what README's "3. Onboard: authorize once" lists)`,
    );
    // The section the hint names is there to read.
    expect(readFileSync(new URL("../../README.md", import.meta.url), "utf8")).toMatch(/^### 3\. Onboard: authorize once\n[^]*may describe its stack, describe, read and write its secret/m);
    // A name has no account to name.
    mock.on(GetSecretValueCommand).rejects(noCredentials);
    await expect(readOnboardingSecret(secrets, "qashio-acme")).rejects.toThrow("(give the command AWS credentials of the tenant's account: a profile named by AWS_PROFILE");
  });

  it("reports a failed write by operation, without values", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: "{}", VersionId: "v1" });
    mock.on(PutSecretValueCommand).rejects(Object.assign(new Error("denied rt-secret"), { name: "AccessDeniedException" }));
    const save = secretTokenStore(secrets, ARN, { client_id: "a", client_secret: "b" }).save({ refreshToken: "rt-secret" });
    await expect(save).rejects.toThrow(SecretOnboardingError);
    await expect(save).rejects.toThrow(`cannot write secret ${ARN}: AccessDeniedException`);
  });

  it("retries throttled GetSecretValue and PutSecretValue calls and still writes the token, as one version", async () => {
    const { clock, retry } = retrying();
    mock
      .on(GetSecretValueCommand)
      .rejectsOnce(throttled())
      .resolves({ SecretString: JSON.stringify({ client_id: "cid", client_secret: "cs", pii_salt: "salt" }), VersionId: "v1" });
    mock.on(PutSecretValueCommand).rejectsOnce(throttled()).rejectsOnce(throttled()).resolves({ VersionId: "v2" });
    await secretTokenStore(secrets, ARN, { client_id: "cid", client_secret: "cs" }, retry).save({ refreshToken: "rt" });
    expect(mock.commandCalls(GetSecretValueCommand)).toHaveLength(2);
    const puts = mock.commandCalls(PutSecretValueCommand).map((call) => call.args[0].input);
    expect(puts).toHaveLength(3);
    expect(new Set(puts.map((input) => input.ClientRequestToken)).size).toBe(1);
    expect(written()).toEqual({ client_id: "cid", client_secret: "cs", pii_salt: "salt", refresh_token: "rt" });
    expect(clock.sleeps).toHaveLength(3);
  });

  it("retries a throttled read of the secret", async () => {
    const { clock, retry } = retrying();
    mock.on(GetSecretValueCommand).rejectsOnce(throttled()).resolves({ SecretString: JSON.stringify({ client_id: "cid" }), VersionId: "v1" });
    expect(await readOnboardingSecret(secrets, ARN, retry)).toEqual({ client_id: "cid" });
    expect(mock.commandCalls(GetSecretValueCommand)).toHaveLength(2);
    expect(clock.sleeps, "backed off on the clock given").toHaveLength(1);
  });

  it("does not retry an error that is not throttling", async () => {
    const { clock, retry } = retrying();
    mock.on(GetSecretValueCommand).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException" }));
    const read = readOnboardingSecret(secrets, ARN, retry);
    await expect(read).rejects.toThrow(SecretOnboardingError);
    await expect(read).rejects.toThrow(`cannot read secret ${ARN}: AccessDeniedException`);
    expect(mock.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("fails with the attempts when throttling outlasts the retries, exiting as a failed command", async () => {
    const { retry } = retrying();
    mock.on(GetSecretValueCommand).resolves({ SecretString: "{}", VersionId: "v1" });
    mock.on(PutSecretValueCommand).rejects(throttled());
    const error = await secretTokenStore(secrets, ARN, { client_id: "a", client_secret: "b" }, retry)
      .save({ refreshToken: "rt-secret" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect(error).toMatchObject({ exitCode: EXIT.failed, secretId: ARN, message: `cannot write secret ${ARN}: ThrottlingException (after 3 attempts)` });
    expect(String((error as Error).message)).not.toContain("rt-secret");
    expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(3);
  });
});

describe("readTokenLeaseTarget", () => {
  beforeEach(() => mock.reset());
  const tags = (entries: Record<string, string>) => ({ Tags: Object.entries(entries).map(([Key, Value]) => ({ Key, Value })) });

  it("finds the tenant and table the stack tagged the secret with, among other tags", async () => {
    mock.on(DescribeSecretCommand).resolves(tags({ "qashio-bridge:tenant": "acme", "qashio-bridge:lease-table": "QashioBridge-acme-Table-1", owner: "finance" }));
    expect(await readTokenLeaseTarget(secrets, ARN)).toEqual({ tenant: "acme", tableName: "QashioBridge-acme-Table-1" });
    expect(mock.commandCalls(DescribeSecretCommand)[0]?.args[0].input.SecretId).toBe(ARN);
    expect(mock.commandCalls(GetSecretValueCommand), "the value was read").toHaveLength(0);
  });

  it("is undefined unless both tags are there and not empty", async () => {
    const partials: Record<string, string>[] = [{}, { "qashio-bridge:tenant": "acme" }, { "qashio-bridge:lease-table": "t" }, { "qashio-bridge:tenant": "", "qashio-bridge:lease-table": "t" }];
    for (const partial of partials) {
      mock.on(DescribeSecretCommand).resolves(tags(partial));
      expect(await readTokenLeaseTarget(secrets, ARN), JSON.stringify(partial)).toBeUndefined();
    }
  });

  it("retries a throttled DescribeSecret", async () => {
    const { clock, retry } = retrying();
    mock.on(DescribeSecretCommand).rejectsOnce(throttled()).resolves(tags({ "qashio-bridge:tenant": "acme", "qashio-bridge:lease-table": "t" }));
    expect(await readTokenLeaseTarget(secrets, ARN, retry)).toEqual({ tenant: "acme", tableName: "t" });
    expect(mock.commandCalls(DescribeSecretCommand)).toHaveLength(2);
    expect(clock.sleeps, "backed off on the clock given").toHaveLength(1);
  });
});

describe("assertUsableSalt", () => {
  it("accepts a salt as short as the pollers accept, and refuses one character less or a salt that is no string, without echoing it", () => {
    const salt = "s".repeat(PII_SALT_MIN_LENGTH);
    expect(() => assertUsableSalt({ pii_salt: salt }, ARN)).not.toThrow();
    expect(() => assertUsableSalt({}, ARN)).not.toThrow();
    // mutant: a salt that is no string but has a length (an array of as many items) accepted went unseen.
    for (const bad of [salt.slice(1), 1234567890123456, `${salt}\ud800`, Array.from(salt)]) {
      const error = (() => {
        try {
          assertUsableSalt({ pii_salt: bad } as unknown as OnboardingSecret, ARN);
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(SecretOnboardingError);
      expect(error?.message).not.toContain(String(bad));
    }
  });
});

describe("awsClock", () => {
  it("tells AWS's time: the local clock plus the offset the secret client saw in AWS's answers (none yet: the local time)", () => {
    const client = new SecretsManagerClient({ region: "eu-west-1" });
    const local = { now: () => 1_000_000, sleep: async () => undefined };
    expect(awsClock(local, client).now()).toBe(1_000_000);
    client.config.systemClockOffset = -40_000;
    expect(awsClock(local, client).now()).toBe(960_000);
  });

  it("hands the sleep's signal on to the clock it wraps, so Ctrl-C ends a wait for the lease", async () => {
    const seen: (AbortSignal | undefined)[] = [];
    const local = { now: () => 0, sleep: async (_ms: number, signal?: AbortSignal) => void seen.push(signal) };
    const signal = new AbortController().signal;
    await awsClock(local, new SecretsManagerClient({ region: "eu-west-1" })).sleep(5, signal);
    expect(seen).toEqual([signal]);
  });
});

describe("onboardingSecretsClient", () => {
  it("gives each Secrets Manager call a person's bounds: 10 s to connect, 20 s an attempt, three attempts (the pollers' are tighter)", async () => {
    // mutants: the pollers' SDK_TIMEOUTS, or a single attempt, went unseen; a slow VPN then fails the onboarding.
    // Nothing listens on port 9: each attempt is refused at once, and the handler has resolved its settings by then.
    vi.stubEnv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://127.0.0.1:9");
    vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "example");
    const client = await onboardingSecretsClient(ARN, {});
    try {
      const refused = await client.send(new GetSecretValueCommand({ SecretId: ARN })).catch((e: unknown) => e as { $metadata?: { attempts?: number } });
      expect(refused.$metadata?.attempts).toBe(3);
      const handler = client.config.requestHandler as unknown as { httpHandlerConfigs(): Record<string, unknown> };
      expect(handler.httpHandlerConfigs()).toMatchObject({ connectionTimeout: 10_000, requestTimeout: 20_000, throwOnRequestTimeout: true });
      expect(await client.config.region()).toBe("eu-west-1");
    } finally {
      client.destroy();
      vi.unstubAllEnvs();
    }
  });
});

describe("secretRegion", () => {
  it("takes an empty or blank AWS_REGION (a bare `AWS_REGION=` in .env) as unset, and trims one that is set", () => {
    expect(secretRegion(ARN, { AWS_REGION: "" })).toBe("eu-west-1");
    expect(secretRegion(ARN, { AWS_REGION: "  " })).toBe("eu-west-1");
    expect(secretRegion(ARN, { AWS_REGION: " eu-west-1 " })).toBe("eu-west-1");
    expect(secretRegion("qashio-acme", { AWS_REGION: "" })).toBeUndefined();
  });

  it("refuses, as a usage error, an arn: id whose account is not twelve digits or that names no secret", () => {
    for (const id of [
      "arn:aws:secretsmanager:eu-west-1:11112222333:secret:qashio-acme-AbCdEf",
      "arn:aws:secretsmanager:eu-west-1:1111222233334:secret:qashio-acme-AbCdEf",
      "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme-AbCdEf:version",
      "arn:aws:ssm:eu-west-1:111122223333:parameter/x",
      // A secret ARN pasted after another: the whole id must be one.
      "arn:aws:iam::111122223333:role/x:arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme-AbCdEf",
    ]) {
      expect(() => secretRegion(id, {}), id).toThrow(UsageError);
    }
  });
});

describe("openTokenLease", () => {
  beforeEach(() => mock.reset());
  const LEASE = leaseNames.tokenRefresh("acme");
  const TAGGED = { Tags: [{ Key: "qashio-bridge:tenant", Value: "acme" }, { Key: "qashio-bridge:lease-table", Value: "Table-1" }] };
  const tagged = () => mock.on(DescribeSecretCommand).resolves(TAGGED);
  /** A table client that grants every lease call but those `refuse` throws for; records the leases put. */
  function leaseTable(refuse: (command: object) => Promise<void> | void = () => undefined) {
    const puts: Record<string, unknown>[] = [];
    const send = async (command: object) => {
      if (command instanceof PutCommand) puts.push(command.input.Item ?? {});
      await refuse(command);
      return {};
    };
    return { doc: { send } as unknown as DynamoDBDocumentClient, puts };
  }

  it("probes the pollers' lease in the time it is given, for their TTL, and says how soon one it could not give back runs out", async () => {
    tagged();
    const clock = new FakeClock();
    const warnings: string[] = [];
    const { doc, puts } = leaseTable((command) => {
      if (command instanceof DeleteCommand) throw Object.assign(new Error("Throughput exceeds the table's limit"), { name: "ProvisionedThroughputExceededException" });
    });
    const lease = await openTokenLease(secrets, ARN, { dynamo: doc, clock, warn: (text) => warnings.push(text) });
    // mutant: the table's name as the tenant went unseen; the tenant is shown before the sign-in.
    expect(lease).toMatchObject({ name: LEASE, tenant: "acme" });
    // The clock given (AWS's time), not this machine's: FakeClock is far from Date.now().
    expect(puts).toEqual([expect.objectContaining({ name: LEASE, expiresAt: clock.now() + 30_000 })]);
    expect(warnings).toEqual([
      `cannot give back the token lease "${LEASE}" in table Table-1 (tagged on secret ${ARN}): ProvisionedThroughputExceededException: Throughput exceeds the table's limit; it runs out by itself within 30 s`,
    ]);
  });

  it("refuses a lease it can take but not renew, naming the table and AWS's error (kept as the cause), and gives it back", async () => {
    // mutants: the renewal probe dropped, its failure swallowed and the cause dropped went unseen without DynamoDB Local.
    tagged();
    const denied = Object.assign(new Error("User is not authorized to perform dynamodb:UpdateItem"), { name: "AccessDeniedException" });
    let givenBack = 0;
    const { doc } = leaseTable((command) => {
      if (command instanceof UpdateCommand) throw denied;
      if (command instanceof DeleteCommand) givenBack += 1;
    });
    const error = await openTokenLease(secrets, ARN, { dynamo: doc, clock: new FakeClock(), warn: () => undefined }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect(error).toMatchObject({
      message: `cannot renew the token lease "${LEASE}" in table Table-1 (tagged on secret ${ARN}): AccessDeniedException: User is not authorized to perform dynamodb:UpdateItem`,
      cause: denied,
    });
    expect(givenBack).toBe(1);
  });

  it("retries a throttled DescribeSecret with the retry it is given", async () => {
    const { clock, retry } = retrying();
    mock.on(DescribeSecretCommand).rejectsOnce(throttled()).resolves(TAGGED);
    const lease = await openTokenLease(secrets, ARN, { dynamo: leaseTable().doc, clock: new FakeClock(), warn: () => undefined, retry });
    expect(lease?.name).toBe(LEASE);
    expect(clock.sleeps).toHaveLength(1);
  });
});
