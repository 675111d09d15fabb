/**
 * Behaviours of the tenant config's validation that hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const refusal = (raw: unknown) => thrown(() => parseTenantConfig(raw), TenantConfigError).message;

describe("tenant config: bounds hand mutation found unwatched", () => {
  // Mutant: `!==` between the two "is unset" tests widened to `||` let a tenant through with nowhere to notify.
  it("refuses alarms with neither email nor topicArn: every alarm would fire to no one", () => {
    expect(refusal({ ...minimal, alarms: {} })).toBe('tenant "acme": field alarms: set exactly one of email or topicArn');
    expect(refusal({ ...minimal, alarms: { syncLagThresholdSeconds: 3600 } })).toBe('tenant "acme": field alarms: set exactly one of email or topicArn');
  });

  // Mutants: the account and region patterns without their closing `$` took a value with anything after its digits.
  it.each(["1234567890123", "123456789012 ", "123456789012x"])("refuses the account %j, which is no 12-digit id", (account) => {
    expect(refusal({ ...minimal, account })).toBe('tenant "acme": field account: must be a 12-digit AWS account id');
  });

  it.each(["eu-west-1x", "eu-west-1 ", "eu-west-1/"])("refuses the region %j, which names no region", (region) => {
    expect(refusal({ ...minimal, region })).toBe('tenant "acme": field region: must be an AWS region such as eu-west-1');
  });

  // Mutant: the SNS topic ARN pattern without its leading `^` took an ARN pasted after a space or a quote.
  it("refuses an alarm topic ARN with anything before arn:", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    for (const topicArn of [" arn:aws:sns:eu-west-1:123456789012:ops", "xarn:aws:sns:eu-west-1:123456789012:ops"]) {
      expect(refusal({ ...pinned, alarms: { topicArn } })).toBe('tenant "acme": field alarms.topicArn: must be an SNS topic ARN');
    }
  });

  // Mutant: a region led by more than four letters ("europe-west-1") passed as a region's form.
  it("refuses a region led by more than four letters, which no AWS region is", () => {
    expect(refusal({ ...minimal, region: "europe-west-1" })).toBe('tenant "acme": field region: must be an AWS region such as eu-west-1');
  });

  // Mutant: eventBus's create form as a plain object dropped a `name` beside it: a tenant meaning to import a bus got a new one.
  it("refuses a created bus given a name, rather than create a bus and drop the name", () => {
    expect(refusal({ ...minimal, eventBus: { mode: "create", name: "globex-finance" } })).toBe('tenant "acme": field eventBus.name: Unrecognized key: "name"');
  });

  // Mutant: the eventBus message without its null check read the keys of null, and synth failed with a TypeError.
  it("names the forms of eventBus when it is null", () => {
    expect(refusal({ ...minimal, eventBus: null })).toBe('tenant "acme": field eventBus: must be { "mode": "create" } or { "mode": "import", "name" | "arn": ... }');
  });

  // Mutant: the email pattern let the local part end in an apostrophe, which zod's own pattern (ours is zod's) refuses.
  it("refuses an alarm email whose local part ends in an apostrophe", () => {
    expect(refusal({ ...minimal, alarms: { email: "ops'@acme.test" } })).toBe('tenant "acme": field alarms.email: Invalid email address');
  });

  // Mutant: a relation counted as refused when any one key of its field's path matched an issue's, so a bad alarm
  // email hid the SyncLag bound, and a webhook's bad header name hid its secret's region.
  it("still checks a relation beside a refused field that is no part of it", () => {
    const fields = (raw: unknown) => refusal(raw).match(/field [\w.[\]]+:/g);
    expect(fields({ ...minimal, schedules: { transactionsEveryMinutes: 60 }, alarms: { email: "ops at acme" } })).toEqual([
      "field alarms.email:",
      "field alarms.syncLagThresholdSeconds:",
    ]);
    const secretArn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hooks-AbCdEf";
    const auth = { type: "apiKey", headerName: "x-api-key\nx", value: { secretArn } };
    expect(fields({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] })).toEqual([
      "field webhooks[0].auth.headerName:",
      "field webhooks[0].auth.value.secretArn:",
    ]);
  });

  // Mutant: the fast-path bound, checked though the fast-path rate itself was refused, named that field twice.
  it("names a fast-path rate over a day once, by its own bound, not again as no faster than the full walk", () => {
    expect(refusal({ ...minimal, schedules: { suspendedCardsEveryMinutes: 1441 } })).toBe(
      'tenant "acme": field schedules.suspendedCardsEveryMinutes: Too big: expected number to be <=1440',
    );
  });

  // Mutant: an ARN checked against a refused account id was also called outside the tenant's account.
  it("names a malformed account once, not again beside an imported bus ARN it cannot be compared with", () => {
    const eventBus = { mode: "import", arn: "arn:aws:events:eu-west-1:123456789012:event-bus/shared" };
    expect(refusal({ ...minimal, account: "12345678901", region: "eu-west-1", eventBus })).toBe('tenant "acme": field account: must be a 12-digit AWS account id');
  });
});
