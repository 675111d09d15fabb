/**
 * End-to-end, in-process: `bridge conform-pii` against the sandbox after runs under BRIDGE_PII_MODE=full, then a
 * switch to redact: no cardholder name or email may stay anywhere in the state directory.
 */
import { existsSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { SnapshotScanOptions } from "../../shared/bridge/ports.js";
import { formatConformSummary } from "../../shared/cli/conform-pii.js";
import { EXIT } from "../../shared/cli/errors.js";
import { FileQuarantine, FileSnapshotStore } from "../../shared/local/index.js";
import { FakeClock } from "../bridge/fakes.js";
import { harnessPerTest, readEvents, runInProcess, type Harness } from "./helpers.js";

const startHarness = harnessPerTest();

/** Every file under `dir`, as text. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return Promise.all(files.map((file) => readFile(file, "utf8")));
}

/** The cardholder names and emails of the sandbox company that occur anywhere in the state directory. */
async function cleartextInState(h: Harness): Promise<string[]> {
  const data = h.sandbox.control.company(h.companyId);
  if (data === undefined) throw new Error("no company");
  const values = new Set<string>();
  for (const t of data.transactions.all()) {
    for (const value of [t.card_holder_name, t.card_holder_email]) if (typeof value === "string" && value !== "") values.add(value);
  }
  for (const card of data.cards) values.add(card.holder.email).add(`${card.holder.firstName} ${card.holder.lastName}`);
  const text = (await filesUnder(h.env.BRIDGE_STATE_DIR!)).join("\n");
  return [...values].filter((value) => text.includes(value));
}

/** A harness whose state directory was written by a run under `full`, and settings switched to `redact` since. */
async function switchedToRedact(transactions?: number): Promise<{ h: Harness; env: Record<string, string> }> {
  const h = await startHarness(transactions === undefined ? {} : { transactions });
  expect((await runInProcess(["run", "--once"], { ...h.env, BRIDGE_PII_MODE: "full" }, undefined, h.dir)).code).toBe(EXIT.ok);
  return { h, env: { ...h.env, BRIDGE_PII_MODE: "redact" } };
}

/** `env` without the provider's settings and the token seed: what conform-pii needs of it. */
function stateSettings(env: Record<string, string>): Record<string, string> {
  const { QASHIO_BASE_URL: _url, QASHIO_CLIENT_ID: _id, QASHIO_CLIENT_SECRET: _secret, QASHIO_REFRESH_TOKEN: _seed, ...rest } = env;
  return rest;
}

/**
 * A pass under `env` stopped at its time budget: each page read takes a minute of a 150 s budget, so it reads three
 * pages of 100 of the 400-odd snapshots of 200 transactions. The jumps outrun the 30 s cycle lease, which is then not
 * marked released: an hour in the past, it has lapsed for the real clock of the next run.
 */
async function stoppedAtBudget(h: Harness, env: Record<string, string>): Promise<{ error: Error & { exitCode: number; cursor?: string }; stdout: string }> {
  const clock = new FakeClock(Date.now() - 3_600_000);
  const scan = FileSnapshotStore.prototype.scan;
  const slowed = vi.spyOn(FileSnapshotStore.prototype, "scan").mockImplementation(function (this: FileSnapshotStore, options: SnapshotScanOptions) {
    clock.advance(60_000);
    return scan.call(this, options);
  });
  const { conformPiiCommand } = await import("../../shared/cli/conform-pii.js");
  let stdout = "";
  const io = {
    env: { ...env, BRIDGE_CYCLE_BUDGET: "150s" },
    cwd: h.dir,
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: () => true },
    signal: new AbortController().signal,
  };
  try {
    const error = (await conformPiiCommand({}, io, { clock }).catch((e: unknown) => e)) as Error & { exitCode: number; cursor?: string };
    return { error, stdout };
  } finally {
    slowed.mockRestore();
  }
}

/** The state directory's files by path, as bytes. */
async function copyOfState(h: Harness): Promise<Map<string, Buffer>> {
  const dir = h.env.BRIDGE_STATE_DIR!;
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return new Map(await Promise.all(files.map(async (file) => [file, await readFile(file)] as const)));
}

/** Puts the state directory back as `copy` holds it (files written since are removed), as a restore of a backup does. */
async function restoreState(h: Harness, copy: Map<string, Buffer>): Promise<void> {
  for (const file of (await copyOfState(h)).keys()) if (!copy.has(file)) await rm(file);
  for (const [file, bytes] of copy) await writeFile(file, bytes);
}

/** `conform-pii --cursor` refused with exit 2 and a message holding each of `reasons`; a run without it then masks everything. */
async function refusedThenStartedOver(h: Harness, env: Record<string, string>, cursor: string | undefined, reasons: readonly string[]): Promise<void> {
  const refused = await runInProcess(["conform-pii", "--cursor", cursor ?? ""], env, undefined, h.dir);
  expect(refused).toMatchObject({ code: EXIT.usage, stdout: "" });
  for (const reason of reasons) expect(refused.stderr).toContain(reason);
  expect((await runInProcess(["conform-pii"], env, undefined, h.dir)).code).toBe(EXIT.ok);
  expect(await cleartextInState(h)).toEqual([]);
}

describe("bridge conform-pii (in-process)", () => {
  it("leaves no cardholder name or email in the state directory after a switch from full to redact, and cycles stay quiet", async () => {
    const { h, env } = await switchedToRedact();
    // A cycle alone does not get there: the acknowledged transactions are never listed again.
    expect((await runInProcess(["run", "--once"], env, undefined, h.dir)).code).toBe(EXIT.ok);
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);
    const events = (await readEvents(h.eventsFile)).length;

    const { code, stdout } = await runInProcess(["conform-pii"], env, undefined, h.dir);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/^conform-pii: \d+ stored entries read \(snapshots, their qashio_id aliases and the bridge's own cursors\), [1-9]\d* rewritten to PII mode redact\n$/);
    expect(await cleartextInState(h)).toEqual([]);

    expect((await runInProcess(["run", "--once"], env, undefined, h.dir)).code).toBe(EXIT.ok);
    expect(await readEvents(h.eventsFile)).toHaveLength(events);
    const again = await runInProcess(["conform-pii"], env, undefined, h.dir);
    expect(again).toMatchObject({ code: EXIT.ok, stdout: expect.stringMatching(/, 0 rewritten to PII mode redact/) });
  });

  it("stops at its time budget with exit 4 and a cursor, and a run with --cursor finishes the pass", async () => {
    const { h, env } = await switchedToRedact(200);
    const { error, stdout } = await stoppedAtBudget(h, env);
    expect(error).toMatchObject({ name: "ConformIncompleteError", exitCode: EXIT.incomplete, cursor: expect.any(String) });
    expect(error.message).toContain(`go on with \`npm run bridge -- conform-pii --cursor '${error.cursor}'\` under the same BRIDGE_PII_MODE`);
    // Scans at 60, 120 and 180 s of a 150 s budget: the third page's answer comes past the budget plus a cycle's grace
    // (165 s), so it is not written (a process stopped past its lease must not write what it read): 200 read, not 300.
    expect(stdout).toMatch(/^conform-pii: stopped at the time budget: 200 stored entries read \(snapshots, their qashio_id aliases and the bridge's own cursors\), [1-9]\d* rewritten to PII mode redact so far\n$/);
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);

    const rest = await runInProcess(["conform-pii", "--cursor", error.cursor ?? ""], env, undefined, h.dir);
    expect(rest.code).toBe(EXIT.ok);
    expect(await cleartextInState(h)).toEqual([]);
  });

  it("stops after the page in hand on Ctrl-C with exit 4 and a cursor, and a run with --cursor finishes the pass", async () => {
    const { h, env } = await switchedToRedact(200);
    const controller = new AbortController();
    const scan = FileSnapshotStore.prototype.scan;
    // The person presses Ctrl-C while the first page is read.
    const pressed = vi.spyOn(FileSnapshotStore.prototype, "scan").mockImplementation(function (this: FileSnapshotStore, options: SnapshotScanOptions) {
      controller.abort();
      return scan.call(this, options);
    });
    const { conformPiiCommand } = await import("../../shared/cli/conform-pii.js");
    let stdout = "";
    const io = { env, cwd: h.dir, stdout: { write: (chunk: string) => (stdout += chunk) }, stderr: { write: () => true }, signal: controller.signal };
    let error: Error & { exitCode?: number; cursor?: string };
    try {
      error = (await conformPiiCommand({}, io).catch((e: unknown) => e)) as Error & { exitCode: number; cursor?: string };
    } finally {
      pressed.mockRestore();
    }
    expect(error).toMatchObject({ name: "ConformIncompleteError", exitCode: EXIT.incomplete, cursor: expect.any(String) });
    expect(error.message).toBe(
      `conform-pii stopped after the page in hand, as asked (Ctrl-C, SIGTERM or SIGHUP); go on with \`npm run bridge -- conform-pii --cursor '${error.cursor}'\` under the same BRIDGE_PII_MODE (or run it without --cursor to start over)`,
    );
    // The page in hand is written, and no other.
    expect(stdout).toMatch(/^conform-pii: stopped as asked: 100 stored entries read \(snapshots, their qashio_id aliases and the bridge's own cursors\), [1-9]\d* rewritten to PII mode redact so far\n$/);
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);

    const rest = await runInProcess(["conform-pii", "--cursor", error.cursor ?? ""], env, undefined, h.dir);
    expect(rest.code, rest.stderr).toBe(EXIT.ok);
    expect(await cleartextInState(h)).toEqual([]);
  });

  it("refuses with exit 2, and rewrites nothing, a cursor given under another BRIDGE_PII_MODE than it was made under", async () => {
    const { h, env } = await switchedToRedact(200);
    const { error } = await stoppedAtBudget(h, { ...env, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "salt-of-the-tenant-0123" });
    expect(error).toMatchObject({ name: "ConformIncompleteError", cursor: expect.any(String) });
    // Locks aside (the run takes the cycle lock), nothing changes.
    const data = async () => [...(await copyOfState(h))].filter(([file]) => !file.includes("/locks/")).map(([file, bytes]) => [file, bytes.toString("base64")]);
    const state = await data();

    const refused = await runInProcess(["conform-pii", "--cursor", error.cursor ?? ""], env, undefined, h.dir);
    expect(refused).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(refused.stderr).toContain(
      "--cursor refused: it was made under PII mode hash, and the mode is now redact: the snapshots before it were brought to hash, not to redact: " +
        "run `npm run bridge -- conform-pii` without --cursor to start over",
    );
    expect(await data()).toEqual(state);
    expect((await runInProcess(["conform-pii"], env, undefined, h.dir)).code).toBe(EXIT.ok);
    expect(await cleartextInState(h)).toEqual([]);
  });

  it("refuses with exit 2 a cursor once the state directory was restored from a backup taken before the pass stopped", async () => {
    const { h, env } = await switchedToRedact(200);
    // The store handed out a cursor before the backup, so its id is in it: that id alone no longer tells the two apart.
    await new FileSnapshotStore(h.env.BRIDGE_STATE_DIR!).scan({ limit: 1 });
    const backup = await copyOfState(h);
    const { error } = await stoppedAtBudget(h, env);
    // Restored, the snapshots the cursor counts as done are in cleartext again: going on from it would skip them.
    await restoreState(h, backup);
    await refusedThenStartedOver(h, env, error.cursor, [
      "--cursor refused: the snapshot store does not hold the pass it names: it was restored from a backup older than the cursor",
      "without --cursor to start over",
    ]);
  });

  it("refuses with exit 2 the cursor of a pass a run under another BRIDGE_PII_MODE superseded since (a switch away and back)", async () => {
    const { h, env } = await switchedToRedact(200);
    const { error } = await stoppedAtBudget(h, env);
    expect(error).toMatchObject({ name: "ConformIncompleteError", cursor: expect.any(String) });
    // Harmless here (the file store walks in write order, so the cursor skips nothing written since), refused as on AWS.
    expect((await runInProcess(["run", "--once"], { ...env, BRIDGE_PII_MODE: "full" }, undefined, h.dir)).code).toBe(EXIT.ok);
    await refusedThenStartedOver(h, env, error.cursor, [
      "--cursor refused: the snapshot store does not hold the pass it names",
      "a cycle ran under another PII mode since (a switch away and back)",
    ]);
  });

  it("refuses with exit 2, naming it, a quarantine record file copied by hand under another name, rather than report its cleartext rewritten and leave it", async () => {
    const { h, env } = await switchedToRedact();
    const dir = join(h.env.BRIDGE_STATE_DIR!, "quarantine");
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    const record = { id: "00000000-0000-4000-8000-00000000c0b1", kind: "transaction" as const, reason: "validation: memo: too long", raw: { card_holder_name: "Ann Leftbehind" }, at: "2026-01-01T00:00:00.000Z" };
    await quarantine.put(record);
    const copy = join(dir, "noted-before-delete.json");
    await writeFile(copy, JSON.stringify(record));

    const { code, stderr } = await runInProcess(["conform-pii"], env, undefined, h.dir);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain(`Quarantine record's id is not its file's name (${copy}); restore it or move it aside`);
  });

  it("counts the quarantine records a pass rewrote before it stopped at its time budget, as a finished one does", async () => {
    const report = { mode: "redact", outcome: "deadline", scanned: 400, rewritten: 0, quarantineRewritten: 100, cursor: "conform1~x.y", durationMs: 1 } as const;
    expect(formatConformSummary(report)).toBe(
      "conform-pii: stopped at the time budget: 400 stored entries read (snapshots, their qashio_id aliases and the bridge's own cursors), 0 rewritten to PII mode redact, and 100 quarantine records so far",
    );
  });

  it("re-masks a state directory whose token is gone without QASHIO_REFRESH_TOKEN or provider settings: it never calls the provider", async () => {
    const { h, env } = await switchedToRedact();
    // A revoked family, a restored copy, an offboarded tenant: the cleartext must still go.
    await rm(join(h.env.BRIDGE_STATE_DIR!, "tokens.json"));
    const { code, stdout, stderr } = await runInProcess(["conform-pii"], stateSettings(env), undefined, h.dir);
    expect(stderr).not.toContain("QASHIO_");
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/, [1-9]\d* rewritten to PII mode redact\n$/);
    expect(await cleartextInState(h)).toEqual([]);
    expect(h.sandbox.control.company(h.companyId)).toBeDefined();
  });

  it("still refuses with exit 2, rewriting nothing, the state directory of another tenant, one whose binding is gone or none at all, without provider settings", async () => {
    const { h, env } = await switchedToRedact();
    const offline = stateSettings(env);
    const other = await runInProcess(["conform-pii"], { ...offline, BRIDGE_TENANT: "globex" }, undefined, h.dir);
    expect(other).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(other.stderr).toContain("holds the tokens or snapshots of another BRIDGE_TENANT than these settings name (BRIDGE_TENANT acme there, globex here");
    // Whose snapshots they are cannot be told: no restore command either, since these settings name no provider.
    await rm(join(h.env.BRIDGE_STATE_DIR!, "binding.json"));
    const unbound = await runInProcess(["conform-pii"], offline, undefined, h.dir);
    expect(unbound).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(unbound.stderr).toContain("state directory holds tokens or snapshots but no binding file");
    expect(unbound.stderr).not.toContain("printf");
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);
    // Nor is a mistyped path made afresh and reported masked.
    const missing = join(h.dir, "no-such-state");
    const typo = await runInProcess(["conform-pii"], { ...offline, BRIDGE_STATE_DIR: missing }, undefined, h.dir);
    expect(typo).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(typo.stderr).toContain(`BRIDGE_STATE_DIR: ${missing} does not exist, so it holds nothing to re-mask`);
    expect(existsSync(missing)).toBe(false);
  });

  it("refusing a directory whose token and binding are both gone, names a command that prints the restore there", async () => {
    const { h, env } = await switchedToRedact();
    await rm(join(h.env.BRIDGE_STATE_DIR!, "tokens.json"));
    await rm(join(h.env.BRIDGE_STATE_DIR!, "binding.json"));
    const { QASHIO_REFRESH_TOKEN: _spent, ...tenantSettings } = env;
    const unbound = await runInProcess(["conform-pii"], stateSettings(env), undefined, h.dir);
    expect(unbound).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(unbound.stderr).toContain("restore the file (`run` prints how with the tenant's settings, or `authorize` while the directory holds no token)");
    // `run` stops at the missing token first, so only `authorize` (which checks the binding before it signs in) tells.
    const run = await runInProcess(["run", "--once"], tenantSettings, undefined, h.dir);
    expect(run).toMatchObject({ code: EXIT.usage });
    expect(run.stderr).not.toContain("printf");
    const authorize = await runInProcess(["authorize", "--no-open"], tenantSettings, undefined, h.dir);
    expect(authorize).toMatchObject({ code: EXIT.usage });
    // With the id of the snapshot store the directory still holds, as the binding recorded it.
    const storeId = (await readFile(join(h.env.BRIDGE_STATE_DIR!, "snapshots", "store-id"), "utf8")).trim();
    expect(authorize.stderr).toContain(`printf '%s\\n' '{"baseUrl":"${h.url}","clientId":"${env.QASHIO_CLIENT_ID}","tenant":"acme","snapshotStoreId":"${storeId}"}'`);
    expect(existsSync(join(h.env.BRIDGE_STATE_DIR!, "binding.json"))).toBe(false);
  });

  it("refuses with exit 2, writing nothing there, a directory that exists but is no state directory (the project directory for `.state`)", async () => {
    const { h, env } = await switchedToRedact();
    const before = (await readdir(h.dir)).sort();
    // Neither binding nor state: created by nothing the bridge did, so a pass would report it masked and leave the state
    // directory itself as it was.
    const typo = await runInProcess(["conform-pii"], { ...stateSettings(env), BRIDGE_STATE_DIR: h.dir }, undefined, h.dir);
    expect(typo).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(typo.stderr).toContain(`BRIDGE_STATE_DIR: ${h.dir} holds no state of the bridge (no binding.json), so nothing to re-mask`);
    expect((await readdir(h.dir)).sort()).toEqual(before);
  });

  it("says there is nothing to do under full, exit 0", async () => {
    const { h } = await switchedToRedact();
    const { code, stdout } = await runInProcess(["conform-pii"], { ...h.env, BRIDGE_PII_MODE: "full" }, undefined, h.dir);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toBe("conform-pii: PII mode is full; snapshots keep personal fields as sent, nothing to re-mask\n");
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);
  });

  it("rejects a damaged cursor, one of an earlier version or other text, and bad arguments, with exit 2", async () => {
    const { h, env } = await switchedToRedact(200);
    const { error } = await stoppedAtBudget(h, env);
    const cut = await runInProcess(["conform-pii", "--cursor", (error.cursor ?? "").slice(0, -3)], env, undefined, h.dir);
    expect(cut).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(cut.stderr).toContain(
      "--cursor refused: it is damaged (cut short or edited since it was printed): run `npm run bridge -- conform-pii` without --cursor to start over",
    );
    // An earlier version's cursor (a store's own), and text that is no cursor: neither records a PII mode.
    for (const cursor of ["0123456789abcdef.000000000001-abcdef01:3", "eyJwayI6IlNOQVAifQ"]) {
      const old = await runInProcess(["conform-pii", "--cursor", cursor], env, undefined, h.dir);
      expect(old).toMatchObject({ code: EXIT.usage, stdout: "" });
      expect(old.stderr).toContain("--cursor refused: it is not of the form this version prints (cursors of earlier versions record no PII mode, so none is taken)");
    }
    expect((await cleartextInState(h)).length).toBeGreaterThan(0);
    expect((await runInProcess(["conform-pii", "--cursor"], {})).code).toBe(EXIT.usage);
    expect((await runInProcess(["conform-pii", "--force"], {})).code).toBe(EXIT.usage);
  });
});
