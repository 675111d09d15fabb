/**
 * The crash-injection harness itself (support/process-death.ts): once `untilDeath` returns, the process died as its
 * plan says, the dying call's effect (whole, or half) has landed, and nothing the dead process sent lands afterwards,
 * so the checks that follow see the state a killed Lambda leaves, not one a late write changes under them.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { type Mode, type MovableTime, Process, untilDeath } from "./support/process-death.js";

/** A call whose effect lands after some milliseconds, as a DynamoDB Local or provider call over HTTP does. */
function slowEffect(landed: string[], name: string, ms = 30): () => Promise<string> {
  return async () => {
    await sleep(ms);
    landed.push(name);
    return name;
  };
}

/** An invocation that makes `names` calls one after another through `life`. */
async function cycle(life: Process, landed: string[], names: readonly string[]): Promise<void> {
  for (const name of names) await life.call(name, slowEffect(landed, name), slowEffect(landed, `half ${name}`));
}

describe("a process killed by the crash-injection harness", () => {
  it.each([
    ["after", ["write", "ack"]],
    ["partial", ["half write"]],
  ] as const)("has the dying call's effect landed once untilDeath returns (%s)", async (mode: Mode, expected) => {
    const landed: string[] = [];
    const life = new Process({ at: 1, mode });
    await untilDeath(life, cycle(life, landed, ["publish", "write", "ack"]).then(() => undefined));
    expect(life.dead).toBe(true);
    expect(life.applied).toBe(true);
    expect(landed).toEqual(["publish", expected[0]]);
    // Nothing after the dying call was sent.
    await sleep(100);
    expect(landed).toEqual(["publish", expected[0]]);
  });

  it("has a call that was in flight when it died land before untilDeath returns, and none after", async () => {
    const landed: string[] = [];
    const life = new Process({ at: 1, mode: "before" });
    // Two calls at once (a batch write's chunks, a lease renewal beside a page): the second is the one it dies at.
    const invocation = Promise.all([life.call("chunk 1", slowEffect(landed, "chunk 1", 60)), life.call("chunk 2", slowEffect(landed, "chunk 2"))]);
    await untilDeath(life, invocation);
    expect(life.applied).toBe(false);
    const atDeath = [...landed];
    await sleep(150);
    expect(landed).toEqual(atDeath);
    expect(landed).toEqual(["chunk 1"]);
  });

  it("returns when a process that lives ends its invocation", async () => {
    const landed: string[] = [];
    const life = new Process();
    await untilDeath(life, cycle(life, landed, ["publish", "write"]));
    expect(life.dead).toBe(false);
    expect(landed).toEqual(["publish", "write"]);
  });

  it("fails within its limit, naming the calls made, when the invocation neither dies nor ends", async () => {
    // A hang (a wait that never ends) must fail as that, not run into the crash-injection test's 600 s timeout.
    const landed: string[] = [];
    const life = new Process({ at: 5, mode: "after" });
    const invocation = cycle(life, landed, ["publish", "write"]).then(() => new Promise<never>(() => undefined));
    await expect(untilDeath(life, invocation, 200)).rejects.toThrow(/neither died nor ended within 200 ms \(calls: publish, write\)/);
  }, 5_000);

  it("fails within its limit when a call the dead process sent never lands", async () => {
    const life = new Process({ at: 0, mode: "after" });
    const invocation = life.call("write", () => new Promise<never>(() => undefined));
    await expect(untilDeath(life, invocation, 200)).rejects.toThrow(/died at its call #0 \(write\), but a call it sent had not landed within 200 ms/);
  }, 5_000);
});

/** Sandbox time as the process clock moves it (the sandbox control's shape). */
function sandboxTime(startMs = 0): MovableTime {
  let ms = startMs;
  return { now: () => ms, advanceClock: (seconds) => void (ms += seconds * 1_000) };
}

describe("the clock of a process killed by the crash-injection harness", () => {
  it.each([1, 40])("ends a wait beside a call in flight after that call lands, so time moves the same whatever the call takes (%i ms)", async (callMs) => {
    const time = sandboxTime();
    const life = new Process();
    const clock = life.clock(time);
    const landed: string[] = [];
    // A lease keep-alive beside the token save: it renews each time its wait of 10 s ends, until the save lands.
    let renewals = 0;
    const save = life.call("save", slowEffect(landed, "save", callMs));
    let saved = false;
    void save.then(() => (saved = true));
    while (!saved) {
      await clock.sleep(10_000);
      if (!saved) renewals += 1;
    }
    expect(renewals).toBe(0);
    expect(time.now()).toBe(10_000);
  });

  it("waits for the methods of an object run through the process, and for those of the handles they answer with", async () => {
    const time = sandboxTime();
    const life = new Process();
    const clock = life.clock(time);
    const landed: string[] = [];
    const lease = { renew: slowEffect(landed, "renew"), ttlMs: () => 30_000 };
    const lock = life.through({ tryAcquire: async () => (await sleep(30), lease), name: () => "lock" });
    expect(lock.name()).toBe("lock");
    const handle = await lock.tryAcquire();
    expect(handle.ttlMs()).toBe(30_000);
    const renewal = handle.renew();
    await clock.sleep(10_000);
    expect(landed).toEqual(["renew"]);
    await renewal;
    expect(life.calls).toEqual(["tryAcquire", "renew"]);
    expect(time.now()).toBe(10_000);
  });

  it("moves time to the end of the longest of waits that overlap, not their sum", async () => {
    const time = sandboxTime();
    const clock = new Process().clock(time);
    await Promise.all([clock.sleep(10_000), clock.sleep(4_000), clock.sleep(10_000)]);
    expect(time.now()).toBe(10_000);
    await clock.sleep(5_000);
    expect(time.now()).toBe(15_000);
  });

  it("moves no time for a wait aborted before it ends", async () => {
    const time = sandboxTime();
    const life = new Process();
    const clock = life.clock(time);
    const done = new AbortController();
    const call = life.call("save", slowEffect([], "save"));
    const wait = clock.sleep(10_000, done.signal);
    await call;
    done.abort();
    await wait;
    expect(time.now()).toBe(0);
  });

  it("never ends a wait of a dead process, and moves no time for it", async () => {
    const time = sandboxTime();
    const life = new Process({ at: 0, mode: "after" });
    const clock = life.clock(time);
    const invocation = life.call("write", slowEffect([], "write"));
    await untilDeath(life, invocation);
    let ended = false;
    void clock.sleep(10_000).then(() => (ended = true));
    await sleep(50);
    expect(ended).toBe(false);
    expect(time.now()).toBe(0);
  });
});
