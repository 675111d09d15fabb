/**
 * Webhook fields' bounds and messages that hand mutation found watched only by the JSON Schema's snapshot, or by no
 * test (see each test's mutant). The snapshot sees a changed pattern or bound, not whether synth still refuses or
 * takes what the docs say; these do.
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { thrown } from "../thrown.js";

const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf";
const pinned = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" }, account: "123456789012", region: "eu-west-1" };
const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
const withHook = (fields: Record<string, unknown>) => ({ ...pinned, webhooks: [{ ...hook, ...fields }] });
const refusal = (fields: Record<string, unknown>) => thrown(() => parseTenantConfig(withHook(fields)), TenantConfigError).message;

describe("webhook schema: hand mutation found unwatched", () => {
  // Mutants: a case-sensitive scheme check refused HTTPS://, a credentials check to the first '/' (not '?') refused an
  // '@' in a query, and a limit of 2047 refused a URL of EventBridge's 2048 characters.
  it.each([
    ["an upper-case scheme", "HTTPS://erp.test/h"],
    ["an '@' in the query, right after the host", "https://erp.test?to=ops@acme.test"],
    ["2048 characters, EventBridge's limit", `https://erp.test/${"a".repeat(2048 - "https://erp.test/".length)}`],
  ])("takes a webhook URL with %s", (_what, url) => {
    expect(parseTenantConfig(withHook({ url })).webhooks[0]?.url).toBe(url);
  });

  // Mutant: a percent escape of one hex digit let through a stray '%', which EventBridge's pattern refuses at deploy.
  it("refuses a '%' not followed by two hex digits", () => {
    expect(refusal({ url: "https://erp.test/h?a=%5" })).toMatch(/^tenant "acme": field webhooks\[0\]\.url: must hold only ASCII letters, digits and /);
  });

  // Mutant: the message without "; use auth" left the reader where the credentials go instead.
  it("says where a URL's credentials go instead", () => {
    expect(refusal({ url: "https://user:pw@erp.test/h" })).toBe(
      'tenant "acme": field webhooks[0].url: must not carry credentials (user:password@); use auth',
    );
  });

  // Mutant: the third-slash check not aborting let the later checks read the path as the host, and name a fault it has not.
  it("names only the missing host of https:///localhost/..., not the path read as a loopback host", () => {
    expect(refusal({ url: "https:///localhost/hooks" })).toBe('tenant "acme": field webhooks[0].url: must name a host right after https:// (no third slash)');
  });

  // Mutants: each bound one past (webhook name 32 characters, rate 301, retries 186, event age 25 hours), a name led by a
  // dash, and no lower bound on event types.
  it.each([
    ["name", "a".repeat(31), "a".repeat(32), "must be a lowercase slug of at most 31 characters"],
    ["name", "a-b", "-ab", "must be a lowercase slug of at most 31 characters"],
    ["rateLimitPerSecond", 300, 301, "Too big: expected number to be <=300"],
    ["retryAttempts", 185, 186, "Too big: expected number to be <=185"],
    ["maxEventAgeHours", 24, 25, "Too big: expected number to be <=24"],
  ])("takes %s %j and refuses %j", (field, taken, refused, message) => {
    expect(parseTenantConfig(withHook({ [field]: taken })).webhooks[0]).toMatchObject({ [field]: taken });
    expect(refusal({ [field]: refused })).toBe(`tenant "acme": field webhooks[0].${field}: ${message}`);
  });

  it("refuses a webhook forwarding no event type", () => {
    expect(refusal({ eventTypes: [] })).toBe('tenant "acme": field webhooks[0].eventTypes: Too small: expected array to have >=1 items');
  });

  // Mutant: the default retries 0 sent an event to the dead-letter queue on its first failed delivery.
  it("retries a delivery 24 times over up to 24 hours unless told otherwise", () => {
    expect(parseTenantConfig(withHook({})).webhooks[0]).toMatchObject({
      retryAttempts: TENANT_DEFAULTS.webhookRetryAttempts,
      maxEventAgeHours: TENANT_DEFAULTS.webhookMaxEventAgeHours,
    });
    expect([TENANT_DEFAULTS.webhookRetryAttempts, TENANT_DEFAULTS.webhookMaxEventAgeHours]).toEqual([24, 24]);
  });

  // Mutants: a JSON key taking '{' or '}' broke the template's dynamic reference; a header name taking a space, or a
  // connection parameter DEL, was refused only at deploy.
  it.each([
    ["a secret's JSON key with a brace", { type: "basic", username: "u", password: { secretArn, jsonField: "a}b" } }, "password.jsonField", "must not contain ':', '{' or '}'"],
    ["a header name with a space", { type: "apiKey", headerName: "x api-key", value: { secretArn } }, "headerName", "must be an HTTP header name"],
    ["a user name holding DEL", { type: "basic", username: "svc\u007fbridge", password: { secretArn } }, "username", "must not contain ':' or control characters"],
  ])("refuses %s", (_what, auth, field, message) => {
    expect(refusal({ auth })).toMatch(new RegExp(`^tenant "acme": field webhooks\\[0\\]\\.auth\\.${field.replace(".", "\\.")}: ${message.replace(/[{}]/g, "\\$&")}`));
  });
});
