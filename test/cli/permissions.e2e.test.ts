import { spawn, spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { chmod, chown, lchown, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, TSX_LOADER } from "./helpers.js";

/** `nobody`: an ordinary user who cannot write into root's directories. Root can write anywhere, so only root can stage this. */
const NOBODY = 65_534;
/**
 * Whether this can be staged here: as root, in a checkout `nobody` may read (a clone under a private home directory
 * cannot be run as another user at all).
 */
const canStage =
  process.getuid?.() === 0 &&
  spawnSync(process.execPath, ["-e", `for (const f of process.argv.slice(1)) require("node:fs").accessSync(f, 4)`, join(ROOT, "bridge.ts"), new URL(TSX_LOADER).pathname], {
    uid: NOBODY,
    gid: NOBODY,
    stdio: "ignore",
  }).status === 0;

/** A run of `bridge.ts` as `nobody`: its standard error so far, and its exit code with all of it once it exits. */
interface RunAsNobody {
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; stderr: string }>;
}

/** Starts `bridge.ts <args>` as `nobody` in `cwd` (the staging directory unless given); settings come from `env` (and a `.env` in `cwd`) only. */
function startAsNobody(args: readonly string[], env: Record<string, string>, cwd = dir): RunAsNobody {
  const child = spawn(process.execPath, ["--import", TSX_LOADER, join(ROOT, "bridge.ts"), ...args], {
    cwd,
    env: { PATH: process.env["PATH"] ?? "", HOME: dir, ...env },
    uid: NOBODY,
    gid: NOBODY,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return { stderr: () => stderr, exited: new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr }))) };
}

/** Runs `bridge.ts <args>` as `nobody` to its end (see {@link startAsNobody}). */
function runAsNobody(args: readonly string[], env: Record<string, string>, cwd = dir): Promise<{ code: number | null; stderr: string }> {
  return startAsNobody(args, env, cwd).exited;
}

/** `run --once` as `nobody` with the given state directory and events file (paths inside the staging directory). */
function runOnceAsNobody(stateDir: readonly string[], eventsFile: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return runAsNobody(["run", "--once"], { ...settings, BRIDGE_STATE_DIR: join(dir, ...stateDir), BRIDGE_EVENTS_FILE: join(dir, ...eventsFile) });
}

let dir: string;
const settings = {
  QASHIO_BASE_URL: "http://127.0.0.1:9",
  QASHIO_CLIENT_ID: "sandbox-client",
  QASHIO_CLIENT_SECRET: "sandbox-secret-never-printed",
  QASHIO_REFRESH_TOKEN: "rt-never-printed",
  BRIDGE_TENANT: "acme",
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cli-perms-"));
  // Enterable by everyone, writable by root only, as a shared system directory would be.
  await chmod(dir, 0o755);
  await mkdir(join(dir, "root-state"), { mode: 0o755 });
  await writeFile(join(dir, "root-events.jsonl"), "", { mode: 0o644 });
  // Writable by anyone but readable by root only: the publisher reads the last byte before it appends.
  await writeFile(join(dir, "write-only-events.jsonl"), "", { mode: 0o622 });
  await chmod(join(dir, "write-only-events.jsonl"), 0o622);
  await mkdir(join(dir, "closed"), { mode: 0o700 });
  // Left by a run under sudo: a directory anyone may write into, holding root's private token file.
  await mkdir(join(dir, "shared-state"), { mode: 0o777 });
  await chmod(join(dir, "shared-state"), 0o777);
  await writeFile(join(dir, "shared-state", "tokens.json"), "{}", { mode: 0o600 });
  // Another ordinary user's directory that anyone may write into: that user, or any other, could swap its tokens.
  await mkdir(join(dir, "foreign-state"), { mode: 0o777 });
  await chmod(join(dir, "foreign-state"), 0o777);
  await chown(join(dir, "foreign-state"), 1001, 1001);
  await writeFile(join(dir, "foreign-events.jsonl"), "", { mode: 0o666 });
  await chmod(join(dir, "foreign-events.jsonl"), 0o666);
  // The user's own state directory, with a token file made read-only by hand: it is replaced by rename, never written.
  await mkdir(join(dir, "own-state"), { mode: 0o700 });
  await writeFile(join(dir, "own-state", "tokens.json"), '{"refreshToken":"rt-never-printed"}', { mode: 0o400 });
  await writeFile(join(dir, "own-state", "binding.json"), JSON.stringify({ baseUrl: settings.QASHIO_BASE_URL, clientId: settings.QASHIO_CLIENT_ID, tenant: settings.BRIDGE_TENANT }));
  for (const entry of ["", "tokens.json", "binding.json"]) await chown(join(dir, "own-state", entry), NOBODY, NOBODY);
  // The user's own state directory with a token file root restored readable by all (0644): the user cannot narrow it.
  await mkdir(join(dir, "exposed-state"), { mode: 0o700 });
  await writeFile(join(dir, "exposed-state", "tokens.json"), '{"refreshToken":"rt-never-printed"}', { mode: 0o644 });
  await chmod(join(dir, "exposed-state", "tokens.json"), 0o644);
  await writeFile(join(dir, "exposed-state", "binding.json"), JSON.stringify({ baseUrl: settings.QASHIO_BASE_URL, clientId: settings.QASHIO_CLIENT_ID, tenant: settings.BRIDGE_TENANT }));
  for (const entry of ["", "binding.json"]) await chown(join(dir, "exposed-state", entry), NOBODY, NOBODY);
  // The user's own empty state directory, for the events file cases below (QASHIO_REFRESH_TOKEN seeds it).
  await mkdir(join(dir, "events-state"), { mode: 0o700 });
  await chown(join(dir, "events-state"), NOBODY, NOBODY);
  // Another ordinary user's events file this user may write, reached by name and through a link of this user's.
  await writeFile(join(dir, "other-user-events.jsonl"), "", { mode: 0o666 });
  await chmod(join(dir, "other-user-events.jsonl"), 0o666);
  await chown(join(dir, "other-user-events.jsonl"), 1001, 1001);
  await symlink(join(dir, "other-user-events.jsonl"), join(dir, "other-user-link.jsonl"));
  await lchown(join(dir, "other-user-link.jsonl"), NOBODY, NOBODY);
  // This user's own directory it made read-only (0500), for a new events file, named or through a link; root's 0755
  // "root-state" stands for another user's.
  await mkdir(join(dir, "own-read-only-logs"), { mode: 0o500 });
  await chown(join(dir, "own-read-only-logs"), NOBODY, NOBODY);
  await mkdir(join(dir, "own-links"), { mode: 0o700 });
  await chown(join(dir, "own-links"), NOBODY, NOBODY);
  await symlink(join(dir, "own-read-only-logs", "events.jsonl"), join(dir, "own-links", "events.jsonl"));
  // This user's own events files: one its group may write, one its group may only read (a consumer's group).
  for (const [name, mode] of [["group-writable-events.jsonl", 0o620], ["group-readable-events.jsonl", 0o640]] as const) {
    await writeFile(join(dir, name), "", { mode });
    await chmod(join(dir, name), mode);
    await chown(join(dir, name), NOBODY, NOBODY);
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.runIf(canStage)("bridge run as a user who cannot write the configured paths", () => {
  it("names BRIDGE_STATE_DIR and BRIDGE_EVENTS_FILE as not writable, exit 2, before any provider call", async () => {
    const { code, stderr } = await runOnceAsNobody(["root-state"], ["root-events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(`BRIDGE_STATE_DIR: is not writable by this user (EACCES): ${join(dir, "root-state")}`);
    expect(stderr).toContain(
      `BRIDGE_EVENTS_FILE: is not readable and writable by this user (EACCES): ${join(dir, "root-events.jsonl")} (left by a run as another user, such as under sudo?): this user may not read and write ${join(dir, "root-events.jsonl")} ` +
        `(mode 0644, owned by uid 0); run as its owner, or give it to this user (\`sudo chown ${NOBODY} ${join(dir, "root-events.jsonl")}\`)`,
    );
    expect(stderr).not.toMatch(/unexpected|never-printed/);
  });

  it("names a file in the state directory this user cannot read and write (left by a run under sudo), exit 2", async () => {
    const { code, stderr } = await runOnceAsNobody(["shared-state"], ["shared-events", "events.jsonl"]);
    expect(code).toBe(2);
    const tokens = join(dir, "shared-state", "tokens.json");
    expect(stderr).toContain(
      `BRIDGE_STATE_DIR: cannot be read by this user (EACCES): ${tokens} (left by a run as another user, such as under sudo?): ` +
        `this user may not read ${tokens} (mode 0600, owned by uid 0); run as its owner, or give it to this user (\`sudo chown ${NOBODY} ${tokens}\`)`,
    );
    // And, apart, that anyone may write into it: any local user could plant tokens or snapshots there.
    expect(stderr).toContain(`BRIDGE_STATE_DIR: is writable by its group and others (mode 0777): ${join(dir, "shared-state")}; `);
    expect(stderr).toContain(`run \`chmod 700 ${join(dir, "shared-state")}\``);
    expect(stderr).not.toMatch(/unexpected|never-printed/);
  });

  it("refuses a state directory another user owns, though this user may write it, exit 2, before any provider call", async () => {
    const { code, stderr } = await runOnceAsNobody(["foreign-state"], ["foreign-events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(`BRIDGE_STATE_DIR: is owned by uid 1001, not by you (uid ${NOBODY}) and is writable by its group and others (mode 0777): ${join(dir, "foreign-state")}`);
    expect(stderr).not.toMatch(/unexpected|never-printed|ECONNREFUSED/);
  });

  it("names a directory in the state directory this user may not write (left by a run under sudo) with its mode, owner and fix, exit 2", async () => {
    // The user's own state directory, holding root's snapshots/ that others may only read and enter.
    const state = join(dir, "sudo-snapshots-state");
    const snapshots = join(state, "snapshots");
    await mkdir(snapshots, { recursive: true, mode: 0o755 });
    await chmod(state, 0o700);
    await chown(state, NOBODY, NOBODY);
    const { code, stderr } = await runOnceAsNobody(["sudo-snapshots-state"], ["sudo-snapshots-state", "events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `BRIDGE_STATE_DIR: is not readable and writable by this user (EACCES): ${snapshots} (left by a run as another user, such as under sudo?): ` +
        `this user may not read and write ${snapshots} (mode 0755, owned by uid 0); run as its owner, or give it to this user (\`sudo chown -R ${NOBODY} ${snapshots}\`)`,
    );
    expect(stderr).not.toMatch(/unexpected|never-printed|ECONNREFUSED/);
  });

  it("accepts a token file of its own made read-only: it is only ever replaced, by a rename", async () => {
    const { code, stderr } = await runOnceAsNobody(["own-state"], ["own-state", "events.jsonl"]);
    // Past the settings: the provider at 127.0.0.1:9 does not answer, so the cycle fails (exit 1), not exit 2. No
    // problem named for the setting (its warning about QASHIO_REFRESH_TOKEN left set names it as an example only).
    expect(stderr).not.toContain("BRIDGE_STATE_DIR:");
    expect(stderr).toContain("QASHIO_REFRESH_TOKEN is not read while");
    expect(code).toBe(1);
  });

  it("refuses a token file its group and others may read that this user cannot make private (root's), exit 2, before any provider call", async () => {
    const tokens = join(dir, "exposed-state", "tokens.json");
    const { code, stderr } = await runOnceAsNobody(["exposed-state"], ["exposed-state", "events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(`BRIDGE_STATE_DIR: ${tokens} is readable by its group or others (mode 0644), and this user cannot change that (EPERM: it is owned by uid 0)`);
    expect(stderr).toContain(`sudo chmod 600 ${tokens} && sudo chown ${NOBODY} ${tokens}`);
    expect(stderr).not.toMatch(/unexpected|never-printed|ECONNREFUSED/);
  });

  it("names an events file this user may write but not read (the publisher reads its last byte first)", async () => {
    const { code, stderr } = await runOnceAsNobody(["closed-not", "state"], ["write-only-events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `BRIDGE_EVENTS_FILE: is not readable and writable by this user (EACCES): ${join(dir, "write-only-events.jsonl")} (left by a run as another user, such as under sudo?): this user may not read and write ${join(dir, "write-only-events.jsonl")} ` +
        `(mode 0622, owned by uid 0); run as its owner, or give it to this user (\`sudo chown ${NOBODY} ${join(dir, "write-only-events.jsonl")}\`)`,
    );
  });

  it("refuses an events file another user owns that this user may write, by name and through a link, exit 2, before any provider call", async () => {
    for (const name of ["other-user-events.jsonl", "other-user-link.jsonl"]) {
      const events = join(dir, name);
      const { code, stderr } = await runOnceAsNobody(["events-state"], [name]);
      expect(code, name).toBe(2);
      expect(stderr, name).toContain(`BRIDGE_EVENTS_FILE: is owned by uid 1001, not by you (uid ${NOBODY}) and is writable by its group and others (mode 0666): ${events}; `);
      expect(stderr, name).toContain(`run \`sudo chown ${NOBODY} ${events} && chmod go-w ${events}\` (or use an events file of your own)`);
      expect(stderr, name).not.toContain("BRIDGE_STATE_DIR");
      expect(stderr, name).not.toMatch(/unexpected|never-printed|ECONNREFUSED/);
    }
  });

  it("refuses an events file of its own its group may write, naming chmod go-w, and accepts one its group may only read", async () => {
    const events = join(dir, "group-writable-events.jsonl");
    const refused = await runOnceAsNobody(["events-state"], ["group-writable-events.jsonl"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`BRIDGE_EVENTS_FILE: is writable by its group (mode 0620): ${events}; `);
    expect(refused.stderr).toContain(`run \`chmod go-w ${events}\``);
    expect(refused.stderr).not.toMatch(/unexpected|never-printed|ECONNREFUSED/);
    const accepted = await runOnceAsNobody(["events-state"], ["group-readable-events.jsonl"]);
    // Past the settings: the provider at 127.0.0.1:9 does not answer, so the cycle fails (exit 1), not exit 2.
    expect(accepted.stderr).not.toContain("BRIDGE_EVENTS_FILE");
    expect(accepted.code).toBe(1);
  });

  it("names the chmod for a new events file's directory of this user's own it may not write, named or through a link, and none for another user's, exit 2", async () => {
    const own = join(dir, "own-read-only-logs");
    const refusal = (shut: string, chmod: string): string =>
      `BRIDGE_EVENTS_FILE: cannot be created: this user may not write its directory ${shut} (EACCES); ${chmod}point BRIDGE_EVENTS_FILE into a directory this user may write`;
    for (const events of [["own-read-only-logs", "events.jsonl"], ["own-links", "events.jsonl"]]) {
      const { code, stderr } = await runOnceAsNobody(["events-state"], events);
      expect(code, events.join("/")).toBe(2);
      expect(stderr, events.join("/")).toContain(refusal(own, `run \`chmod u+rwx ${own}\`, or `));
    }
    const { code, stderr } = await runOnceAsNobody(["events-state"], ["root-state", "events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(refusal(join(dir, "root-state"), ""));
  });

  it("names a state directory that cannot be created, or lies where this user cannot look, exit 2", async () => {
    const { code, stderr } = await runOnceAsNobody(["new-state", "deeper"], ["closed", "events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(`BRIDGE_STATE_DIR: cannot be created: ${join(dir, "new-state")} cannot be made in ${dir} (EACCES)`);
    expect(stderr).toContain(`BRIDGE_EVENTS_FILE: cannot be checked by this user (EACCES): ${join(dir, "closed", "events.jsonl")}`);
    expect(stderr).not.toMatch(/unexpected|never-printed/);
  });

  it("names the directory this user may not enter, and the way in, when a setting's path cannot be checked, exit 2", async () => {
    // The user's own state directory, closed to itself (chmod 000); an events file under root's private directory.
    const own = join(dir, "own-closed-state");
    await mkdir(own);
    await chown(own, NOBODY, NOBODY);
    await chmod(own, 0o000);
    const { code, stderr } = await runOnceAsNobody(["own-closed-state"], ["closed", "events.jsonl"]);
    expect(code).toBe(2);
    expect(stderr).toContain(`BRIDGE_STATE_DIR: cannot be checked by this user (EACCES): ${own}: this user may not enter ${own} (mode 0000); run \`chmod u+rwx ${own}\``);
    expect(stderr).toContain(
      `BRIDGE_EVENTS_FILE: cannot be checked by this user (EACCES): ${join(dir, "closed", "events.jsonl")}: this user may not enter ${join(dir, "closed")} (mode 0700, owned by uid 0); use a path this user may enter, or run as its owner`,
    );
  });

  it("names a snapshot segment another user's run wrote while a loop ran as unreadable by this user, with its mode, owner and fix, not as corrupt, exit 2", async () => {
    // The user's own state directory with a seeded token: each cycle fails at the provider (127.0.0.1:9), and the loop goes on.
    const state = join(dir, "loop-state");
    await mkdir(state, { mode: 0o700 });
    await writeFile(join(state, "binding.json"), JSON.stringify({ baseUrl: settings.QASHIO_BASE_URL, clientId: settings.QASHIO_CLIENT_ID, tenant: settings.BRIDGE_TENANT }));
    for (const entry of ["", "binding.json"]) await chown(join(state, entry), NOBODY, NOBODY);
    const loop = startAsNobody(["run", "--interval", "1s"], { ...settings, BRIDGE_STATE_DIR: state, BRIDGE_EVENTS_FILE: join(state, "events.jsonl") });
    for (let waited = 0; !loop.stderr().includes("cycle 1 failed") && waited < 20_000; waited += 100) await sleep(100);
    expect(loop.stderr()).toContain("cycle 1 failed");
    // A run under sudo meanwhile: a segment of root's, private to it (0600). The next cycle reloads the snapshots.
    const segment = join(state, "snapshots", "seg-000000000001-0123abcd.log");
    await writeFile(segment, '{"v":1,"entries":[]}\n', { mode: 0o600 });
    const { code, stderr } = await loop.exited;
    expect(code).toBe(2);
    expect(stderr).toContain(
      `BRIDGE_STATE_DIR: cannot be read by this user (EACCES): ${segment}: this user may not read ${segment} (mode 0600, owned by uid 0); ` +
        `run as its owner, or give it to this user (\`sudo chown ${NOBODY} ${segment}\`)`,
    );
    expect(stderr).not.toMatch(/move it aside|unexpected|never-printed/);
  }, 30_000);

  it("names a .env this user may not read with its mode, owner and fix, exit 2", async () => {
    // The working directory of a bridge run as `nobody`, holding root's private settings file.
    const cwd = join(dir, "closed-env");
    await mkdir(cwd, { mode: 0o755 });
    const env = join(cwd, ".env");
    await writeFile(env, "BRIDGE_TENANT=acme\n", { mode: 0o600 });
    const { code, stderr } = await runAsNobody(["run", "--once"], settings, cwd);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `cannot read the settings file ${env} (EACCES): this user may not read ${env} (mode 0600, owned by uid 0); run as its owner, or give it to this user (\`sudo chown ${NOBODY} ${env}\`)`,
    );
    expect(stderr).not.toMatch(/fix or remove it|unexpected|never-printed/);
  });
});
