import { Readable } from "node:stream";
import { inspect } from "node:util";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { describe, expect, it } from "vitest";
import { SecretFormatError, SecretStoreError } from "../../shared/aws/errors.js";
import { awsCallOf, nameFailedCalls } from "../../shared/aws/observability.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { ProviderSecretClient, isSecretNotFound, parseSecret, secretFingerprint } from "../../shared/aws/provider-secret.js";
import { UNPARSED_ANSWER_MESSAGE, dropUnparsedAnswers } from "../../shared/aws/unparsed-answers.js";
import { FakeClock } from "./support/clock.js";
import { FakeSecretsManager, PROVIDER_SECRET as SECRET, awsError } from "./support/fake-secrets-manager.js";


function setup() {
  const secrets = new FakeSecretsManager("arn:secret:provider", SECRET);
  const clock = new FakeClock();
  const warnings: Readonly<Record<string, unknown>>[] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (_, fields) => void warnings.push(fields ?? {}) };
  const backoff = { random: () => 0.5, maxAttempts: 3 };
  const client = new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId, clock, backoff, logger });
  return { secrets, clock, warnings, client };
}

describe("ProviderSecretClient", () => {
  it("reads back a version it wrote, by id, and recognises a version that does not exist", async () => {
    const { client } = setup();
    const versionId = await client.put({ ...SECRET, refresh_token: "rt-2" });
    expect(await client.read(versionId)).toEqual({ secret: { ...SECRET, refresh_token: "rt-2" }, versionId });
    const missing = await client.read("no-such-version").catch((e: unknown) => e);
    expect(isSecretNotFound(missing)).toBe(true);
    expect(isSecretNotFound(new SecretStoreError("x", "arn", "GetSecretValue", 1, { cause: awsError("AccessDeniedException") }))).toBe(false);
    // Another resource's absence (a deleted table) wrapped by another error is no missing secret.
    expect(isSecretNotFound(new Error("x", { cause: awsError("ResourceNotFoundException") }))).toBe(false);
  });

  it("writes a rotation's version with its labels only: AWSCURRENT stays on the version it was on", async () => {
    const { client, secrets } = setup();
    const current = secrets.versionWith("AWSCURRENT");
    const versionId = await client.put({ ...SECRET, refresh_token: "rt-2" }, { clientRequestToken: "rotation-1", stages: ["AWSPENDING"] });
    expect(versionId).toBe("rotation-1");
    expect(secrets.stagesOf("rotation-1")).toEqual(["AWSPENDING"]);
    expect(secrets.versionWith("AWSCURRENT")).toBe(current);
  });

  it("reads a malformed secret as SecretFormatError naming the secret it read", async () => {
    const { client } = setup();
    await client.put({ ...SECRET, refresh_token: "" });
    await expect(client.read()).rejects.toMatchObject({ name: "SecretFormatError", secretId: "arn:secret:provider", fields: ["refresh_token"] });
  });

  it("repeats only a write whose attempts timed out: the tags and the version list fail on the first timed-out call", async () => {
    const { client, secrets } = setup();
    // A timeout the SDK gave up on after its own 3 attempts.
    const timedOut = () => Object.assign(awsError("TimeoutError"), { $metadata: { attempts: 3 } });
    secrets.failNext("DescribeSecret", timedOut(), 3);
    secrets.failNext("ListSecretVersionIds", timedOut(), 3);
    await expect(client.tags()).rejects.toMatchObject({ operation: "DescribeSecret", attempts: 1 });
    await expect(client.hasVersion("v1")).rejects.toMatchObject({ operation: "ListSecretVersionIds", attempts: 1 });
  });

  it("counts the versions created since a time, deprecated ones included, across ListSecretVersionIds pages", async () => {
    const clock = new FakeClock();
    const secrets = new FakeSecretsManager("arn:secret:provider", SECRET, () => clock.now() - 25 * 3_600_000);
    const client = new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId, clock });
    for (let i = 0; i < 59; i += 1) await client.put({ ...SECRET, refresh_token: `old-${i}` });
    secrets.now = () => clock.now();
    for (let i = 0; i < 120; i += 1) await client.put({ ...SECRET, refresh_token: `new-${i}` });
    expect(await client.versionsCreatedSince(clock.now() - 86_400_000)).toBe(120);
    expect(await client.versionsCreatedSince(0)).toBe(180);
    // A version created at the very millisecond given counts.
    expect(await client.versionsCreatedSince(clock.now())).toBe(120);
    const lists = secrets.calls.filter((c) => c.operation === "ListSecretVersionIds");
    expect(lists.map((c) => c.input["IncludeDeprecated"])).toEqual([true, true, true, true, true, true]);
  });

  it("finds a version it wrote, on a later ListSecretVersionIds page and with no label left, and no version it never wrote", async () => {
    const { client, secrets } = setup();
    const first = await client.put({ ...SECRET, refresh_token: "rt-first" });
    for (let i = 0; i < 100; i += 1) await client.put({ ...SECRET, refresh_token: `rt-${i}` });
    const last = await client.put({ ...SECRET, refresh_token: "rt-last" });
    expect(secrets.stagesOf(first)).toEqual([]);
    expect(await client.hasVersion(first)).toBe(true);
    expect(await client.hasVersion(last)).toBe(true);
    expect(await client.hasVersion("never-written")).toBe(false);
  });

  it("warns once per retried call and names the operation and attempts when throttling outlasts the retries", async () => {
    const { client, secrets, warnings } = setup();
    secrets.failNext("GetSecretValue", awsError("ThrottlingException", 400, true), 3);
    const error = await client.getValue().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect(error).toMatchObject({
      operation: "GetSecretValue",
      attempts: 3,
      message: "GetSecretValue on the provider secret failed after 3 attempts: ThrottlingException",
    });
    expect(warnings).toEqual([
      { operation: "GetSecretValue", attempt: 1, error: "ThrottlingException" },
      { operation: "GetSecretValue", attempt: 2, error: "ThrottlingException" },
    ]);
  });

  it("says 'retrying' only for a retry its pacer lets start: one it refuses (too little of the invocation left) is no retry", async () => {
    const { client, secrets, warnings } = setup();
    secrets.failNext("PutSecretValue", awsError("ThrottlingException", 400, true), 3);
    // The first call, and one retry, then no more time.
    let calls = 0;
    const pacer = { beforeCall: async () => (calls += 1) <= 2 };
    const error = await client.put({ ...SECRET, refresh_token: "rt-2" }, undefined, pacer).catch((e: unknown) => e);
    expect(error).toMatchObject({ operation: "PutSecretValue", attempts: 2, message: "PutSecretValue on the provider secret failed after 2 attempts: ThrottlingException" });
    expect(secrets.calls.filter((c) => c.operation === "PutSecretValue")).toHaveLength(2);
    expect(warnings).toEqual([{ operation: "PutSecretValue", attempt: 1, error: "ThrottlingException" }]);
  });

  it("shows its pacer the failure of the call before each retry (a timed-out write holds the tokens first), none before the first", async () => {
    const { client, secrets } = setup();
    const throttled = awsError("ThrottlingException", 400, true);
    secrets.failNext("PutSecretValue", throttled);
    const seen: unknown[] = [];
    const pacer = {
      beforeCall: async (previous: unknown) => {
        seen.push(previous);
        return true;
      },
    };
    await client.put({ ...SECRET, refresh_token: "rt-2" }, undefined, pacer);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBeUndefined();
    expect(seen[1]).toBe(throttled);
  });

  it("names no time left, not an unknown error, for a call its pacer does not start at all, and sends nothing", async () => {
    const { client, secrets } = setup();
    const pacer = { beforeCall: async () => false };
    const error = await client.put({ ...SECRET, refresh_token: "rt-2" }, undefined, pacer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect(error).toMatchObject({ operation: "PutSecretValue", attempts: 0, message: "PutSecretValue on the provider secret failed: NoTimeLeft" });
    expect(secrets.calls.filter((c) => c.operation === "PutSecretValue")).toHaveLength(0);
  });

  it("holds a read to its pacer too: a read the pacer does not start fails with no time left and sends nothing", async () => {
    const { client, secrets } = setup();
    const error = await client.read(undefined, { beforeCall: async () => false }).catch((e: unknown) => e);
    expect(error).toMatchObject({ operation: "GetSecretValue", attempts: 0, message: "GetSecretValue on the provider secret failed: NoTimeLeft" });
    expect(secrets.calls.filter((c) => c.operation === "GetSecretValue")).toHaveLength(0);
  });

  it("counts the attempts in the message only when retries ran out: a throttled call then refused fails as refused", async () => {
    const { client, secrets } = setup();
    secrets.failNext("GetSecretValue", awsError("ThrottlingException", 400, true));
    secrets.failNext("GetSecretValue", awsError("AccessDeniedException"));
    const error = await client.getValue().catch((e: unknown) => e);
    expect(error).toMatchObject({ operation: "GetSecretValue", attempts: 2, message: "GetSecretValue on the provider secret failed: AccessDeniedException" });
  });

  it("names a network failure by its system code, not the plain Error name Node gives it", async () => {
    const { client, secrets } = setup();
    secrets.failNext("GetSecretValue", Object.assign(new Error("getaddrinfo ENOTFOUND secretsmanager.eu-west-1.amazonaws.com"), { code: "ENOTFOUND" }));
    const error = await client.getValue().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect((error as Error).message).toBe("GetSecretValue on the provider secret failed: ENOTFOUND");
  });

  it("names a failure with no name by its code, one with an empty code by its name, one with neither as unknown", async () => {
    const { client, secrets } = setup();
    // What a handler may reject with is not always an Error.
    const notAnError = (thrown: object) => thrown as Error;
    secrets.failNext("GetSecretValue", notAnError({ code: "ECONNRESET" }));
    await expect(client.getValue()).rejects.toThrow("GetSecretValue on the provider secret failed: ECONNRESET");
    secrets.failNext("GetSecretValue", Object.assign(new Error("socket hang up"), { code: "" }));
    await expect(client.getValue()).rejects.toThrow(/^GetSecretValue on the provider secret failed: Error$/);
    secrets.failNext("GetSecretValue", notAnError({}));
    await expect(client.getValue()).rejects.toThrow(/^GetSecretValue on the provider secret failed: unknown error$/);
  });
});

describe("ProviderSecretClient on an answer the SDK cannot parse", () => {
  // V8's parser quotes the 10 characters on either side of a fault: here where the secret's value begins.
  const GARBLED = '{"VersionId":"v1","SecretString":csecret-0123456789"}';

  /** A client of a real SDK client answered 200 with GARBLED; `asLambdas`: set up as the Lambdas' are (handlers.ts). */
  function reading(asLambdas: boolean): ProviderSecretClient {
    const headers = { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": "req-1" };
    const secrets = new SecretsManagerClient({
      region: "eu-west-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      requestHandler: { handle: async () => ({ response: { statusCode: 200, headers, body: Readable.from([Buffer.from(GARBLED)]) } }) },
    });
    if (asLambdas) {
      nameFailedCalls(secrets);
      dropUnparsedAnswers(secrets);
    }
    return new ProviderSecretClient({ secrets, secretId: "arn:secret:provider", clock: new FakeClock() });
  }

  it("keeps a Lambda client's body-free error as the cause: the log line names the call, the request id is kept", async () => {
    const error = await reading(true).read().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "SecretStoreError", message: "GetSecretValue on the provider secret failed: SyntaxError" });
    expect((error as Error).cause).toMatchObject({ message: UNPARSED_ANSWER_MESSAGE, $metadata: { requestId: "req-1" } });
    expect(awsCallOf(error)).toEqual({ awsCall: "SecretsManager GetSecretValue" });
    expect(inspect(error, { showHidden: true, depth: 10 })).not.toContain("csecret");
  });

  it("keeps, for the SDK's own error (a CLI client), one quoting and holding nothing of the body, the secret's JSON", async () => {
    const error = await reading(false).read().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "SecretStoreError", message: "GetSecretValue on the provider secret failed: SyntaxError" });
    expect((error as Error).cause).toMatchObject({ message: UNPARSED_ANSWER_MESSAGE, $metadata: { requestId: "req-1" } });
    expect(inspect(error, { showHidden: true, depth: 10 })).not.toContain("csecret");
  });
});

describe("secretFingerprint", () => {
  it("tells members apart: the same values under other members make another fingerprint", () => {
    const members = ["client_id", "client_secret"] as const;
    const fingerprint = secretFingerprint({ client_id: "a", client_secret: "b" }, members);
    expect(secretFingerprint({ client_id: "a", client_secret: "b" }, members)).toBe(fingerprint);
    expect(secretFingerprint({ client_id: "b", client_secret: "a" }, members)).not.toBe(fingerprint);
    // Nor are values run together: "ab" + "c" is not "a" + "bc".
    expect(secretFingerprint({ client_id: "ab", client_secret: "c" }, members)).not.toBe(secretFingerprint({ client_id: "a", client_secret: "bc" }, members));
  });
});

describe("parseSecret", () => {
  /** What parseSecret throws for `text` (undefined when it accepts it). */
  const parseError = (text: string): unknown => {
    try {
      parseSecret("arn:secret:provider", text, "v1");
      return undefined;
    } catch (e) {
      return e;
    }
  };

  it("refuses a pii_salt under 16 characters as SecretFormatError naming pii_salt, never its value", () => {
    const short = JSON.stringify({ ...SECRET, pii_salt: "fifteen-chars!!" });
    const error = parseError(short);
    expect(error).toBeInstanceOf(SecretFormatError);
    expect(error).toMatchObject({ fields: ["pii_salt"] });
    expect((error as Error).message).toBe(
      "The provider secret is missing or has invalid fields: pii_salt (pii_salt must be at least 16 characters)",
    );
    expect(parseSecret("arn:secret:provider", JSON.stringify({ ...SECRET, pii_salt: "sixteen-chars!!!" }), "v1").secret.pii_salt).toBe(
      "sixteen-chars!!!",
    );
  });

  it("refuses a pii_salt holding a lone UTF-16 surrogate as SecretFormatError naming pii_salt, never its value", () => {
    // JSON's "\ud800" escape parses to a lone surrogate, which the HMAC key's UTF-8 turns into U+FFFD.
    const error = parseError(`{"client_id":"cid","client_secret":"cs","refresh_token":"rt","pii_salt":"0123456789abcdef\\ud800"}`);
    expect(error).toBeInstanceOf(SecretFormatError);
    expect(error).toMatchObject({ fields: ["pii_salt"] });
    expect((error as Error).message).toBe(
      "The provider secret is missing or has invalid fields: pii_salt (pii_salt must be well-formed text: it holds a lone UTF-16 surrogate (\\ud800-\\udfff), which hashes as U+FFFD)",
    );
    expect(parseSecret("arn:secret:provider", JSON.stringify({ ...SECRET, pii_salt: "0123456789abcdef\ud83d\ude00" }), "v1").secret.pii_salt).toBe(
      "0123456789abcdef\ud83d\ude00",
    );
  });

  it("refuses text that is not JSON without echoing any of it, in the message or the cause", () => {
    // V8's SyntaxError quotes some of the text (here a refresh token pasted in place of the JSON).
    for (const text of ["rt-super-secret-value-0123456789", '{"client_id": "cid", "refresh_token": rt-super-secret-value}']) {
      const error = parseError(text);
      expect(error).toBeInstanceOf(SecretFormatError);
      expect((error as Error).message).toBe("The provider secret is not JSON");
      // The cause names the parser's failure only.
      expect((error as Error).cause).toMatchObject({ message: "SyntaxError" });
    }
  });

  it("refuses an empty refresh_token as SecretFormatError naming it: there is no token to present", () => {
    const error = parseError(JSON.stringify({ ...SECRET, refresh_token: "" }));
    expect(error).toBeInstanceOf(SecretFormatError);
    expect(error).toMatchObject({ fields: ["refresh_token"] });
  });

  it("names the root, not an empty field, for JSON that is not an object", () => {
    for (const text of ["[]", "null"]) {
      const error = parseError(text);
      expect(error).toBeInstanceOf(SecretFormatError);
      expect(error).toMatchObject({ fields: ["(root)"], message: "The provider secret is missing or has invalid fields: (root)" });
    }
  });

  it("keeps the fields it does not know: a save writes back the secret it read, every other field kept", () => {
    const stored = { ...SECRET, client: { client_id: "cid" }, note: "set up by ops" };
    expect(parseSecret("arn:secret:provider", JSON.stringify(stored), "v1").secret).toEqual(stored);
  });

  it("names a version without a string value as such (a binary secret, a rotation's empty AWSPENDING), not as JSON it is not", () => {
    expect(() => parseSecret("arn:secret:provider", undefined, "v1")).toThrow(
      expect.objectContaining({ name: "SecretFormatError", secretId: "arn:secret:provider", message: "The provider secret has no string value" }),
    );
  });

  it("refuses a value read without a version id, which no write or revocation could be bound to", () => {
    expect(() => parseSecret("arn:secret:provider", JSON.stringify(SECRET), undefined)).toThrow(SecretFormatError);
  });
});
