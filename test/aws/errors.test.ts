import { describe, expect, it } from "vitest";
import {
  decodeCause,
  FunctionTimeoutTooShortError,
  isConditionFailure,
  PiiSaltChangedError,
  ProviderClientChangedError,
  revokedFamilyMessage,
  SecretStoreError,
  SecretVersionQuotaError,
} from "../../shared/aws/errors.js";

describe("revokedFamilyMessage", () => {
  const secretId = "arn:aws:secretsmanager:eu-west-1:1:secret:qashio-bridge/acme";

  it("tells to re-authorize with the tenant's secret when the provider named the grant", () => {
    expect(revokedFamilyMessage({ clientMayBeRefused: false }, 'for tenant "acme"', secretId)).toBe(
      `The provider revoked the bridge's token family for tenant "acme": re-authorize the integration (npm run bridge -- authorize --secret-id ${secretId})`,
    );
  });

  it("tells to check the secret's client credentials first, keeping its other fields, when the refusal may have been of them", () => {
    const message = revokedFamilyMessage({ clientMayBeRefused: true }, 'for tenant "acme"', secretId);
    expect(message).toMatch(/^The provider refused the bridge's refresh token or its client credentials for tenant "acme" \(a 401 without an OAuth error code/);
    expect(message).toContain("check the secret's client_id and client_secret first");
    expect(message).toContain("refresh_token and pii_salt kept");
    expect(message).toContain(`; else re-authorize the integration (npm run bridge -- authorize --secret-id ${secretId})`);
  });
});

describe("isConditionFailure", () => {
  it("is true only for an error named ConditionalCheckFailedException", () => {
    expect(isConditionFailure(Object.assign(new Error("The conditional request failed"), { name: "ConditionalCheckFailedException" }))).toBe(true);
    expect(isConditionFailure(Object.assign(new Error("Transaction cancelled"), { name: "TransactionCanceledException" }))).toBe(false);
    // Not an Error (a plain object that a mock or a wrapper might throw) is no DynamoDB answer.
    expect(isConditionFailure({ name: "ConditionalCheckFailedException" })).toBe(false);
  });
});

describe("decodeCause", () => {
  it("keeps a decode failure other than JSON.parse's, which quotes nothing", () => {
    const gzip = Object.assign(new Error("incorrect header check"), { code: "Z_DATA_ERROR" });
    expect(decodeCause(gzip)).toBe(gzip);
  });
});

describe("SecretVersionQuotaError", () => {
  it("says when a postponed refresh goes ahead: once older versions age out, or, for one ahead of expiry, once the token expires", () => {
    const late = new SecretVersionQuotaError("qashio-bridge/acme", 95, 90);
    expect(late).toMatchObject({ name: "SecretVersionQuotaError", secretId: "qashio-bridge/acme", recentVersions: 95, limit: 90, early: false });
    expect(late.message).toBe(
      "Token refresh postponed: the provider secret has 95 versions created in the last 24 hours (the bridge refreshes only below 90, " +
        "Secrets Manager keeps at most about 100 such versions); the refresh token is kept unspent and the refresh goes ahead once older " +
        "versions are a day old (docs/runbook.md)",
    );
    const early = new SecretVersionQuotaError("qashio-bridge/acme", 85, 80, true);
    expect(early.message).toContain("(the bridge refreshes ahead of the access token's expiry only below 80,");
    expect(early.message).toContain("the refresh goes ahead once the access token expires (docs/runbook.md)");
  });
});

describe("PiiSaltChangedError", () => {
  it("names the secret, its pii_salt field and the table's item, under its own name", () => {
    const error = new PiiSaltChangedError("qashio-bridge/acme", "bridge-acme", { pk: "PII#acme", sk: "SALT" });
    expect(error).toMatchObject({ name: "PiiSaltChangedError", field: "pii_salt", secretId: "qashio-bridge/acme", tableName: "bridge-acme" });
    expect(error.message).toMatch(/^The pii_salt in secret qashio-bridge\/acme is not the salt the pseudonyms in table bridge-acme were made with \(the item pk=PII#acme sk=SALT records/);
  });
});

describe("ProviderClientChangedError", () => {
  it("names the secret whose client changed", () => {
    expect(new ProviderClientChangedError("qashio-bridge/acme")).toMatchObject({
      name: "ProviderClientChangedError",
      message: "The provider client in secret qashio-bridge/acme changed since this container started; the next invocation uses the new one",
    });
  });
});

describe("FunctionTimeoutTooShortError", () => {
  it("refuses a cycle unless told otherwise, and keeps the cause it is given", () => {
    const cause = new Error("context");
    const error = new FunctionTimeoutTooShortError(29_500, 60_000, 40_000, undefined, { cause });
    expect(error).toMatchObject({ name: "FunctionTimeoutTooShortError", action: "cycle", cause });
    // Seconds as they are, not rounded: a timeout of 29.5 s reads as no 30 s one.
    expect(error.message).toMatch(/^The function's timeout is too short: 29\.5 s or less, where a poller needs at least 60 s, a cycle of 40 s \(MIN_CYCLE_BUDGET_MS/);
  });
});

describe("SecretStoreError", () => {
  it("keeps the cause of the failed call", () => {
    const cause = Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
    expect(new SecretStoreError("GetSecretValue kept failing", "qashio-bridge/acme", "GetSecretValue", 3, { cause })).toMatchObject({ name: "SecretStoreError", attempts: 3, cause });
  });
});
