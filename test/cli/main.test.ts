import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SETTINGS } from "../../shared/cli/config.js";
import { EXIT } from "../../shared/cli/errors.js";
import { stopNotice } from "../../shared/cli/main.js";
import { runInProcess } from "./helpers.js";

describe("bridge.ts main", () => {
  it("prints usage and the settings table for help, exit 0", async () => {
    const { code, stdout } = await runInProcess(["help"], {});
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain("Usage: npm run bridge -- <command>");
    expect(stdout).toContain("conform-pii [--cursor <cursor>]");
    // Every setting, each with the commands that read it.
    expect(stdout).toContain("\n\nSettings (environment or .env), and the commands that read them:\n");
    expect(stdout).toMatch(/BRIDGE_STATE_DIR\s+default \.state\s+run, redrive, conform-pii, authorize\n/);
    // conform-pii never calls the provider.
    // authorize --secret-id takes the client the secret holds when these are unset.
    expect(stdout).toMatch(/QASHIO_CLIENT_SECRET\s+required unless --secret-id has it\s+run, redrive, authorize\n/);
    expect(stdout).toMatch(/QASHIO_AUTHORIZE_URL\s+default the base URL\s+authorize\n/);
    expect(stdout).toMatch(/QASHIO_REFRESH_TOKEN\s+required while no token is stored\s+run, redrive\n/);
    expect(stdout).toMatch(/BRIDGE_TENANT\s+required except for authorize\s+run, redrive, conform-pii, authorize\n/);
    expect(stdout).toMatch(/BRIDGE_PII_SALT\s+required with hash\s+run, redrive, conform-pii\n/);
    for (const { name } of SETTINGS) expect(stdout).toMatch(new RegExp(`\\n  ${name} `));
  });

  it.each([
    ["conform-pii", ["BRIDGE_TENANT", "BRIDGE_STATE_DIR", "BRIDGE_PII_MODE", "BRIDGE_PII_SALT", "BRIDGE_CYCLE_BUDGET", "BRIDGE_LOG_LEVEL"]],
    ["authorize", ["QASHIO_BASE_URL", "QASHIO_CLIENT_ID", "QASHIO_CLIENT_SECRET", "QASHIO_AUTHORIZE_URL", "BRIDGE_TENANT", "BRIDGE_STATE_DIR"]],
    ["run", SETTINGS.map((s) => s.name).filter((name) => name !== "QASHIO_AUTHORIZE_URL")],
    // A re-drive leaves card records alone: the card walk's settings are not its.
    ["redrive", SETTINGS.map((s) => s.name).filter((name) => !["QASHIO_AUTHORIZE_URL", "BRIDGE_EMIT_CARD_CREATED", "BRIDGE_CARD_DETAILS"].includes(name))],
  ])("shows %s --help only the settings that command reads, in the order of the whole list", async (command, names) => {
    const { code, stdout } = await runInProcess([command, "--help"], {});
    expect(code).toBe(EXIT.ok);
    const block = stdout.slice(stdout.indexOf(`\n\nSettings ${command} reads (environment or .env):\n`));
    expect(block).not.toBe(stdout);
    expect([...block.matchAll(/^ {2}((?:QASHIO|BRIDGE)_[A-Z_]+) /gm)].map((m) => m[1])).toEqual(names);
    // Each with what this command needs of it.
    if (command !== "authorize") expect(block).toMatch(/\n {2}BRIDGE_TENANT\s+required\n/);
    // With --secret-id the tokens go into the secret: authorize reads no state directory and no tenant.
    // A setting optional for this command and without a default says so, not "default -", which reads as a value.
    if (command === "authorize") expect(block).toMatch(/\n {2}BRIDGE_TENANT\s+optional; unused with --secret-id\n {2}BRIDGE_STATE_DIR\s+default \.state; unused with --secret-id\n/);
    else expect(block).not.toContain("unused with");
    expect(block).not.toMatch(/default -/);
    // run and redrive refuse to start without it while the state directory holds no token.
    if (names.includes("QASHIO_REFRESH_TOKEN")) expect(block).toMatch(/\n {2}QASHIO_REFRESH_TOKEN\s+required while no token is stored\n/);
    // --secret-id, which supplies the client settings from its secret, is authorize's alone.
    for (const client of ["QASHIO_CLIENT_ID", "QASHIO_CLIENT_SECRET"].filter((name) => names.includes(name))) {
      expect(block).toMatch(new RegExp(`\\n {2}${client}\\s+required${command === "authorize" ? " unless --secret-id has it" : ""}\\n`));
    }
  });

  it("prints one command's usage for help <command> and <command> --help, and refuses a topic that is no command (exit 2)", async () => {
    for (const argv of [["help", "conform-pii"], ["conform-pii", "--help"]]) {
      const { code, stdout } = await runInProcess(argv, {});
      expect(code).toBe(EXIT.ok);
      expect(stdout).toMatch(/^Usage: npm run bridge -- conform-pii \[options\]\n\n {2}conform-pii \[--cursor <cursor>\]/);
      expect(stdout).toContain("where a pass stopped at its time budget");
      expect(stdout).not.toContain("authorize  [--port");
    }
    // No settings block under demo or bench, which set up their own.
    for (const [topic, argv] of [["demo", ["demo", "--help"]], ["bench", ["help", "bench"]]] as const) {
      const { code, stdout } = await runInProcess([...argv], {});
      expect(code).toBe(EXIT.ok);
      expect(stdout.startsWith(`Usage: npm run bridge -- ${topic} [options]`)).toBe(true);
      expect(stdout).not.toContain("QASHIO_BASE_URL");
    }
    const bogus = await runInProcess(["help", "bogus"], {});
    expect(bogus.code).toBe(EXIT.usage);
    expect(bogus.stdout).toBe("");
    expect(bogus.stderr).toContain('error: help: unknown command "bogus". Commands: run,');
  });

  it("says what a duration is in the usage of each command taking one, as the whole usage does, and only there", async () => {
    const durations = /^Durations: .+\n.+ take at least 1s\.$/m.exec((await runInProcess(["help"], {})).stdout)?.[0];
    expect(durations).toBeDefined();
    for (const command of ["run", "authorize", "demo"]) {
      const { code, stdout } = await runInProcess([command, "--help"], {});
      expect(code).toBe(EXIT.ok);
      expect(stdout).toContain(`<duration>`);
      expect(stdout).toContain(`\n\n${durations}\n`);
    }
    for (const command of ["redrive", "conform-pii", "bench"]) expect((await runInProcess(["help", command], {})).stdout).not.toContain("Durations:");
  });

  it("prints the package's name and version for --version (or version), exit 0, and no settings under help version", async () => {
    const { name, version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { name: string; version: string };
    for (const argv of [["--version"], ["version"]]) {
      const { code, stdout, stderr } = await runInProcess(argv, {});
      expect(code).toBe(EXIT.ok);
      expect(stdout).toBe(`${name} ${version}\n`);
      expect(stderr).toBe("");
    }
    const help = await runInProcess(["help", "version"], {});
    expect(help.stdout).toMatch(/^Usage: npm run bridge -- version \[options\]\n\n {2}version +print the package's name and version \(also --version\)\n$/);
  });

  it.each([[["help"]], ...["run", "redrive", "conform-pii", "authorize", "demo", "bench", "version"].map((command) => [[command, "--help"]])])(
    "keeps every line of %j within 100 columns, so that a terminal does not wrap it",
    async (argv) => {
      const { code, stdout } = await runInProcess(argv, {});
      expect(code).toBe(EXIT.ok);
      for (const text of stdout.split("\n")) expect(text.length, text).toBeLessThanOrEqual(100);
    },
  );

  it("answers help --help with the whole usage, exit 0", async () => {
    const { code, stdout, stderr } = await runInProcess(["help", "--help"], {});
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain("Usage: npm run bridge -- <command>");
    expect(stderr).toBe("");
  });

  it("refuses help with a second topic, exit 2, printing no usage", async () => {
    const { code, stdout, stderr } = await runInProcess(["help", "run", "now"], {});
    expect(code).toBe(EXIT.usage);
    expect(stdout).toBe("");
    expect(stderr).toContain("error: help: Unexpected argument 'now': help takes one command at most");
  });

  it("refuses to run without a command, exit 2, pointing to help", async () => {
    const { code, stdout, stderr } = await runInProcess([], {});
    expect(code).toBe(EXIT.usage);
    expect(stdout).toBe("");
    expect(stderr).toContain("error: no command given. Commands: run,");
    expect(stderr.endsWith("\nRun `npm run bridge -- help` for usage.\n")).toBe(true);
  });

  it.each([
    [["run", "--interval", "often"], {}, "run"],
    [["bench", "--txns", "5"], {}, "bench"],
    [["demo", "--cycles", "0", "--seed", "-1"], {}, "demo"],
    [["conform-pii", "--cursor", " "], {}, "conform-pii"],
    [["version", "now"], {}, "version"],
    // npm kept an option of the command for itself.
    [["authorize"], { npm_lifecycle_event: "bridge", npm_config_port: "true" }, "authorize"],
    // Refused once the command runs, not by the parser: still the command's own.
    [["authorize", "--secret-id", "arn:bogus", "--no-open"], { QASHIO_BASE_URL: "http://127.0.0.1:9" }, "authorize"],
  ])("points a refusal of %j, which belongs to one command, to that command's own help", async (argv, env, command) => {
    const { code, stderr } = await runInProcess(argv, env);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toMatch(/^error: /m);
    expect(stderr.endsWith(`\nRun \`npm run bridge -- ${command} --help\` for usage.\n`)).toBe(true);
  });

  it.each([[["sync"]], [["--once"]], [["help", "bogus"]], [["help", "run", "now"]]])(
    "points a refusal of %j, which belongs to no one command, to the whole usage",
    async (argv) => {
      const { code, stderr } = await runInProcess(argv, {});
      expect(code).toBe(EXIT.usage);
      expect(stderr.endsWith("\nRun `npm run bridge -- help` for usage.\n")).toBe(true);
    },
  );

  it("README's settings table lists exactly the settings help prints, with the same requirement, default and commands reading each", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const rows = readme
      .split("\n")
      .filter((l) => /^\| `(QASHIO|BRIDGE)_[A-Z_]+` \|/.test(l))
      .map((l) => l.split("|").slice(1, 5).map((cell) => cell.trim().replaceAll("`", "")));
    expect(rows).toEqual(SETTINGS.map((s) => [s.name, s.required.replaceAll("`", ""), s.default, s.commands.join(", ")]));
    expect(readme).toContain("| Setting | Required | Default | Read by | Meaning |");
  });

  // README keeps a short table, docs/local-mode.md every condition: both must name every code, and only those.
  it.each(["README.md", "docs/local-mode.md"])("%s's exit code table lists exactly the codes EXIT names, each with its meaning", (doc) => {
    const text = readFileSync(new URL(`../../${doc}`, import.meta.url), "utf8");
    expect(text).toContain("| Exit code | Meaning |");
    const table = text.slice(text.indexOf("| Exit code | Meaning |")).split("\n\n")[0] as string;
    const meanings = new Map(
      table
        .split("\n")
        .map((l) => /^\| (\d+) \| (.+) \|$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [Number(m[1]), m[2] as string]),
    );
    expect([...meanings.keys()].sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
    expect(meanings.get(EXIT.ok)).toBe("done");
    expect(meanings.get(EXIT.failed)).toMatch(/^the cycle could not finish/);
    expect(meanings.get(EXIT.usage)).toMatch(/^bad arguments or settings/);
    expect(meanings.get(EXIT.reauthorize)).toMatch(/^a person must sign in again/);
    expect(meanings.get(EXIT.incomplete)).toMatch(/^`run --once` stopped at its time budget/);
    expect(meanings.get(EXIT.interrupted)).toMatch(/^stopped at once by a second Ctrl-C, SIGTERM or SIGHUP/);
  });

  it("says on a first Ctrl-C that redrive and conform-pii stop after the batch or page in hand, as they do, not once they finish", () => {
    expect(stopNotice("redrive")).toBe("stopping cleanly after the batch in hand; Ctrl-C again stops at once");
    expect(stopNotice("conform-pii")).toBe("stopping cleanly after the page in hand; Ctrl-C again stops at once");
    expect(stopNotice("run")).toBe("stopping cleanly after the page in hand; Ctrl-C again stops at once");
  });

  it("says on a first Ctrl-C during a token refresh, or with new tokens held unsaved, that a second one waits for their save, not that it stops at once", () => {
    const waits = "a new refresh token is not saved yet: Ctrl-C again stops once it is (or one more try to save it failed), not at once: a SIGKILL (kill -9) before then would sign the integration out";
    expect(stopNotice("run", { refreshUnsaved: true })).toBe(`stopping cleanly after the page in hand; ${waits}`);
    expect(stopNotice("redrive", { refreshUnsaved: true })).toBe(`stopping cleanly after the batch in hand; ${waits}`);
    expect(stopNotice("run", { refreshUnsaved: false })).toBe("stopping cleanly after the page in hand; Ctrl-C again stops at once");
    expect(stopNotice("authorize", { refreshUnsaved: true })).toBeUndefined();
  });

  it("answers help help with the whole usage and settings, as help alone", async () => {
    const whole = await runInProcess(["help"], {});
    const { code, stdout } = await runInProcess(["help", "help"], {});
    expect(code).toBe(EXIT.ok);
    expect(stdout).toBe(whole.stdout);
  });

  it.each([[["help"]], [["run", "--help"]]])("lines up the settings of %j in columns", async (argv) => {
    const { stdout } = await runInProcess(argv, {});
    const rows = stdout.slice(stdout.indexOf("\n\nSettings ")).split("\n").filter((l) => /^ {2}(QASHIO|BRIDGE)_/.test(l));
    expect(rows.length).toBeGreaterThan(10);
    // Where each column after the name starts: the need, then (in the whole list) the commands reading it.
    const starts = rows.map((row) => [...row.matchAll(/ {2}(?=\S)/g)].slice(1).map((m) => m.index + 2));
    expect(new Set(starts.map((s) => s.join(","))).size, rows.join("\n")).toBe(1);
  });

  it("words the notice of a first SIGTERM or SIGHUP for the signal received, not for Ctrl-C alone: any stop signal is a second one", () => {
    for (const signal of ["SIGTERM", "SIGHUP"] as const) {
      expect(stopNotice("run", { signal })).toBe(
        `${signal} received: stopping cleanly after the page in hand; a second stop signal (Ctrl-C, SIGTERM or SIGHUP) stops at once`,
      );
      expect(stopNotice("redrive", { signal, refreshUnsaved: true })).toBe(
        `${signal} received: stopping cleanly after the batch in hand; a new refresh token is not saved yet: a second stop signal (Ctrl-C, SIGTERM or SIGHUP) ` +
          "stops once it is (or one more try to save it failed), not at once: a SIGKILL (kill -9) before then would sign the integration out",
      );
    }
    expect(stopNotice("run", { signal: "SIGINT" })).toBe("stopping cleanly after the page in hand; Ctrl-C again stops at once");
    expect(stopNotice("authorize", { signal: "SIGTERM" })).toBeUndefined();
  });

  it("says on a first Ctrl-C that demo stops after the page in hand, and that other commands stop once they finish", () => {
    expect(stopNotice("demo")).toBe("stopping cleanly after the page in hand; Ctrl-C again stops at once");
    for (const command of ["bench", "version", "help", undefined]) expect(stopNotice(command)).toBe("stopping cleanly once this finishes; Ctrl-C again stops at once");
  });

  it("rejects an unknown command with exit 2 and a pointer to help", async () => {
    const { code, stderr } = await runInProcess(["sync"], {});
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('error: unknown command "sync"');
    expect(stderr).toContain("npm run bridge -- help");
  });

  it("rejects an unknown bench flag with exit 2", async () => {
    const { code, stderr } = await runInProcess(["bench", "--txns", "5"], {});
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("--txns");
  });

  it("warns on stderr, before the command's own answer, when npm holds a --scope the command line lacks (npm kept it)", async () => {
    const npm = { npm_lifecycle_event: "bridge", npm_config_scope: "cards:read" };
    const kept = await runInProcess(["authorize", "--port", "70000"], npm);
    expect(kept.code).toBe(EXIT.usage);
    expect(kept.stderr).toMatch(/^warning: npm holds a scope setting but this command line has no --scope: .*\nerror: --port must be at most 65535/);
    // Given after `--`, the option is this command line's: nothing to warn of.
    const given = await runInProcess(["authorize", "--port", "70000", "--scope", "cards:read"], npm);
    expect(given.stderr).not.toContain("warning:");
    expect(given.stderr).toContain("error: --port must be at most 65535");
  });

  it(
    "under `npm run bridge` reads .env and relative paths in the directory npm was run from (INIT_CWD), not the package root npm runs it in",
    async () => {
      const called = await mkdtemp(join(tmpdir(), "cli-initcwd-called-"));
      const root = await mkdtemp(join(tmpdir(), "cli-initcwd-root-"));
      try {
        await writeFile(join(called, ".env"), "BRIDGE_TENANT=from-called\nBRIDGE_PII_MOD=hash\n");
        await writeFile(join(root, ".env"), "BRIDGE_TENANT=from-root\n");
        const { code, stderr } = await runInProcess(["run", "--once"], { npm_lifecycle_event: "bridge", INIT_CWD: called }, undefined, root);
        expect(code).toBe(EXIT.usage);
        // The .env of the directory the person is in was read (its typo is named), and the state directory lies there.
        expect(stderr).toContain("warning: BRIDGE_PII_MOD is not a setting");
        expect(stderr).toContain(`the state directory (${join(called, ".state")}) holds no token`);
        expect(stderr).not.toContain(root);
      } finally {
        await rm(called, { recursive: true, force: true });
        await rm(root, { recursive: true, force: true });
      }
    },
  );

  it("reads .env in the process's working directory when no script of this package runs it, INIT_CWD notwithstanding", async () => {
    const other = await mkdtemp(join(tmpdir(), "cli-initcwd-other-"));
    const cwd = await mkdtemp(join(tmpdir(), "cli-initcwd-cwd-"));
    try {
      await writeFile(join(other, ".env"), "BRIDGE_PII_MOD=hash\n");
      // npm exec (npx) sets INIT_CWD too, and a script of another package may run the bridge from its own directory.
      const { code, stderr } = await runInProcess(["run", "--once"], { npm_lifecycle_event: "test", INIT_CWD: other }, undefined, cwd);
      expect(code).toBe(EXIT.usage);
      expect(stderr).not.toContain("BRIDGE_PII_MOD");
      expect(stderr).toContain(`the state directory (${join(cwd, ".state")}) holds no token`);
    } finally {
      await rm(other, { recursive: true, force: true });
      await rm(cwd, { recursive: true, force: true });
    }
  });

  it.each([["run", "--once"], ["authorize", "--no-open"], ["redrive"]])(
    "%s refuses a .env line without = (exit 2) and never prints its secret value on stdout or stderr",
    async (...command) => {
      const dir = await mkdtemp(join(tmpdir(), "cli-envleak-"));
      try {
        await writeFile(
          join(dir, ".env"),
          "QASHIO_BASE_URL=http://127.0.0.1:9\nQASHIO_CLIENT_ID=cid\nQASHIO_CLIENT_SECRET: ClientS3cretValue\nBRIDGE_PII_SALT SaltS3cretValue1234\nBRIDGE_TENANT=acme\n",
        );
        const { code, stdout, stderr } = await runInProcess(command, {}, undefined, dir);
        expect(code).toBe(EXIT.usage);
        expect(stderr).toContain("error: Invalid settings (environment or .env):\n  - .env: lines 3, 4 are malformed (expected NAME=value)");
        expect(stdout + stderr).not.toMatch(/ClientS3cretValue|SaltS3cretValue1234/);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
