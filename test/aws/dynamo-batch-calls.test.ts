import type { BatchGetCommand, BatchWriteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { DynamoBatchCalls, type WriteRequest } from "../../shared/aws/batch.js";
import { ReadDeadlineExceededError, WriteDeadlineExceededError } from "../../shared/bridge/errors.js";
import { RecordingLogger } from "../bridge/fakes.js";
import { FakeClock } from "./support/clock.js";

const put = (id: string): WriteRequest => ({ PutRequest: { Item: { pk: id } } });

/** A document client answering each BatchWriteItem with the next of `unprocessed` (then none), recording what was sent. */
function scriptedWrites(unprocessed: WriteRequest[][]) {
  const sent: WriteRequest[][] = [];
  const send = async (command: unknown) => {
    const items = (command as BatchWriteCommand).input.RequestItems?.["t"] ?? [];
    sent.push(items);
    return { UnprocessedItems: { t: unprocessed.shift() ?? [] }, $metadata: {} };
  };
  return { doc: { send } as unknown as DynamoDBDocumentClient, sent };
}

describe("DynamoBatchCalls.write", () => {
  it("sends a write's first call whatever the time, past its deadline too, unless it is a later batch", async () => {
    const clock = new FakeClock();
    const { doc, sent } = scriptedWrites([]);
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock });
    await calls.write([put("a")], { deadline: clock.now() - 1 });
    expect(sent).toEqual([[put("a")]]);
    await expect(calls.write([put("b"), put("c")], { deadline: clock.now() - 1, later: true })).rejects.toMatchObject({
      name: "WriteDeadlineExceededError",
      message: "BatchWriteItem on t not sent again: its deadline passed with 2 entries not written",
    });
    expect(sent).toHaveLength(1);
  });

  it("waits a first backoff step before re-sending what a round that made progress left unprocessed, not half of one", async () => {
    const clock = new FakeClock();
    const { doc, sent } = scriptedWrites([[put("b")]]);
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock, backoff: { baseDelayMs: 100, random: () => 0.5 } });
    await calls.write([put("a"), put("b")]);
    expect(sent).toEqual([[put("a"), put("b")], [put("b")]]);
    // backoffDelay(1): half the 100 ms base plus half of that again with random() at 0.5.
    expect(clock.sleeps).toEqual([75]);
  });

  it("gives up after as many rounds in a row without progress as attempts allowed, saying how many are left", async () => {
    const { doc, sent } = scriptedWrites([[put("a")], [put("a")], [put("a")]]);
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock: new FakeClock(), backoff: { maxAttempts: 2, random: () => 0.5 } });
    await expect(calls.write([put("a")])).rejects.toMatchObject({ message: "BatchWriteItem left 1 items unprocessed after 2 attempts in a row" });
    expect(sent).toHaveLength(2);
  });

  it("gives up saying how many items are still left, not how many the call was given", async () => {
    // The first round gets one of three through; the two left then stall.
    const { doc, sent } = scriptedWrites([[put("b"), put("c")], [put("b"), put("c")], [put("b"), put("c")]]);
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock: new FakeClock(), backoff: { maxAttempts: 2, random: () => 0.5 } });
    await expect(calls.write([put("a"), put("b"), put("c")])).rejects.toMatchObject({
      name: "DynamoBatchIncompleteError",
      message: "BatchWriteItem left 2 items unprocessed after 2 attempts in a row",
      remaining: 2,
    });
    expect(sent).toHaveLength(3);
  });

  it("waits the backoff's first step after the first round without progress, and the next step after the second", async () => {
    const clock = new FakeClock();
    const { doc } = scriptedWrites([[put("a")], [put("a")]]);
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock, backoff: { baseDelayMs: 100, random: () => 0.5 } });
    await calls.write([put("a")]);
    // backoffDelay(1) then backoffDelay(2) with random() at 0.5: three quarters of 100 ms, then of 200 ms.
    expect(clock.sleeps).toEqual([75, 150]);
  });

  it("stops a throttled retry past the deadline counting the items still unwritten, and warns of it", async () => {
    const clock = new FakeClock();
    const sent: WriteRequest[][] = [];
    const send = async (command: unknown) => {
      sent.push((command as BatchWriteCommand).input.RequestItems?.["t"] ?? []);
      // The first round gets `a` through; the call re-sending `b` is throttled as a whole.
      if (sent.length === 1) return { UnprocessedItems: { t: [put("b")] }, $metadata: {} };
      throw Object.assign(new Error("throughput exceeded"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: { httpStatusCode: 400 } });
    };
    const logger = new RecordingLogger();
    const calls = new DynamoBatchCalls({ doc: { send } as unknown as DynamoDBDocumentClient, tableName: "t", clock, logger, backoff: { baseDelayMs: 100, random: () => 0.5 } });
    // The round's backoff (75 ms) ends before the deadline, the throttled call's (75 ms more) after it.
    const deadline = clock.now() + 100;
    const error = await calls.write([put("a"), put("b")], { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteDeadlineExceededError);
    expect(error).toMatchObject({ deadline, message: "BatchWriteItem on t not sent again: its deadline passed with 1 entries not written", cause: { name: "ProvisionedThroughputExceededException" } });
    expect(sent).toEqual([[put("a"), put("b")], [put("b")]]);
    expect(logger.lines.at(-1)).toEqual({ level: "warn", message: "DynamoDB batch call not sent again: past the call's deadline", attributes: { operation: "BatchWriteItem", remaining: 1 } });
  });

  it("names a retried call's network failure by its system code, which Node and the SDK's HTTP handler name a plain Error", async () => {
    // A refused connection the SDK tried once (its retry quota empty): the adapter makes one more call, and says why.
    let calls = 0;
    const send = async () => {
      calls += 1;
      if (calls === 1) throw Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED", $metadata: { attempts: 1 } });
      return { UnprocessedItems: {}, $metadata: {} };
    };
    const logger = new RecordingLogger();
    await new DynamoBatchCalls({ doc: { send } as unknown as DynamoDBDocumentClient, tableName: "t", clock: new FakeClock(), logger }).write([put("a")]);
    expect(calls).toBe(2);
    expect(logger.lines).toEqual([
      { level: "warn", message: "DynamoDB batch call throttled or failed, retrying", attributes: { operation: "BatchWriteItem", attempt: 1, error: "ECONNREFUSED" } },
    ]);
  });
});

/** A document client answering each BatchGetItem with every key unprocessed, recording the keys sent. */
function unansweredGets() {
  const sent: unknown[][] = [];
  const send = async (command: unknown) => {
    const keys = (command as BatchGetCommand).input.RequestItems?.["t"]?.Keys ?? [];
    sent.push(keys);
    return { Responses: { t: [] }, UnprocessedKeys: { t: { Keys: keys } }, $metadata: {} };
  };
  return { doc: { send } as unknown as DynamoDBDocumentClient, sent };
}

describe("DynamoBatchCalls.get", () => {
  it("refuses a later read past its deadline as a read, saying how many keys it did not read", async () => {
    const clock = new FakeClock();
    const { doc, sent } = unansweredGets();
    const calls = new DynamoBatchCalls({ doc, tableName: "t", clock });
    const error = await calls.get([{ pk: "a" }, { pk: "b" }], { deadline: clock.now() - 1, later: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReadDeadlineExceededError);
    expect(error).toMatchObject({ message: "BatchGetItem on t not sent again: its deadline passed with 2 entries not read" });
    expect(sent).toEqual([]);
  });
});
