/**
 * docs/local-mode.md against the code it describes: the settings, names, bounds and messages a user acts on first,
 * each read out of the page and held to the code that defines it, so the two cannot drift apart unseen.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseCommand } from "../../shared/cli/args.js";
import { SETTINGS } from "../../shared/cli/config.js";
import { CYCLE_LEASE_MS } from "../../shared/cli/cycle-lease.js";
import { checkRequestedScope } from "../../shared/cli/cycle-scopes.js";
import { PiiSaltChangedError, PiiSaltUnchangedError } from "../../shared/cli/errors.js";
import { HOST_PROBE_TIMEOUT_MS } from "../../shared/cli/host-probe.js";
import { stopNotice } from "../../shared/cli/main.js";
import { foreignStateDirProblem } from "../../shared/cli/path-checks.js";
import { secondStopNotice } from "../../shared/cli/stop-at-once.js";
import { STATE_DIRS, STATE_FILES } from "../../shared/local/index.js";
import { docText, quotedNames, quotePattern, textsSaid } from "../doc-text.js";

/** docs/local-mode.md, line breaks read as spaces. */
const page = docText("docs/local-mode.md");

/** The first group of `pattern`'s first match in the page; fails the test when the page no longer says it. */
const said = (pattern: RegExp): string => textsSaid(page, pattern)[0]?.[0] ?? "";

/** The doc's quote of a message, its `(...)` standing for whatever the code puts there. */
function quoteMatches(quote: string, message: string): boolean {
  return quotePattern(quote, /\(\.\.\.\)/, "\\(.*?\\)").test(message.replace(/\s+/g, " "));
}

describe("docs/local-mode.md's settings", () => {
  it("names as conform-pii's the settings the settings table has it read, and only those", () => {
    const list = said(/it reads (`BRIDGE_[^.]*?) only/);
    const read = SETTINGS.filter((setting) => setting.commands.includes("conform-pii")).map((setting) => setting.name);
    expect(quotedNames(list).sort()).toEqual([...read].sort());
  });
});

describe("docs/local-mode.md's bounds", () => {
  it("gives the cycle lease the length it has", () => {
    expect(Number(said(/a (\d+) s lease, renewed while a cycle runs/))).toBe(CYCLE_LEASE_MS / 1000);
    expect(Number(said(/elsewhere it expires within (\d+) s/))).toBe(CYCLE_LEASE_MS / 1000);
  });

  it("gives authorize --timeout the default it has", () => {
    const parsed = parseCommand(["authorize"]);
    const minutes = Number(said(/how long it waits for the redirect, (\d+) minutes unless given/));
    expect(parsed.command === "authorize" && parsed.args.timeoutMs).toBe(minutes * 60_000);
  });

  it("gives authorize's probe of the provider's host the time it waits", () => {
    expect(Number(said(/takes none within (\d+) s/))).toBe(HOST_PROBE_TIMEOUT_MS / 1000);
  });
});

describe("docs/local-mode.md's state directory", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A new directory holding just `name` (a directory when it ends in `/`). */
  function holding(name: string): string {
    const dir = mkdtempSync(join(tmpdir(), "local-mode-doc-"));
    dirs.push(dir);
    if (name.endsWith("/")) mkdirSync(join(dir, name));
    else writeFileSync(join(dir, name), "");
    return dir;
  }

  it("takes a directory holding only what it calls not in the way", () => {
    const names = quotedNames(said(/Not in the way: (`lost\+found`.*?\(`\.gitkeep`, `\.keep`, `\.gitignore`\))/));
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) expect(foreignStateDirProblem(holding(name === "lost+found" ? `${name}/` : name)), name).toBeUndefined();
  });

  it("refuses a directory holding a dotfile it calls in the way", () => {
    const names = quotedNames(said(/Any other dotfile is: a directory holding (a `\.git`.*?`\.ssh`)/));
    expect(names).toHaveLength(3);
    for (const name of names) expect(foreignStateDirProblem(holding(name)), name).toContain(name);
  });

  it("lists as its files and directories the entries the state directory has", () => {
    const listed = quotedNames(said(/Its files and directories \(([^)]*)\) are checked the same way/)).map((name) => name.replace(/\/$/, ""));
    // "and the files in `snapshots/` and `quarantine/`" names two of them again.
    expect([...new Set(listed)].sort()).toEqual([...Object.values(STATE_FILES), ...Object.values(STATE_DIRS)].sort());
  });
});

describe("docs/local-mode.md's quotes of messages", () => {
  it("quotes the refusals of a changed salt and of a --new-pii-salt with nothing to switch as they are worded", () => {
    const changed = said(/with `(BRIDGE_PII_SALT: differs from [^`]*)`/);
    expect(quoteMatches(changed, new PiiSaltChangedError("/state").message)).toBe(true);
    const unchanged = said(/with `(--new-pii-salt refused: [^`]*)`/);
    expect(quoteMatches(unchanged, new PiiSaltUnchangedError("/state").message)).toBe(true);
  });

  it("quotes the first stop's notices as they are worded", () => {
    expect(secondStopNotice(true)).toContain(said(/A first Ctrl-C in that state says so already \("([^"]*)"\)/));
    expect(said(/instead of "([^"]*)"/)).toBe(secondStopNotice(false));
    const sigterm = said(/a first SIGTERM or SIGHUP is named \("([^"]*); \.\.\."\)/);
    expect(stopNotice("run", { signal: "SIGTERM" })).toContain(sigterm);
    expect(secondStopNotice(false, "SIGTERM")).toContain(said(/and says "([^"]*)" in place of/));
  });

  it("says after what the first stop ends each command, as it says so itself", () => {
    const { run, redrive, conform } = {
      run: said(/the first one stops `run` and the demo cleanly (after the \w+ in hand)/),
      redrive: said(/`redrive` (after the \w+ in hand) and `conform-pii`/),
      conform: said(/and `conform-pii` (after the \w+ in hand): what it published is stored/),
    };
    expect(stopNotice("run")).toContain(run);
    expect(stopNotice("demo")).toContain(run);
    expect(stopNotice("redrive")).toContain(redrive);
    expect(stopNotice("conform-pii")).toContain(conform);
  });
});

describe("docs/local-mode.md's authorize", () => {
  it("names as the spec's scopes those --scope takes without calling them unknown", () => {
    const listed = quotedNames(said(/a value that is no scope the spec names \(([^)]*?): its list is not complete/));
    expect(listed.length).toBeGreaterThan(3);
    expect(checkRequestedScope(listed.join(" ")).warnings.join(" ")).not.toContain("the spec names");
    // And they are all of them: the warning for an unknown one lists the spec's.
    const warning = checkRequestedScope(`${listed.join(" ")} made:up`).warnings.join(" ");
    expect(/the spec names \(([^)]*)\)/.exec(warning)?.[1]?.match(/[a-z]+:[a-z]+/g)?.sort()).toEqual([...listed].sort());
  });
});
