import { GetSecretValueCommand, PutSecretValueCommand, ResourceNotFoundException, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { SecretOnboardingError, readOnboardingSecret, secretTokenStore } from "../../shared/cli/secret-onboarding.js";

const ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme-AbCdEf";
const secrets = new SecretsManagerClient({ region: "eu-west-1" });
const mock = mockClient(secrets);

function written(): Record<string, unknown> {
  const call = mock.commandCalls(PutSecretValueCommand)[0];
  return JSON.parse(call?.args[0].input.SecretString ?? "null") as Record<string, unknown>;
}

describe("secretTokenStore", () => {
  beforeEach(() => mock.reset());

  it("merges the refresh token into the secret, keeping client credentials, salt and other fields", async () => {
    mock.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ client_id: "cid", client_secret: "csecret", pii_salt: "salt-from-cdk", refresh_token: "old", note: "x" }),
      VersionId: "v1",
    });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    await secretTokenStore(secrets, ARN, { client_id: "env-id", client_secret: "env-secret" }).save({ refreshToken: "rt-new", accessToken: "at" });
    expect(written()).toEqual({ client_id: "cid", client_secret: "csecret", pii_salt: "salt-from-cdk", refresh_token: "rt-new", note: "x" });
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

  it("treats a placeholder text secret as empty", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: "run npm run bridge -- authorize --secret-id <arn>", VersionId: "v1" });
    expect(await readOnboardingSecret(secrets, ARN)).toEqual({});
  });

  it("reports a failed write by operation, without values", async () => {
    mock.on(GetSecretValueCommand).resolves({ SecretString: "{}", VersionId: "v1" });
    mock.on(PutSecretValueCommand).rejects(Object.assign(new Error("denied rt-secret"), { name: "AccessDeniedException" }));
    const save = secretTokenStore(secrets, ARN, { client_id: "a", client_secret: "b" }).save({ refreshToken: "rt-secret" });
    await expect(save).rejects.toThrow(SecretOnboardingError);
    await expect(save).rejects.toThrow(`cannot write secret ${ARN}: AccessDeniedException`);
  });
});
