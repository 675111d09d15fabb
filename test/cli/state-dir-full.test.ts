/**
 * Local mode when the whole state directory takes no writes (a full disk, a read-only mount), not only the token
 * file: the cycle lease's own files fail too. The run must still say what is wrong and what to do (the token probe's
 * message, or the lease's), and a `run --interval` loop must retry at the next interval rather than end as an
 * "unexpected" error. Faults are injected into node:fs for the files of the state directory named below.
 */
import type * as nodeFs from "node:fs";
import { cp, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { contentHash } from "../../shared/bridge/hash.js";
import { ConfigError, EXIT } from "../../shared/cli/errors.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import { dueForRefresh, harnessPerTest, idsWithStatus, loopWithSteps, runInProcess } from "./helpers.js";

/**
 * `tokens`: the token store's probe and saves fail. `leaseTake`: creating a cycle lease fails. `leaseWrite`: renewing
 * or releasing a cycle lease this process holds fails. `segments`: writing a snapshot segment fails. `tokenSaveOnce`:
 * the next save of the token file fails (its probe passed: the disk filled up between the two). Each as a full disk
 * fails them (ENOSPC at the open). `eventsReadOnly`: the events file opens as on a read-only mount (EROFS).
 */
const faults = vi.hoisted(() => ({ tokens: false, leaseTake: false, leaseWrite: false, segments: false, tokenSaveOnce: false, eventsReadOnly: false }));

vi.mock("node:fs", async (importOriginal) => {
  const { withOpenFaults } = await import("./support/open-faults.js");
  return withOpenFaults(await importOriginal<typeof nodeFs>(), (name) => {
    const token = name.startsWith("probe.") || name.startsWith("tokens.json.");
    // createFileOnce writes the new lease as `<lease>.<pid>.<hex>.new.tmp` (itself through a temp file); a renewal or
    // release replaces the lease through `<lease>.<pid>.<hex>.tmp`.
    const lease = name.startsWith("cycle.lock");
    const take = lease && name.includes(".new.tmp");
    const segment = name.startsWith("seg-") && name.endsWith(".tmp");
    if (faults.tokenSaveOnce && name.startsWith("tokens.json.")) {
      faults.tokenSaveOnce = false;
      return "ENOSPC";
    }
    if ((faults.tokens && token) || (faults.leaseTake && take) || (faults.leaseWrite && lease && !take) || (faults.segments && segment)) return "ENOSPC";
    if (faults.eventsReadOnly && name === "events.jsonl") return "EROFS";
    return undefined;
  });
});

const startHarness = harnessPerTest();
beforeEach(() => {
  faults.tokens = false;
  faults.leaseTake = false;
  faults.leaseWrite = false;
  faults.segments = false;
  faults.tokenSaveOnce = false;
  faults.eventsReadOnly = false;
});

describe("bridge run when the state directory takes no writes at all", () => {
  it("keeps the token probe's message when releasing the cycle lease fails too (exit 1, refresh token unspent)", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.tokens = true;
    faults.leaseWrite = true;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`cannot save a new token set to ${tokensFile} now (ENOSPC), so no token refresh was tried`);
    expect(failed.stderr).not.toContain("unexpected");
    expect(await stored()).toBe(before);
    // The lease stayed written as held (its release failed): a later process takes it over once this one has exited.
    // With the system's code, which the logger must not take for a secret (an OAuth `code`) and hide.
    const release = failed.stderr.split("\n").find((line) => line.includes("releasing the cycle lease failed"));
    expect(release).toContain("=ENOSPC");
  });

  it("names the state directory and the system's code when the cycle lease cannot be taken (exit 1, nothing sent)", async () => {
    const h = await startHarness();
    await dueForRefresh(h);
    faults.leaseTake = true;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).not.toContain("unexpected");
    expect(failed.stderr).toContain(
      `cannot take the cycle lease in ${join(h.env.BRIDGE_STATE_DIR as string, "locks")} (ENOSPC): the state directory takes no writes now, so nothing was sent to the provider: `,
    );
    expect(failed.stderr).toContain(
      `make room in or fix ${h.env.BRIDGE_STATE_DIR as string} (BRIDGE_STATE_DIR); a \`run --interval\` loop tries again at its next cycle, any other command when started again`,
    );
  });

  it.each([["redrive"], ["conform-pii"]])("%s, which nothing runs again by itself, says to run it again when the cycle lease cannot be taken", async (command) => {
    const h = await startHarness();
    await dueForRefresh(h);
    faults.leaseTake = true;

    const failed = await runInProcess([command], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`cannot take the cycle lease in ${join(h.env.BRIDGE_STATE_DIR as string, "locks")} (ENOSPC)`);
    // Not "it is tried again at the next run": a `run` re-drives and re-masks nothing, and no loop runs these.
    expect(failed.stderr).not.toContain("tried again at the next run");
    expect(failed.stderr).toContain(
      `make room in or fix ${h.env.BRIDGE_STATE_DIR as string} (BRIDGE_STATE_DIR); a \`run --interval\` loop tries again at its next cycle, any other command when started again`,
    );
  });

  it("a run --interval loop retries at the next interval, and one that could not release its lease takes it again once it can", async () => {
    const h = await startHarness();
    await dueForRefresh(h);
    const pending = idsWithStatus(h, "not_synced", "outdated");
    faults.tokens = true;
    faults.leaseWrite = true;

    // Instead of waiting the interval: the disk fills up further (no lease can be taken), then has room again.
    const { outcome: code, ...out } = await loopWithSteps(h, [
      () => (faults.leaseTake = true),
      () => Object.assign(faults, { tokens: false, leaseTake: false, leaseWrite: false }),
    ]);

    expect(code, out.stderr).toBe(EXIT.ok);
    expect(out.stderr).toMatch(/cycle 1 failed; retrying at the next interval .*no token refresh was tried/);
    expect(out.stderr).toMatch(/cycle 2 failed; retrying at the next interval .*cannot take the cycle lease/);
    expect(out.stdout).toMatch(/cycle 3: \d+ events/);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    expect(pending.length).toBeGreaterThan(0);
  });

  it("says, when no cycle lease can be taken, that new tokens an earlier cycle could not save are held, not that nothing was sent", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    // The first cycle's refresh cannot save its tokens (held in memory); then the disk fills up further, then has room.
    faults.tokenSaveOnce = true;

    const { outcome: code, ...out } = await loopWithSteps(h, [() => (faults.leaseTake = true), () => (faults.leaseTake = false)]);

    expect(code, out.stderr).toBe(EXIT.ok);
    const failed = out.stderr.split("\n").find((text) => text.includes("cycle 2 failed")) ?? "";
    expect(failed).toContain("cannot take the cycle lease");
    expect(failed).not.toContain("nothing was sent to the provider");
    expect(failed).toContain(
      `(BRIDGE_STATE_DIR); a \`run --interval\` loop tries again at its next cycle, any other command when started again; meanwhile this process holds, unsaved, the new ` +
        `tokens an earlier token refresh received (the refresh token stored in ${tokensFile} is spent)`,
    );
    // The loop tries again by itself: no word to run again, which would start a second bridge it says not to start.
    expect(failed).not.toContain("run again");
    expect(failed).toContain("do not kill it (SIGKILL loses them)");
    // Saved at the next cycle, as it said.
    expect(out.stdout).toMatch(/cycle 3: \d+ events/);
    expect(await stored()).not.toBe(before);
  });
});

describe("bridge run --interval when its state directory is removed under it", () => {
  it("does not send the spent QASHIO_REFRESH_TOKEN (which revokes the family): exit 2 naming the state directory, whose tokens stay good", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    let kept = "";

    // After the first cycle someone removes the state directory; the access token then expires.
    const { outcome, ...out } = await loopWithSteps(h, [
      async () => {
        kept = await stored();
        await cp(h.env.BRIDGE_STATE_DIR as string, `${h.env.BRIDGE_STATE_DIR as string}-backup`, { recursive: true });
        await rm(h.env.BRIDGE_STATE_DIR as string, { recursive: true, force: true });
        await h.control("POST", "/clock", { advance_seconds: 3_600 });
      },
    ]);

    // Stopped before the cycle used the directory: no token refresh, no binding or lease made afresh there.
    expect(outcome, out.stderr).toBeInstanceOf(ConfigError);
    expect((outcome as ConfigError).exitCode).toBe(EXIT.usage);
    expect((outcome as ConfigError).message).toContain(`BRIDGE_STATE_DIR: ${h.env.BRIDGE_STATE_DIR as string} was moved or removed while the bridge ran`);
    expect(await stat(h.env.BRIDGE_STATE_DIR as string).catch(() => undefined)).toBeUndefined();
    // The family is alive: the directory, put back, still refreshes its tokens.
    await rename(`${h.env.BRIDGE_STATE_DIR as string}-backup`, h.env.BRIDGE_STATE_DIR as string);
    expect(await readFile(tokensFile, "utf8")).toBe(kept);
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect(await stored()).not.toBe(kept);
  });
});

describe("bridge run when a file system fills up or turns read-only during a cycle", () => {
  it("names the events file's file system and the system's code when the events cannot be written (exit 1), and the next run delivers", async () => {
    const h = await startHarness();
    faults.eventsReadOnly = true;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`the file system of ${h.eventsFile} (BRIDGE_EVENTS_FILE, EROFS) is read-only: mount it read-write, or set BRIDGE_EVENTS_FILE elsewhere; nothing is lost`);
    faults.eventsReadOnly = false;
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("names the state directory's file system when the snapshots cannot be written (exit 1), and the next run delivers", async () => {
    const h = await startHarness();
    faults.segments = true;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`the file system of ${h.env.BRIDGE_STATE_DIR} (BRIDGE_STATE_DIR, ENOSPC) is full: make room there; nothing is lost`);
    faults.segments = false;
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("names the state directory's file system when the conform-pii pass id a mode change supersedes cannot be written (exit 1)", async () => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    // The id a conform-pii pass under redact stored when it stopped: the first cycle under full writes a new one first.
    const object = { pass: "0123456789abcdef", mode: "redact" };
    const snapshots = new FileSnapshotStore(h.env.BRIDGE_STATE_DIR ?? "");
    await snapshots.putMany([{ key: "transaction:~conform-pass", hash: contentHash(object), object, updatedAt: "2026-03-01T11:00:00.000Z" }]);
    const full = { ...h.env, BRIDGE_PII_MODE: "full" };
    faults.segments = true;

    const failed = await runInProcess(["run", "--once"], full);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`the file system of ${h.env.BRIDGE_STATE_DIR} (BRIDGE_STATE_DIR, ENOSPC) is full: make room there; nothing is lost`);
    faults.segments = false;
    expect((await runInProcess(["run", "--once"], full)).code).toBe(EXIT.ok);
  });
});
