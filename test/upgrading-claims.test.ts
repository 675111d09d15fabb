/**
 * docs/upgrading.md held to the code, its Local mode notes first: what someone upgrading a state directory, a `.env` or
 * a script reads must say what this version refuses, with which exit code and fix, and its citations must lead
 * somewhere. The deployed tenant's grants, names and limits: test/infra/upgrading-docs.test.ts.
 */
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Template } from "aws-cdk-lib/assertions";
import { EXIT } from "../shared/cli/errors.js";
import { loadEnv } from "../shared/cli/env-file.js";
import { TRANSACTIONS_BUDGET_SHARE } from "../shared/cli/local-cycles.js";
import { invokedIn, npmOwnOptionWarnings } from "../shared/cli/npm-options.js";
import { CYCLE_LEASE_MS } from "../shared/cli/cycle-lease.js";
import { DEFAULT_LOCK_TTL_MS } from "../shared/qashio/auth/refresh-lease.js";
import { cycleAlarmWindow } from "../infra/constructs/alarm-window.js";
import { exampleStacks, fastPathGlobex } from "./infra/helpers.js";
import { REQUIRED_RUN_SETTINGS, runInProcess, settingsRefusalOf } from "./cli/helpers.js";
import { docBullet, docSection, docText, firstTextsSaid, numbersSaid, quotedNames, quotePattern, textsSaid } from "./doc-text.js";
import { ROOT, seconds } from "./spec-gaps-section.js";
import { tempDirPerTest } from "./temp-dir.js";

const UPGRADING = docText("docs/upgrading.md");

/** The note of docs/upgrading.md's Local mode that starts with `start`. */
const note = (start: string): string => docBullet("docs/upgrading.md", start, "Local mode");

/** The exit code a note gives its refusal (`refused, exit N`, `exits N`), read as the doc writes it. */
const exitSaid = (text: string, pattern = /(?:exit|exits) (\d+)/): number => numbersSaid(text, pattern)[0]?.[0] ?? Number.NaN;

let dir = "";
tempDirPerTest("upgrading-claims-", (made) => (dir = made));

/** `run --once` in `cwd` with the required settings and `env`: a settings refusal ends it before any provider call. */
const runOnce = (env: Record<string, string>, cwd = dir) => runInProcess(["run", "--once"], { ...REQUIRED_RUN_SETTINGS, ...env }, undefined, cwd);

describe("docs/upgrading.md, Local mode: a state directory of other files", () => {
  const text = note("`BRIDGE_STATE_DIR` set to an existing directory of other files");
  const [placeholderList = "", someones = ""] = firstTextsSaid(text, /dotfiles other than (.*?) \((.*?)\) no longer count as nothing/);

  it("refuses one holding the dotfiles it names as someone's, with the exit code it gives", async () => {
    const named = quotedNames(someones);
    expect(named.length).toBeGreaterThan(0);
    for (const name of named) {
      const state = join(dir, `with${name}`);
      mkdirSync(state);
      writeFileSync(join(state, name), "");
      const { code, stderr } = await runOnce({ BRIDGE_STATE_DIR: state });
      expect([code, stderr], name).toEqual([exitSaid(text), expect.stringMatching(new RegExp(`BRIDGE_STATE_DIR: .*holds \\${name}`))]);
    }
  });

  it("refuses macOS's `._` twins of dotfiles as its list says: those of the dotfiles it lists count as nothing only where it says so", () => {
    const listed = quotedNames(placeholderList);
    const twinsListed = listed.includes("._");
    for (const [name, twinOfListed] of [["._.DS_Store", true], ["._.env", false]] as const) {
      const state = join(dir, `twin${name}`);
      mkdirSync(state, { mode: 0o700 });
      writeFileSync(join(state, name), "");
      const refused = settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir).includes("is not a state directory of the bridge");
      expect(refused, name).toBe(!(twinsListed && twinOfListed));
    }
  });

  it("takes one holding only the dotfiles it says count as nothing", async () => {
    const state = join(dir, "placeholders");
    mkdirSync(state, { mode: 0o700 });
    const listed = quotedNames(placeholderList);
    const names = listed.filter((name) => name !== "._");
    expect(names.length).toBeGreaterThan(1);
    for (const name of names) for (const kept of listed.includes("._") ? [name, `._${name}`] : [name]) writeFileSync(join(state, kept), "");
    expect(settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir)).toBe("accepted");
  });

  it("refuses a directory of the bridge's names holding files of someone else's, and keeps one holding binding.json", async () => {
    const ownDirs = quotedNames(firstTextsSaid(text, /; a (.*?) of your own no longer makes a directory the bridge's/)[0] ?? "");
    expect(ownDirs.length).toBe(3);
    for (const entry of ownDirs) {
      const state = join(dir, `own-${entry.replace("/", "")}`);
      mkdirSync(join(state, entry), { recursive: true });
      writeFileSync(join(state, entry, "holiday.jpg"), "");
      expect(settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir), entry).toMatch(/BRIDGE_STATE_DIR: .*is not a state directory of the bridge/);
    }
    const [binding = ""] = firstTextsSaid(text, /\(it holds `([\w.]+)`/);
    const used = join(dir, "used");
    mkdirSync(used, { mode: 0o700 });
    writeFileSync(join(used, "notes.txt"), "");
    writeFileSync(join(used, binding), "{}", { mode: 0o600 });
    expect(settingsRefusalOf({ BRIDGE_STATE_DIR: used }, dir)).not.toMatch(/is not a state directory of the bridge/);
  });
});

describe("docs/upgrading.md, Local mode: state directories and events files others may write", () => {
  const stateNote = note("An existing state directory that its group or others may write into");
  const eventsNote = note("An existing events file that its group or others may write");

  it("refuses each state directory mode it lists, with its exit code, naming the setting and the chmod it gives", async () => {
    const modes = textsSaid(stateNote, /\((\d{4}), (\d{4}), (\d{4})\)/)[0] ?? [];
    const [fix = ""] = firstTextsSaid(stateNote, /the fix: `(chmod \d+ <dir>)`/);
    for (const mode of modes) {
      const state = join(dir, `mode${mode}`);
      mkdirSync(state);
      chmodSync(state, Number.parseInt(mode, 8));
      const { code, stderr } = await runOnce({ BRIDGE_STATE_DIR: state });
      expect(code, mode).toBe(exitSaid(stateNote));
      expect(stderr, mode).toMatch(/BRIDGE_STATE_DIR: /);
      expect(stderr, mode).toMatch(quotePattern(fix.replace("<dir>", state), /$^/));
    }
  });

  it("refuses such an entry with the chmod it gives for a file", () => {
    const [chmod = ""] = firstTextsSaid(stateNote, /\(`(chmod \d+)` for a file\)/);
    const state = join(dir, "entry");
    mkdirSync(state, { mode: 0o700 });
    writeFileSync(join(state, "binding.json"), "{}");
    chmodSync(join(state, "binding.json"), 0o664);
    expect(settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir)).toContain(`${chmod} ${join(state, "binding.json")}`);
  });

  it("gives the mode a umask makes of a directory made by hand, which is refused, and one the bridge makes, which is not", () => {
    const [umask = 0, made = 0, bridges = 0] = firstTextsSaid(stateNote, /umask of (\d+) .* is (\d+): let the bridge create it \((\d+)\)/).map((mode) => Number.parseInt(mode, 8));
    expect(made).toBe(0o777 & ~umask);
    for (const [mode, refused] of [[made, true], [bridges, false]] as const) {
      const state = join(dir, `made${mode.toString(8)}`);
      mkdirSync(state);
      chmodSync(state, mode);
      expect(settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir).includes("BRIDGE_STATE_DIR"), mode.toString(8)).toBe(refused);
    }
  });

  it.runIf(process.getuid?.() === 0)("refuses, to root, a state directory another user owns, with the chown it gives", () => {
    const [fix = ""] = firstTextsSaid(stateNote, /for another owner, `(sudo chown -R <your uid> <dir>)`/);
    const state = join(dir, "hosts");
    mkdirSync(state, { mode: 0o700 });
    chownSync(state, 1000, 1000);
    expect(settingsRefusalOf({ BRIDGE_STATE_DIR: state }, dir)).toContain(fix.replace("<your uid>", "0").replace("<dir>", state));
  });

  it("refuses each events file mode it lists, with its exit code and fix, and leaves a consumer's group reading", async () => {
    const modes = (textsSaid(eventsNote, /may write \((\d{4}) under a umask of \d+, (\d{4})\)/)[0] ?? []).map((mode) => Number.parseInt(mode, 8));
    const [fix = ""] = firstTextsSaid(eventsNote, /the fix: `(chmod [\w-]+ <file>)`/);
    const events = join(dir, "events.jsonl");
    for (const mode of [...modes, 0o640]) {
      writeFileSync(events, "");
      chmodSync(events, mode);
      const { code, stderr } = await runOnce({ BRIDGE_EVENTS_FILE: events, BRIDGE_STATE_DIR: join(dir, "state") });
      const refused = mode !== 0o640;
      expect(stderr.includes(`BRIDGE_EVENTS_FILE: `), mode.toString(8)).toBe(refused);
      if (refused) expect([code, stderr.includes(fix.replace("<file>", events))], mode.toString(8)).toEqual([exitSaid(eventsNote), true]);
    }
  });
});

describe("docs/upgrading.md, Local mode: settings and .env", () => {
  const controls = note("A setting holding a line break or another control character");

  it("refuses the C1 controls it names, from the first to the last and its example, and none past them; not in BRIDGE_PII_SALT", () => {
    const [first = "", last = "", example = ""] = firstTextsSaid(controls, /\(U\+([\dA-F]{4}) to U\+([\dA-F]{4}), such as U\+([\dA-F]{4})/);
    const at = (hex: string, step = 0) => String.fromCodePoint(Number.parseInt(hex, 16) + step);
    for (const [char, refused] of [[at(first), true], [at(last), true], [at(example), true], [at(last, 1), false]] as const) {
      const refusal = settingsRefusalOf({ QASHIO_CLIENT_SECRET: `a${char}b` }, dir);
      expect(refusal.includes("QASHIO_CLIENT_SECRET: holds a line break or another control character"), char.codePointAt(0)?.toString(16)).toBe(refused);
    }
    expect(controls).toMatch(/Not `BRIDGE_PII_SALT`: a salt read with a line break stays as it was/);
    expect(settingsRefusalOf({ BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "abcdefgh\nijklmnopqrst" }, dir)).toBe("accepted");
  });

  it("refuses the .env lines it names by line number, with the exit code given for a setting, and takes its quoted example", async () => {
    const lines = note("`.env` lines with a quote not closed on the line");
    const [example = ""] = firstTextsSaid(lines, /quote the value \(`([^`]+)`\)/);
    const [name = "", value = ""] = example.split("=");
    const refusedEnv = async (text: string | Buffer): Promise<{ code: number; message: string } | undefined> => {
      writeFileSync(join(dir, ".env"), text);
      try {
        await loadEnv({}, dir);
        return undefined;
      } catch (error) {
        return { code: (error as { exitCode: number }).exitCode, message: (error as Error).message };
      }
    };
    expect(await refusedEnv(`# salt\n${example}\n`)).toBeUndefined();
    const unquoted = `${name}=${value.replace(/^'|'$/g, "")}`;
    for (const [text, line] of [[`# salt\n${unquoted}\n`, /line 2/], [`${name}='abc\n`, /line 1/], [`${example}\n${example}\n`, /lines 1, 2/], [Buffer.from("# caf\xe9\n", "latin1"), /line 1 is not UTF-8/]] as const) {
      const refusal = await refusedEnv(text);
      expect(refusal?.message, String(text)).toMatch(line);
      expect(refusal?.code).toBe(exitSaid(controls));
    }
  });

  it("refuses the path settings it names: ~ forms, $NAME forms, quotes, and an events file ending in /", () => {
    const paths = note("`BRIDGE_EVENTS_FILE` may not be");
    expect(paths).toMatch(/may not start with `~` \(`~user\/...` included\) nor hold `\$NAME` or `\$\{NAME\}`/);
    for (const form of ["~/state", "~user/state", "$HOME/state", "${HOME}/state", '"state"']) {
      expect(settingsRefusalOf({ BRIDGE_STATE_DIR: form }, dir), form).toMatch(/BRIDGE_STATE_DIR: /);
    }
    expect(settingsRefusalOf({ BRIDGE_EVENTS_FILE: "out/" }, dir)).toMatch(/BRIDGE_EVENTS_FILE: ends with \//);
  });

  it("refuses an events file that is the state directory, an entry of it, a directory it lies in or the .env file, and takes a file of its own there", () => {
    const paths = note("`BRIDGE_EVENTS_FILE` may not be");
    const [events = "", state = ""] = firstTextsSaid(paths, /\(events `([\w/]+)` with state `([\w/]+)`\)/);
    const refusal = (env: Record<string, string>) => settingsRefusalOf({ BRIDGE_STATE_DIR: "st", ...env }, dir);
    writeFileSync(join(dir, ".env"), "");
    for (const file of ["st", "st/tokens.json", ".env"]) expect(refusal({ BRIDGE_EVENTS_FILE: file }), file).toMatch(/BRIDGE_EVENTS_FILE: /);
    expect(refusal({ BRIDGE_EVENTS_FILE: events, BRIDGE_STATE_DIR: state })).toMatch(/BRIDGE_EVENTS_FILE: /);
    expect(refusal({ BRIDGE_EVENTS_FILE: "st/events.jsonl" })).toBe("accepted");
  });
});

describe("docs/upgrading.md, Local mode: the command line and the cycle", () => {
  it("reads .env in the directory npm was called from", () => {
    expect(note("`npm run bridge` from a subdirectory")).toMatch(/reads `\.env` and relative paths in the directory it is called from/);
    expect(invokedIn({ npm_lifecycle_event: "bridge", INIT_CWD: "/srv/tenant-a" }, ROOT)).toBe("/srv/tenant-a");
  });

  it("exits as it says without a command, for an option npm kept, and for an option given twice; warns for npm's own options", async () => {
    const text = note("`bridge` without a command");
    const [noCommand = 0, kept = 0] = numbersSaid(text, /exits? (\d+)/).map(([n]) => n);
    expect((await runInProcess([], {})).code).toBe(noCommand);
    expect((await runInProcess(["run"], { ...REQUIRED_RUN_SETTINGS, npm_lifecycle_event: "bridge", npm_config_once: "true" }, undefined, dir)).code).toBe(kept);
    expect((await runInProcess(["run", "--once", "--once"], REQUIRED_RUN_SETTINGS, undefined, dir)).code).toBe(kept);
    const [scope = "", benchJson = ""] = firstTextsSaid(text, /\(`--(\w+)` and `bench --(\w+)`, npm options too, get a warning\)/);
    expect(npmOwnOptionWarnings(["authorize"], { npm_lifecycle_event: "bridge", [`npm_config_${scope}`]: "read" })).toHaveLength(1);
    expect(npmOwnOptionWarnings(["bench"], { npm_lifecycle_event: "bench", [`npm_config_${benchJson}`]: "true" })).toHaveLength(1);
  });

  it("gives the transactions' share of the cycle budget, and the wait for a lock an earlier version wrote, cycle and token lease alike", () => {
    expect(numbersSaid(note("The transactions take at most"), /at most (three quarters|half) of `BRIDGE_CYCLE_BUDGET`/)).toEqual([[TRANSACTIONS_BUDGET_SHARE]]);
    const lock = note("A lock file (cycle or token lease)");
    const [wait = 0] = numbersSaid(lock, /expire \((\d+) s after its last renewal\)/)[0] ?? [];
    expect([seconds(CYCLE_LEASE_MS), seconds(DEFAULT_LOCK_TTL_MS)]).toEqual([wait, wait]);
  });

  it("gives the exit codes of a stopped run, a failed one and a revoked family as the command line's", () => {
    expect(numbersSaid(note("A first Ctrl-C or SIGTERM"), /`run --once` then exits (\d+)/)).toEqual([[EXIT.incomplete]]);
    const failed = note("A transactions cycle that fails for a provider reason");
    expect(numbersSaid(failed, /the run then exits (\d+)/)).toEqual([[EXIT.failed]]);
    expect(numbersSaid(failed, /\(exit (\d+) for a revoked family\)/)).toEqual([[EXIT.reauthorize]]);
    expect(numbersSaid(note("`redrive` also takes `validation` records"), /`redrive` exits (\d+)/)).toEqual([[EXIT.failed]]);
    expect(exitSaid(note("`run --new-pii-salt` is refused"))).toBe(EXIT.usage);
  });
});

describe("docs/upgrading.md, A deployed tenant: the schedules and alarms it names", () => {
  const deployed = docSection(UPGRADING, "A deployed tenant");
  /** The names of `kind` in `template`: the part of each alarm's name after `QashioBridge-<tenant>-`. */
  const namesIn = (template: Template, kind: "AWS::Scheduler::Schedule" | "AWS::CloudWatch::Alarm"): string[] =>
    Object.values(template.findResources(kind)).map((resource) => {
      const properties = (resource as { Properties: { Name?: string; AlarmName?: string } }).Properties;
      return (properties.Name ?? properties.AlarmName ?? "").replace(/^QashioBridge-[\w-]+?-(?=[A-Z])/, "");
    });

  it("names the poller schedules the stack makes, the card fast path's included", () => {
    const [schedules = ""] = firstTextsSaid(deployed, /The poller schedules get fixed names, (.*?), in place of/);
    expect(new Set(quotedNames(schedules))).toEqual(new Set(namesIn(fastPathGlobex(), "AWS::Scheduler::Schedule")));
  });

  it("names as new alarms, and as alarms on cycles, alarms the stack of a tenant reading card details makes", () => {
    const alarms = namesIn(exampleStacks().acme.template, "AWS::CloudWatch::Alarm");
    const named = [
      // Without the parenthesized setting (`cardDetails`) that scopes an alarm.
      ...quotedNames((firstTextsSaid(deployed, /Two new alarms, (.*?) \(docs\/runbook\.md\)/)[0] ?? "").replace(/\([^)]*\)/g, "")),
      ...quotedNames(firstTextsSaid(deployed, /A new alarm, (`\w+`)/)[0] ?? ""),
      ...quotedNames(firstTextsSaid(deployed, /The alarms on cycles \((.*?)\) keep/)[0] ?? ""),
    ];
    expect(named.length).toBeGreaterThan(8);
    expect(named.filter((name) => !alarms.includes(name))).toEqual([]);
  });

  it("gives the cycle alarms' window: 2 of 3 periods of the schedule, 3 one-day periods for a daily one, also over 8 hours", () => {
    const [periods = 0, breaching = 0, hours = 0, daily = 0] = numbersSaid(deployed, /keep (\d+) periods of their schedule, (\d+) breaching, on schedules over (\d+) hours too \((\d+) one-day periods/)[0] ?? [];
    for (const minutes of [hours * 60 + 1, 24 * 60]) {
      const window = cycleAlarmWindow(minutes);
      expect([window.evaluationPeriods, window.datapointsToAlarm], `${minutes} min`).toEqual([periods, breaching]);
    }
    expect([cycleAlarmWindow(24 * 60).evaluationPeriods, cycleAlarmWindow(24 * 60).period.toDays()]).toEqual([daily, 1]);
  });
});
