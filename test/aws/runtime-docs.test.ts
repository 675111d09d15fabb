/**
 * docs/spec-gaps.md's "AWS runtime" section held to the code: the item keys, sizes, bounds and times it gives a
 * reader, and the code it cites for each choice. The behaviour tests count in the constants; these read the numbers
 * the doc states.
 */
import { randomBytes } from "node:crypto";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { describe, expect, it } from "vitest";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS } from "../../shared/bridge/cycle.js";
import { BATCH_GET_LIMIT, BATCH_WRITE_LIMIT } from "../../shared/aws/batch.js";
import {
  CYCLE_SAFETY_MARGIN_MS,
  DEFAULT_METRICS_NAMESPACE,
  INVOCATION_EARLY_END_MS,
  MIN_CYCLE_BUDGET_MS,
  MIN_ROTATION_TIMEOUT_MS,
  REFRESH_TIMEOUT_MARGIN_MS,
  SDK_CALL_MAX_MS,
  SDK_TIMEOUTS,
  TOKEN_LEASE_TTL_MS,
  cycleDeadline,
} from "../../shared/aws/config.js";
import { CYCLE_LEASE_SLACK_MS } from "../../shared/aws/cycle.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { outOfRangeIntegerIn } from "../../shared/aws/event-integers.js";
import { DEFAULT_PUBLISH_CONCURRENCY, EventBridgePublisher, MAX_ENTRIES_PER_CALL } from "../../shared/aws/event-publisher.js";
import { MAX_ENTRY_BYTES, entrySize } from "../../shared/aws/event-size.js";
import {
  LIVE_BY_TTL_INDEX,
  accessTokenItemKey,
  leaseItemKey,
  leaseNames,
  piiSaltItemKey,
  quarantineItemKey,
  revokedFamilyItemKey,
  snapshotItemKey,
} from "../../shared/aws/keys.js";
import { PUT_TIMEOUT_ROUNDS } from "../../shared/aws/provider-secret.js";
import { DEFAULT_QUARANTINE_RETENTION_DAYS, DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DEFAULT_BACKOFF } from "../../shared/aws/retry.js";
import { DEFAULT_COMPRESS_ABOVE_BYTES, TRUNCATED_SNAPSHOT_OBJECT } from "../../shared/aws/snapshot-store.js";
import { DEFAULT_SECRET_CACHE_TTL_MS, SAVE_END_MARGIN_MS } from "../../shared/aws/token-store.js";
import { DEFAULT_LOCK_WAIT_MS } from "../../shared/qashio/auth/refresh-lease.js";
import { DEFAULT_REFRESH_SKEW_MS } from "../../shared/qashio/auth/token-expiry.js";
import { DEFAULT_TIMEOUT_MS } from "../../shared/qashio/http.js";
import type { BridgeEvent, BridgeEventDetail } from "../../shared/bridge/ports.js";
import { FakeClock } from "./support/clock.js";
import { pollerTimeout } from "../../infra/tenant-stack.js";
import { numbersSaid, quotedNames, textsSaid } from "../doc-text.js";
import { expectCitationsHold, seconds, specGapsSection } from "../spec-gaps-section.js";

const AWS = specGapsSection("AWS runtime");
const said = (pattern: RegExp): number[][] => numbersSaid(AWS, pattern);

/** The strings of every match of `pattern`'s first group in the section; fails when it matches nowhere. */
const quoted = (pattern: RegExp): string[] => textsSaid(AWS, pattern).map(([first = ""]) => first);

/** The whole lease's renewal interval: a third of it, as `whileHolding` renews (shared/lease-keep-alive.ts). */
const RENEW_EVERY_MS = TOKEN_LEASE_TTL_MS / 3;
/** The longest poller timeout the stack sets, whatever its schedule. */
const LONGEST_POLLER_TIMEOUT_MS = pollerTimeout(24 * 60).toMilliseconds();

describe("docs/spec-gaps.md, AWS runtime: the table", () => {
  it("lays out the items under the keys it gives, and no others", () => {
    const keys = [
      snapshotItemKey("<tenant>", "<kind>:<id>" as never),
      quarantineItemKey("<tenant>", "<record id>"),
      leaseItemKey("<name>"),
      accessTokenItemKey("<tenant>"),
      revokedFamilyItemKey("<tenant>"),
      piiSaltItemKey("<tenant>"),
    ].map(({ pk, sk }) => `${pk} / ${sk}`);
    const layout = AWS.slice(AWS.indexOf("**Table layout.**"), AWS.indexOf("**Compact snapshots.**"));
    const stated = [...layout.matchAll(/`([A-Z]+#[^`]*)` \/ `([^`]+)`/g)].map((m) => `${m[1]} / ${m[2]}`);
    expect(stated.sort()).toEqual(keys.sort());
  });

  it("counts the quarantine on the index it names", () => {
    expect(quoted(/One global secondary index, `([\w-]+)`/)).toEqual([LIVE_BY_TTL_INDEX]);
  });
});

describe("docs/spec-gaps.md, AWS runtime: snapshots and quarantine records", () => {
  it("compresses, batches and retries snapshots as it says", () => {
    expect(said(/gzip-compressed binary \(`objz`\) when the JSON is above (\d+) KB/)).toEqual([[DEFAULT_COMPRESS_ABOVE_BYTES / 1024]]);
    expect(said(/BatchGetItem of (\d+) keys, writes BatchWriteItem of (\d+)/)).toEqual([[BATCH_GET_LIMIT, BATCH_WRITE_LIMIT]]);
    expect(said(/\((\d+) rounds in a row that got nothing through/)).toEqual([[DEFAULT_BACKOFF.maxAttempts]]);
  });

  it("stores the marker it quotes in place of an object too large for an item", () => {
    expect(quoted(/replaced by the marker `(\{[^`]+\})`/).map((text) => JSON.parse(text) as unknown)).toEqual([TRUNCATED_SNAPSHOT_OBJECT]);
  });

  it("keeps quarantine records for the days it says, deleting them in the batches it says", () => {
    expect(said(/\*\*Quarantine retention\.\*\* (\d+) days \(`ttl`\)/)).toEqual([[DEFAULT_QUARANTINE_RETENTION_DAYS]]);
    expect(said(/Records are deleted with BatchWriteItem, (\d+) a call/)).toEqual([[BATCH_WRITE_LIMIT]]);
  });
});

/** The attributes a quarantine put sets, read from the UpdateItem it sends (a new record: no old item answered). */
async function quarantinePutValues(record: { entityId?: string; reason: string; raw: unknown }): Promise<Record<string, unknown>> {
  const sent: Record<string, unknown>[] = [];
  const doc = {
    send: async (command: unknown) => {
      if (command instanceof UpdateCommand) sent.push(command.input.ExpressionAttributeValues ?? {});
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  const quarantine = new DynamoQuarantine({ doc, tableName: "bridge", tenant: "acme" });
  await quarantine.put({ id: "r1", kind: "transaction", at: "2026-03-01T12:00:00Z", ...record });
  expect(sent).toHaveLength(1);
  return sent[0] ?? {};
}

describe("docs/spec-gaps.md, AWS runtime: what a quarantine record keeps", () => {
  it("cuts an entity id and a reason at the lengths it says, with the mark it quotes", async () => {
    const [[idMax = 0, reasonMax = 0] = []] = said(/`entityId` \(a broken record's own id, of any length\) and `reason` are cut to ([\d,]+) and ([\d,]+) characters/);
    const [mark = ""] = quoted(/characters, marked `([^`]+)`/);
    const values = await quarantinePutValues({ entityId: "e".repeat(idMax + 1), reason: "r".repeat(reasonMax + 1), raw: null });
    expect(values[":entityId"]).toBe(`${"e".repeat(idMax - mark.length)}${mark}`);
    expect(values[":reason"]).toBe(`${"r".repeat(reasonMax - mark.length)}${mark}`);
    const whole = await quarantinePutValues({ entityId: "e".repeat(idMax), reason: "r".repeat(reasonMax), raw: null });
    expect([whole[":entityId"], whole[":reason"]]).toEqual(["e".repeat(idMax), "r".repeat(reasonMax)]);
  });

  it("compresses a raw body above the size it says", async () => {
    const [[kb = 0] = []] = said(/Raw bodies above (\d+) KB gzip-compressed/);
    const body = (bytes: number) => "b".repeat(bytes - 2);
    expect(await quarantinePutValues({ reason: "bad", raw: body(kb * 1024) })).toHaveProperty(":raw");
    expect(await quarantinePutValues({ reason: "bad", raw: body(kb * 1024 + 1) })).toHaveProperty(":rawz");
  });

  it("keeps a cut body's qashio_id beside it up to the length it says", async () => {
    const [[most = 0] = []] = said(/its `qashio_id` whole beside it \(`rawQashioId`, one of up to ([\d,]+) characters, the entity id's bound; a longer one is not kept\)/);
    // Random text does not compress: the body cannot fit one item even gzip-compressed, so its head is kept.
    const noise = randomBytes(400_000).toString("base64");
    const cut = async (qashioId: string) => quarantinePutValues({ reason: "bad", raw: { noise, qashio_id: qashioId } });
    const kept = await cut("q".repeat(most));
    expect(kept).toHaveProperty(":rawTruncatedFrom");
    expect(kept[":rawQashioId"]).toBe("q".repeat(most));
    expect(await cut("q".repeat(most + 1))).not.toHaveProperty(":rawQashioId");
  });
});

describe("docs/spec-gaps.md, AWS runtime: leases", () => {
  it("names the leases of a tenant as it says", () => {
    const [names = ""] = quoted(/Lease names per tenant: ((?:`[^`]+`(?:, | and )?)+)/);
    expect(quotedNames(names)).toEqual([
      leaseNames.transactionsCycle("<tenant>"),
      leaseNames.cardsCycle("<tenant>"),
      leaseNames.tokenRefresh("<tenant>"),
    ]);
  });

  it("puts a lease under the condition it quotes, its expiresAt deciding and its ttl the housekeeping it says", async () => {
    const [[hours = 0] = []] = said(/`ttl` is housekeeping only \(\+(\d+) h\)/);
    const [condition = ""] = quoted(/\*\*Leases\.\*\* Conditional put \(`([^`]+)`\)/);
    const puts: Record<string, unknown>[] = [];
    const doc = {
      send: async (command: unknown) => {
        if (command instanceof PutCommand) puts.push({ ...command.input.Item, condition: command.input.ConditionExpression });
        return {};
      },
    } as unknown as DynamoDBDocumentClient;
    const clock = new FakeClock();
    expect(await new DynamoLeaseLock({ doc, tableName: "bridge", clock, ownerId: () => "token" }).tryAcquire("acme#cycle#cards", 90_000)).toBeDefined();
    expect(puts).toEqual([
      expect.objectContaining({ expiresAt: clock.now() + 90_000, ttl: Math.ceil((clock.now() + 90_000 + hours * 3_600_000) / 1000), condition: condition.replace("<this call's token>", ":owner").replace("owner =", "#owner =").replace("<= now", "<= :now") }),
    ]);
  });

  it("holds a cycle lease as long past the deadline as it says, up to the longest it gives", () => {
    expect(said(/Cycle lease TTL = the cycle's deadline \+ (\d+) s/)).toEqual([[seconds(CYCLE_LEASE_SLACK_MS)]]);
    expect(said(/\(up to ([\d.]+) minutes for a cycle lease: the cycle budget plus (\d+) s\)/)).toEqual([
      [(LONGEST_POLLER_TIMEOUT_MS - CYCLE_SAFETY_MARGIN_MS + CYCLE_LEASE_SLACK_MS) / 60_000, seconds(CYCLE_LEASE_SLACK_MS)],
    ]);
    for (const [slack] of said(/\(deadline \+ (\d+) s\)/)) expect(slack).toBe(seconds(CYCLE_LEASE_SLACK_MS));
  });

  it("tolerates the clock skew it says, from the lease lengths and renewals it gives", () => {
    expect(said(/under (\d+) s for the token-refresh lease \(the refresh is over half-way through its (\d+) s, and renewals every (\d+) s/)).toEqual([
      [seconds(TOKEN_LEASE_TTL_MS / 2), seconds(TOKEN_LEASE_TTL_MS), seconds(RENEW_EVERY_MS)],
    ]);
    expect(said(/under about (\d+) s for a cycle lease \(its work is meant to end within the (\d+) s kept back past the deadline, the lease (\d+) s past it\)/)).toEqual([
      [seconds(CYCLE_LEASE_SLACK_MS - CYCLE_SAFETY_MARGIN_MS), seconds(CYCLE_SAFETY_MARGIN_MS), seconds(CYCLE_LEASE_SLACK_MS)],
    ]);
  });
});

describe("docs/spec-gaps.md, AWS runtime: time", () => {
  it("bounds each AWS SDK call as it says", () => {
    expect(said(/may take (\d+) s to connect and (\d+) s in all/)).toEqual([[seconds(SDK_TIMEOUTS.connectionTimeoutMs), seconds(SDK_TIMEOUTS.requestTimeoutMs)]]);
    expect(said(/every client makes (\d+) attempts/)).toEqual([[SDK_TIMEOUTS.maxAttempts]]);
    expect(said(/after about (\d+) × (\d+) s = (\d+) s/)).toEqual([
      [SDK_TIMEOUTS.maxAttempts, seconds(SDK_TIMEOUTS.requestTimeoutMs), seconds(SDK_TIMEOUTS.maxAttempts * SDK_TIMEOUTS.requestTimeoutMs)],
    ]);
    expect(said(/the part of the (\d+) s kept back from the Lambda's time/)).toEqual([[seconds(CYCLE_SAFETY_MARGIN_MS)]]);
    expect(said(/after the provider calls' (\d+) s grace/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS)]]);
    expect(said(/it is made up to (\d+) times while its attempts time out/)).toEqual([[PUT_TIMEOUT_ROUNDS]]);
    expect(said(/Every call of the bridge is small \((\d+) keys, (\d+) writes, (\d+) events, one secret\)/)).toEqual([
      [BATCH_GET_LIMIT, BATCH_WRITE_LIMIT, MAX_ENTRIES_PER_CALL],
    ]);
  });

  it("sets the cycle deadline by the margin it says, the grace and least budget it gives", () => {
    const [[margin = 0] = []] = said(/`min\(CYCLE_BUDGET_MS, remaining Lambda time − (\d+) s\)`/);
    expect(cycleDeadline(0, 300_000)).toBe(300_000 - margin * 1000);
    expect(cycleDeadline(0, 300_000, 60_000)).toBe(60_000);
    expect(said(/Provider calls under way may run up to (\d+) s past it/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS)]]);
    expect(said(/less than the (\d+) s minimum budget/)).toEqual([[seconds(MIN_CYCLE_BUDGET_MS)]]);
  });

  it("ends a hung invocation as early as it says, the calls' grace inside the lease's slack", () => {
    expect(said(/middy ends the invocation (\d+) s before Lambda would/)).toEqual([[seconds(INVOCATION_EARLY_END_MS)]]);
    expect(said(/the cycle's plus its (\d+) s grace, well inside the lease's (\d+) s slack/)).toEqual([
      [seconds(DEFAULT_DEADLINE_GRACE_MS), seconds(CYCLE_LEASE_SLACK_MS)],
    ]);
  });
});

describe("docs/spec-gaps.md, AWS runtime: tokens and the secret", () => {
  it("refreshes a shared access token at the skew it says, and caches the secret as long as it says", () => {
    expect(said(/near expiry \(the client's (\d+) s skew\)/)).toEqual([[seconds(DEFAULT_REFRESH_SKEW_MS)]]);
    expect(said(/a cache with an explicit (\d+)-minute expiry/)).toEqual([[DEFAULT_SECRET_CACHE_TTL_MS / 60_000]]);
    expect(said(/Secrets Manager calls are retried \((\d+) attempts with backoff\)/)).toEqual([[DEFAULT_BACKOFF.maxAttempts]]);
  });

  it("renews, keeps and waits for the refresh lease as it says", () => {
    for (const [every] of said(/renew(?:ed|s the kept lease) every (\d+) s/)) expect(every).toBe(seconds(RENEW_EVERY_MS));
    expect(said(/\(up to (\d+) s into the lease\) renews at once rather than (\d+) s on, which would leave a slow renewal (\d+) s to land/)).toEqual([
      [seconds(TOKEN_LEASE_TTL_MS / 2), seconds(RENEW_EVERY_MS), seconds(TOKEN_LEASE_TTL_MS / 2 - RENEW_EVERY_MS)],
    ]);
    expect(said(/until it expires \((\d+) s after its last renewal\)/)).toEqual([[seconds(TOKEN_LEASE_TTL_MS)]]);
    expect(said(/`TokenUnavailableError` after (\d+) s/)).toEqual([[seconds(DEFAULT_LOCK_WAIT_MS)]]);
  });

  it("paces a save by the invocation's end as it says", () => {
    expect(said(/the latest refresh's save starts (\d+) s before it/)).toEqual([[seconds(TOKEN_LEASE_TTL_MS / 2 + REFRESH_TIMEOUT_MARGIN_MS)]]);
    expect(said(/a read plus three write rounds of up to (\d+) s each \((\d+) attempts of (\d+) s, and the SDK's backoff\) take ~(\d+) s/)).toEqual([
      [seconds(SDK_CALL_MAX_MS), SDK_TIMEOUTS.maxAttempts, seconds(SDK_TIMEOUTS.requestTimeoutMs), seconds(4 * SDK_CALL_MAX_MS)],
    ]);
    expect(said(/\(`SDK_CALL_MAX_MS`, (\d+) s\)/)).toEqual([[seconds(SDK_CALL_MAX_MS)]]);
    expect(said(/the tokens are held first, by (\d+) s before the end at the latest/)).toEqual([[seconds(SAVE_END_MARGIN_MS + SDK_CALL_MAX_MS)]]);
    expect(said(/ends (\d+) s before the end \(`SAVE_END_MARGIN_MS`/)).toEqual([[seconds(SAVE_END_MARGIN_MS)]]);
  });

  it("starts a rotation's refresh only within the bounds it says", () => {
    expect(said(/starts a refresh only when its whole (\d+) s lease/)).toEqual([[seconds(TOKEN_LEASE_TTL_MS)]]);
    expect(said(/ends (\d+) s before it \(`REFRESH_TIMEOUT_MARGIN_MS`/)).toEqual([[seconds(REFRESH_TIMEOUT_MARGIN_MS)]]);
    const [[least = 0, wait = 0] = []] = said(/With a timeout of at least (\d+) s \(`MIN_ROTATION_TIMEOUT_MS`: the (\d+) s longest wait/);
    expect(least).toBe(seconds(MIN_ROTATION_TIMEOUT_MS));
    expect(wait).toBe(seconds(DEFAULT_LOCK_WAIT_MS));
    expect(said(/within the validate call's (\d+) s timeout/)).toEqual([[seconds(DEFAULT_TIMEOUT_MS)]]);
  });
});

describe("docs/spec-gaps.md, AWS runtime: PutEvents", () => {
  it("sizes and packs entries as it says", () => {
    const [[timeBytes = 0] = []] = said(/Entry size by AWS's rules \(Time (\d+) bytes/);
    expect(entrySize({ Time: new Date() })).toBe(timeBytes);
    const [[entries = 0, kb = 0] = []] = said(/a call holds at most (\d+) entries and less than (\d+) KB in total/);
    expect(entries).toBe(MAX_ENTRIES_PER_CALL);
    expect(kb * 1024 - 1).toBe(MAX_ENTRY_BYTES);
    expect(said(/so ([\d,]+) bytes at most/)).toEqual([[MAX_ENTRY_BYTES]]);
    expect(said(/packed greedily in order; (\d+) calls in flight/)).toEqual([[DEFAULT_PUBLISH_CONCURRENCY]]);
    expect(said(/a batch queued behind the calls in flight \(past the first (\d+)\)/)).toEqual([[DEFAULT_PUBLISH_CONCURRENCY]]);
  });

  it("retries failed entries and stops an unavailable publisher as it says", () => {
    expect(said(/only failed entries are retried with backoff \((\d+) attempts\)/)).toEqual([[DEFAULT_BACKOFF.maxAttempts]]);
    expect(said(/once the bus took none of (\w+) batches in a row \((\d+) events or more\)/)).toEqual([[PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS]]);
  });

  it("raises PublishError for an answer of another number of entries only when it says", async () => {
    const [condition = ""] = quoted(/A batch's first call refused as a whole by the setup or as malformed \([^)]*\), or, (when it reports failed entries), answering a different number of entries than sent \([^)]*\), raises `PublishError`/);
    expect(condition).toBe("when it reports failed entries");
    const client = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
    const answerOneShort = (failedEntryCount: number) =>
      mockClient(client)
        .on(PutEventsCommand)
        .callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
          FailedEntryCount: failedEntryCount,
          Entries: input.Entries.slice(1).map(() => (failedEntryCount > 0 ? { ErrorCode: "InternalFailure" } : { EventId: "e" })),
          $metadata: {},
        }));
    const publisher = new EventBridgePublisher({ client, eventBusName: "bus", clock: new FakeClock(), backoff: { maxAttempts: 1 } });
    const events = ["ev_1", "ev_2"].map((id): BridgeEvent => ({
      source: "qashio.bridge",
      detailType: "card.suspended",
      time: "2026-03-01T12:00:00.000Z",
      detail: { id, type: "card.suspended", schema_version: "1", tenant: "acme", occurred_at: "2026-03-01T12:00:00.000Z", subject: { type: "card", id, sequence: 1 }, data: { object: { id } } },
    }));
    answerOneShort(1);
    await expect(publisher.publish(events)).rejects.toMatchObject({ name: "PublishError" });
    answerOneShort(0);
    await expect(publisher.publish(events)).resolves.toEqual({ failed: [] });
  });

  it("refuses and sends the integers it says", () => {
    const detailWith = (literal: string): { text: string; detail: BridgeEventDetail } => {
      const text = `{"data":{"object":{"amount":${literal}}}}`;
      return { text, detail: JSON.parse(text) as BridgeEventDetail };
    };
    const refusedAt = (literal: string) => {
      const { text, detail } = detailWith(literal);
      return outOfRangeIntegerIn(text, detail);
    };
    const [example = ""] = [...AWS.matchAll(/`integer out of range: (\S+) is (-?\d+), EventBridge takes integers within int64`/g)].map((m) => `${m[1]} ${m[2]}`);
    const [path = "", number = ""] = example.split(" ");
    expect(refusedAt(number)).toEqual({ path, text: number });
    const [minimum = ""] = quoted(/so -\(2\*\*63\) goes out as `(-?\d+)`, below int64's minimum/);
    expect(String(-(2 ** 63))).toBe(minimum);
    expect(refusedAt(minimum)).toMatchObject({ text: minimum });
    expect(refusedAt(String(2 ** 63))).toMatchObject({ text: String(2 ** 63) });
    const [sent = ""] = quoted(/the doubles next to them, (`-?\d+` and `-?\d+`), are sent/);
    const neighbours = [...sent.matchAll(/`(-?\d+)`/g)].map((m) => m[1] ?? "");
    expect(neighbours.map(Number)).toEqual([2 ** 63 - 1024, -(2 ** 63) + 1024]);
    for (const literal of neighbours) expect(refusedAt(literal), literal).toBeUndefined();
    const [exponent = ""] = quoted(/JavaScript writes exponent form \(`([^`]+)`\)/);
    expect(String(1e21)).toBe(exponent);
    expect(refusedAt(exponent)).toBeUndefined();
  });
});

describe("docs/spec-gaps.md, AWS runtime: metrics and the code it names", () => {
  it("emits metrics under the namespace it names", () => {
    expect(quoted(/Powertools EMF, namespace `(\w+)`/)).toEqual([DEFAULT_METRICS_NAMESPACE]);
  });

  it("cites files that exist, holding each name it cites there", () => {
    expect(expectCitationsHold(AWS)).toBeGreaterThan(20);
  });
});
