/**
 * The functions harness's own clocks: `waitingClock` moves sandbox time on by a wait as a real clock would beside the
 * harness's calls, so a test's path does not turn on how fast DynamoDB Local or the other services answer.
 */
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

describe("the harness's waitingClock", () => {
  it.each([1, 100])("ends a wait beside a DynamoDB call in flight after that call, so time moves the same whatever it takes (%i ms)", async (callMs) => {
    const { dynamo } = h.clients((client) => client.middlewareStack.add((next) => async (args) => (await sleep(callMs), next(args)), { step: "initialize", name: "slowCall" }))();
    const start = h.clock.now();
    // A lease keep-alive beside the token save: it renews each time its wait of 10 s ends, until the save lands.
    let landed = false;
    const call = dynamo.send(new DescribeTableCommand({ TableName: h.table.tableName })).then(() => (landed = true));
    let renewals = 0;
    while (!landed) {
      await h.waitingClock.sleep(10_000);
      if (!landed) renewals += 1;
    }
    await call;
    expect(renewals).toBe(0);
    expect(h.clock.now() - start).toBe(10_000);
  });

  it("moves time to the end of the longest of waits that overlap, not their sum, and none for an aborted one", async () => {
    const start = h.clock.now();
    await Promise.all([h.waitingClock.sleep(10_000), h.waitingClock.sleep(4_000)]);
    expect(h.clock.now() - start).toBe(10_000);
    await h.waitingClock.sleep(10_000, AbortSignal.abort());
    expect(h.clock.now() - start).toBe(10_000);
  });
});
