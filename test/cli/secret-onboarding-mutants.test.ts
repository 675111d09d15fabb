/**
 * Onboarding behaviour that hand mutation found unpinned: what the operator reads when the secret, its region, its salt
 * or its tags are not as the pollers need them, and the ARNs of AWS partitions other than the commercial one.
 */
import { DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../shared/cli/errors.js";
import { PII_SALT_MIN_LENGTH } from "../../shared/bridge/pii.js";
import { SecretOnboardingError, assertUsableSalt, onboardingSecretsClient, openTokenLease, readOnboardingSecret, secretRegion, secretTokenStore } from "../../shared/cli/secret-onboarding.js";

const ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme-AbCdEf";
const secrets = new SecretsManagerClient({ region: "eu-west-1" });
const mock = mockClient(secrets);
beforeEach(() => mock.reset());

/** The error `run` throws, or undefined. */
function thrown(run: () => unknown): Error | undefined {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  return undefined;
}

describe("secretRegion", () => {
  it("takes the region of a secret ARN of any AWS partition (China, GovCloud), as the stack output names it", () => {
    // mutant: an ARN of the commercial partition only went unseen; a China tenant's SecretArn was refused as no ARN.
    expect(secretRegion("arn:aws-cn:secretsmanager:cn-north-1:111122223333:secret:qashio-acme-AbCdEf", {})).toBe("cn-north-1");
    expect(secretRegion("arn:aws-us-gov:secretsmanager:us-gov-west-1:111122223333:secret:qashio-acme-AbCdEf", {})).toBe("us-gov-west-1");
  });
});

describe("onboardingSecretsClient", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("names the secret name that leaves the region unknown, and what to pass or set instead", async () => {
    // mutant: the message without the --secret-id it was given went unseen.
    vi.stubEnv("AWS_REGION", undefined);
    vi.stubEnv("AWS_PROFILE", undefined);
    vi.stubEnv("AWS_CONFIG_FILE", "/nonexistent/aws-config");
    vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials");
    // mutants: the refused client left undestroyed, and the SDK's error dropped as the cause, went unseen.
    const destroy = vi.spyOn(SecretsManagerClient.prototype, "destroy");
    const error = await onboardingSecretsClient("qashio-acme", {}).catch((e: unknown) => e);
    expect(destroy).toHaveBeenCalledTimes(1);
    destroy.mockRestore();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(
      "AWS_REGION: is not set and no profile names a region, which --secret-id qashio-acme needs: it is a secret name, not an ARN " +
        "(pass the stack output SecretArn, which names its region, or set AWS_REGION)",
    );
  });
});

describe("readOnboardingSecret", () => {
  it("says how to fix a JSON object broken by a hand edit: keep its pii_salt, then run authorize again", async () => {
    // mutant: the fix without "keeping pii_salt as it is" went unseen; a new salt changes every hashed identifier.
    mock.on(GetSecretValueCommand).resolves({ SecretString: '{"client_id":"cid",}', VersionId: "v1" });
    await expect(readOnboardingSecret(secrets, ARN)).rejects.toThrow(
      new SecretOnboardingError(
        `secret ${ARN} holds a JSON object that does not parse (a hand edit?), which the pollers refuse too: ` +
          "fix the JSON, keeping pii_salt as it is (hashed identifiers depend on it), then run authorize again",
        ARN,
      ),
    );
  });

  it("reads a placeholder text as empty though it holds a brace further on: only a text starting as a JSON object is refused", async () => {
    // mutant: refusing any text holding "{" went unseen; a hand-set note such as this one then blocked the onboarding.
    mock.on(GetSecretValueCommand).resolves({ SecretString: "to fill: {client_id, client_secret} by authorize --secret-id", VersionId: "v1" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
  });

  it("says a secret is not found in the region of these credentials when the client's region cannot be told", async () => {
    // mutant: an empty region ("no secret x in  for ...") went unseen.
    const regionless = new SecretsManagerClient({ region: () => Promise.reject<string>(new Error("Region is missing")) });
    const regionlessMock = mockClient(regionless);
    const notFound = () => new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: { httpStatusCode: 400 } });
    regionlessMock.on(GetSecretValueCommand).rejects(notFound());
    regionlessMock.on(DescribeSecretCommand).rejects(notFound());
    await expect(readOnboardingSecret(regionless, "qashio-acme")).rejects.toThrow(
      "there is no secret qashio-acme in the region of these credentials for the AWS account of these credentials",
    );
    regionlessMock.restore();
  });
});

describe("the cause of a refusal", () => {
  it("keeps AWS's error as the cause of a secret not found or not readable, for a debugger: the message names it only", async () => {
    // mutants: the cause dropped from either refusal went unseen.
    const notFound = new ResourceNotFoundException({ message: "Secrets Manager can't find the specified secret.", $metadata: { httpStatusCode: 400 } });
    mock.on(GetSecretValueCommand).rejects(notFound);
    mock.on(DescribeSecretCommand).rejects(notFound);
    const missing = await readOnboardingSecret(secrets, "qashio-acme").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(SecretOnboardingError);
    expect((missing as Error).cause).toBeInstanceOf(Error);
    mock.reset();
    mock.on(GetSecretValueCommand).rejects(Object.assign(new Error("not authorized"), { name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } }));
    const denied = await readOnboardingSecret(secrets, ARN).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(SecretOnboardingError);
    expect((denied as Error).cause).toBeInstanceOf(Error);
  });
});

describe("assertUsableSalt", () => {
  it("names what is wrong with a salt, without echoing it: too short (the minimum named) or holding a lone surrogate", () => {
    // mutants: the length named wrong, and the surrogate's problem left out, went unseen.
    expect(thrown(() => assertUsableSalt({ pii_salt: "short" }, ARN))?.message).toBe(
      `secret ${ARN} has a pii_salt that is not a string of at least ${PII_SALT_MIN_LENGTH} characters, which the pollers refuse: ` +
        "put a longer random one into the secret, or remove the field to have one generated (hashed identifiers change with the salt)",
    );
    expect(thrown(() => assertUsableSalt({ pii_salt: `${"s".repeat(PII_SALT_MIN_LENGTH)}\ud800` }, ARN))?.message).toBe(
      `secret ${ARN} has a pii_salt that the pollers refuse: it must be well-formed text: it holds a lone UTF-16 surrogate (\\ud800-\\udfff), ` +
        "which hashes as U+FFFD; put another random one into the secret, or remove the field to have one generated (hashed identifiers change with the salt)",
    );
  });
});

describe("openTokenLease", () => {
  it("warns of a secret without the lease tags what may happen and how to add them, and takes no lease", async () => {
    // mutant: the warning cut after "deployed before them" went unseen; it no longer said the risk or the fix.
    mock.on(DescribeSecretCommand).resolves({ Tags: [{ Key: "owner", Value: "finance" }] });
    const warnings: string[] = [];
    const send = vi.fn();
    const lease = await openTokenLease(secrets, ARN, { dynamo: { send } as never, clock: { now: () => 0, sleep: async () => undefined }, warn: (text) => warnings.push(text) });
    expect(lease).toBeUndefined();
    expect(send).not.toHaveBeenCalled();
    expect(warnings).toEqual([
      `secret ${ARN} lacks the tags qashio-bridge:tenant and qashio-bridge:lease-table (its stack was deployed before them): ` +
        "the token is written without the pollers' refresh lease, so a refresh at that moment could overwrite it; deploy the stack again to add them",
    ]);
  });
});

describe("secretTokenStore", () => {
  it("writes the client the token was issued to over another client_id the secret holds (changed meanwhile): the pollers refresh with it", async () => {
    // mutant: keeping the secret's client_id went unseen; the pollers then refreshed another client's token and failed.
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_id: "cid-old", client_secret: "cs-old", pii_salt: "salt" }), VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    await secretTokenStore(secrets, ARN, { client_id: "cid-new", client_secret: "cs-new" }).save({ refreshToken: "rt" });
    const put = mock.commandCalls(PutSecretValueCommand)[0]?.args[0].input.SecretString;
    expect(JSON.parse(put ?? "null")).toEqual({ client_id: "cid-new", client_secret: "cs-new", pii_salt: "salt", refresh_token: "rt" });
  });
});
