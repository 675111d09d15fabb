import { randomUUID } from "node:crypto";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runbookSection } from "../runbook-section.js";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { leaseNames } from "../../shared/aws/keys.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { ReauthorizationNeededError } from "../../shared/bridge/index.js";
import { ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import type { MetricName } from "../../shared/bridge/ports.js";
import { bare401For, createHarness, emfValues, revokeFamily, TENANT, type Harness } from "./support/harness.js";

/** What each card heartbeat of a fast-path tenant counts (infra/tenant-stack.ts). */
const CARD_HEARTBEATS: Readonly<Record<string, MetricName>> = {
  "Heartbeat-PollCards": "FullCardWalks",
  "Heartbeat-SuspendedCards": "FastPathCardWalks",
};

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

describe("the runbook names the card heartbeats a revoked token family stops on a fast-path tenant", () => {
  it("TokenFamilyRevoked names each heartbeat whose cycles the revoked ticks no longer start, and Heartbeat says why it fires", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    expect(await h.poller("transactions")().catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    h.output.length = 0;

    // A full walk's tick and a fast-path tick, as their schedules send them.
    for (const event of [{}, { mode: "suspended-only" as const }]) {
      expect(await h.poller("cards")(event).catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    }

    const stopped = Object.entries(CARD_HEARTBEATS)
      .filter(([, metric]) => !h.output.some((line) => line.includes(`"${metric}"`)))
      .map(([alarm]) => alarm);
    expect(stopped).toEqual(Object.keys(CARD_HEARTBEATS));
    const revoked = runbookSection("TokenFamilyRevoked");
    for (const alarm of stopped) expect(revoked).toContain(`\`${alarm}\``);
    // The Heartbeat section's word on the fast path's own alarm: a tick failing before its cycle starts counts none.
    const bullet = /^- `Heartbeat-SuspendedCards`[^]*?\n\n/m.exec(runbookSection("Heartbeat"))?.[0];
    expect(bullet).toMatch(/revoked token family/);
  });
});

describe("the runbook's TokenFamilyRevoked says when the alarm clears, as the metric behaves", () => {
  it("on from the tick that meets the revocation, kept by the paused tenant's rotation, off only at an answered poll or rotation", async () => {
    await h.poller("transactions")();
    expect(emfValues(h.output, "TokenFamilyRevoked")).toEqual([0]);
    await revokeFamily(h);
    const from = h.output.length;
    await expect(h.poller("transactions")()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    // Paused: only the daily rotation runs, and it reports the state again rather than nothing.
    const token = randomUUID();
    h.secrets.startRotation(token);
    await expect(h.rotator()({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step: "createSecret" })).rejects.toBeInstanceOf(ReauthorizationRequiredError);
    expect(emfValues(h.output, "TokenFamilyRevoked", from)).toEqual([1, 1]);
    // The lines the section's step 1 sends the operator to, each with its error's name.
    const [cycleLine, cycleError, rotationLine, rotationError] = /for the failing refresh \(`([^`]+)` with `(\w+)`, or `([^`]+)` with `(\w+)`\)/.exec(runbookSection("TokenFamilyRevoked").replace(/\s+/g, " "))?.slice(1) ?? [];
    const failures = h.output
      .slice(from)
      .map((line) => JSON.parse(line) as { level?: string; message?: string; error?: { name?: string } })
      .filter((doc) => doc.level === "ERROR" && doc.error !== undefined)
      .map((doc) => [doc.message, doc.error?.name]);
    expect(failures).toEqual([
      [cycleLine, cycleError],
      [rotationLine, rotationError],
    ]);

    const revoked = runbookSection("TokenFamilyRevoked").replace(/\s+/g, " ");
    expect(revoked).toContain("a poll or rotation the provider answers reports 0");
    expect(revoked).toContain("stays in ALARM until re-authorization, also while the pollers are paused");
    expect(revoked).toContain("returns to OK at the first poll or rotation after it that the provider answers");
    // What the window of the faster poller's schedule did: an OK while paused meant nothing.
    expect(revoked).not.toContain("no sign of re-authorization");
    expect(revoked).not.toMatch(/whole window/);
  });
});

describe("the runbook's TokenFamilyRevoked quotes the words of a bare 401's errors", () => {
  it("names words each of them says, the refused refresh's own (a poll's, a rotation's) and every later poll's and rotation's", async () => {
    await h.poller("transactions")();
    const right = h.secrets.current();
    const putSecret = (value: Record<string, unknown>) =>
      h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify(value) }));
    // A client secret mistyped into the secret: the token endpoint answers a 401 naming no OAuth code.
    const bare401 = bare401For(h, "mistyped-client-secret");
    const rotation = async (fetch?: Harness["fetch"]) => {
      const token = randomUUID();
      h.secrets.startRotation(token);
      return h.rotator(fetch === undefined ? {} : { fetch })({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step: "createSecret" }).catch((e: unknown) => e);
    };
    const messages: Record<string, unknown> = {};
    await putSecret({ ...right, client_secret: "mistyped-client-secret" });
    messages["the rotation's refused refresh"] = await rotation(bare401);
    messages["a later poll"] = await h.poller("transactions")().catch((e: unknown) => e);
    // The right ones back (a new version clears the mark), then mistyped again, now met by a poll's refresh.
    await putSecret(right);
    await putSecret({ ...right, client_secret: "mistyped-client-secret" });
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    messages["a poll's refused refresh"] = await h.poller("transactions", { fetch: bare401 })().catch((e: unknown) => e);
    messages["a later rotation"] = await rotation();

    const sentence = /the error of such a bare `401`[^]*?instead of re-authorizing/.exec(runbookSection("TokenFamilyRevoked").replace(/\s+/g, " "))?.[0] ?? "";
    const quoted = [...sentence.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    expect(quoted.length).toBeGreaterThan(0);
    for (const [which, error] of Object.entries(messages)) {
      expect(error, which).toBeInstanceOf(Error);
      const message = (error as Error).message;
      expect(quoted.some((words) => message.includes(words)), `${which}: ${message}`).toBe(true);
    }
    // Nor words none of them says.
    const said = Object.values(messages).map((error) => (error as Error).message);
    for (const words of quoted) expect(said.some((message) => message.includes(words)), words).toBe(true);
  });
});

/**
 * Fails unless the top-level keys of `shown`, an invoke's result as the runbook shows it (`...` for keys left out), are
 * the keys of `result` in their order, with nothing left out where no `...` says so.
 */
function expectShownKeys(shown: string, result: object): void {
  const shownKeys = [...shown.slice(1, -1).matchAll(/(?:^|,)(?:"(\w+)":(?:\{[^}]*\}|[^,]*)|(\.\.\.))/g)].map((m) => m[1] ?? "...");
  expect(shownKeys.length).toBeGreaterThan(2);
  const keys = Object.keys(result);
  let at = 0;
  let skipping = false;
  for (const key of shownKeys) {
    if (key === "...") {
      skipping = true;
      continue;
    }
    const found = keys.indexOf(key, at);
    const where = `${key} after ${keys[at - 1] ?? "the start"}`;
    if (skipping) expect(found, where).toBeGreaterThanOrEqual(at);
    else expect(found, where).toBe(at);
    at = found + 1;
    skipping = false;
  }
  // The result's last keys shown too, unless "..." ends the example.
  if (!skipping) expect(keys.slice(at), "keys after the last one shown").toEqual([]);
}

describe("the runbook shows a poller's results as the invoke returns them", () => {
  it("SyncLag: a transaction cycle's, with its backlog", async () => {
    const result = await h.poller("transactions")();
    expect(result).toHaveProperty("backlog");
    const shown = /returns e\.g\. `(\{[^`]*\})`/.exec(runbookSection("SyncLag").replace(/\s+/g, " "))?.[1] ?? "";
    expectShownKeys(shown, result);
  });

  it("Switching the PII mode: a conform-pii pass's that completed", async () => {
    const result = await h.poller("transactions")({ action: "conform-pii" });
    expect(result).toMatchObject({ outcome: "complete" });
    const shown = /--payload '\{"action":"conform-pii"\}' \/dev\/stdout\n# (\{.*\})\n/.exec(runbookSection("Switching the PII mode"))?.[1] ?? "";
    expectShownKeys(shown, result);
  });

  it("Re-driving quarantined transactions: a re-drive's that completed", async () => {
    const result = await h.poller("transactions")({ action: "redrive" });
    expect(result).toMatchObject({ status: "completed", outcome: "complete" });
    const shown = /--payload '\{"action":"redrive"\}' \/dev\/stdout\n# (\{.*\})\n/.exec(runbookSection("Re-driving quarantined transactions"))?.[1] ?? "";
    expectShownKeys(shown, result);
  });
});

describe("the runbook's Function errors explains the failures a held lease gives a tick", () => {
  it("quotes the error of a tick whose token refresh waited out the refresh lease another holder kept", async () => {
    await h.poller("transactions")();
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    // Another holder keeps the refresh lease (a slow refresh or save elsewhere, a holder that died renewing it).
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.tokenRefresh(TENANT), 10 * 60_000);
    expect(lease).toBeDefined();
    const { context } = h.invocation(300_000);
    await expect(h.poller("transactions", { clock: h.waitingClock })(undefined, context)).rejects.toThrow();
    const failed = h.output
      .map((line) => JSON.parse(line) as { message?: string; error?: { name: string; message: string } })
      .find((doc) => doc.message === "Cycle failed");
    // The engine's error names the step and, in parentheses, the cause: what an operator searches the runbook for.
    const cause = /\((\w+): (token refresh lock "[^"]+" still held by another process) after \d+ ms\)/.exec(failed?.error?.message ?? "");
    expect(cause?.[1]).toBe("TokenUnavailableError");
    const section = runbookSection("Function errors");
    expect(section).toContain(`\`${cause?.[1]}\` "${cause?.[2]?.replace(`"${leaseNames.tokenRefresh(TENANT)}"`, '"<tenant>#token-refresh"')}`);
  });
});

describe("the runbook's Heartbeat names the line of a full-walk tick that met another card invocation's cycle lease", () => {
  it("quotes its message, kind and action as the card poller logs them, at info", async () => {
    const quoted = /log line `([^`]+)`, `kind` `(\w+)`, `action` `([\w-]+)`/.exec(runbookSection("Heartbeat").replace(/\s+/g, " "));
    expect(quoted).not.toBeNull();
    const [, message, kind, action] = quoted ?? [];
    // Another card invocation holds the cycle lease (a card cycle invoked by hand, back to back).
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    expect(await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 10 * 60_000)).toBeDefined();
    expect(await h.poller("cards")()).toMatchObject({ kind: "cards", status: "skipped", reason: "lease_held" });
    const skipped = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["message"] === message);
    expect(skipped).toEqual([expect.objectContaining({ level: "INFO", kind, action })]);
  });
});
