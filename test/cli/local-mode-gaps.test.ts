/**
 * docs/spec-gaps.md's "Local mode" section held to the code: the code it names for each choice, and the bounds,
 * defaults and messages it gives a reader, read out of the section and compared with what the code defines or says.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_DEADLINE_GRACE_MS, DEFAULT_PAGE_SIZE } from "../../shared/bridge/deps.js";
import { PII_SALT_MIN_LENGTH, piiSaltFingerprint } from "../../shared/bridge/pii.js";
import { MIN_INTERVAL_MS, parseCommand } from "../../shared/cli/args.js";
import { AUTHORIZE_LEASE_WAIT_MS } from "../../shared/cli/authorize-command.js";
import { floorOf } from "../../shared/cli/bench-report.js";
import { readAuthorizeSettings, SETTINGS } from "../../shared/cli/config.js";
import { CYCLE_LEASE_MS, CYCLE_LOCK } from "../../shared/cli/cycle-lease.js";
import { DEFAULT_SCOPES } from "../../shared/cli/cycle-scopes.js";
import { MAX_DURATION_MS } from "../../shared/cli/duration.js";
import { stopNotice } from "../../shared/cli/main.js";
import { foreignStateDirProblem } from "../../shared/cli/path-checks.js";
import { secondStopNotice } from "../../shared/cli/stop-at-once.js";
import { unwritableStateDirRemedy } from "../../shared/cli/engine-errors.js";
import { EXIT, TokensLostError } from "../../shared/cli/errors.js";
import { STALE_TEMP_MS } from "../../shared/local/atomic.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";
import { DEFAULT_LOCK_TTL_MS } from "../../shared/qashio/auth/refresh-lease.js";
import { numbersSaid, textsSaid } from "../doc-text.js";
import { expectCitationsHold, ROOT, seconds, specGapsSection } from "../spec-gaps-section.js";
import { settingsRefusalOf as settingsRefusal } from "./helpers.js";

/** The "Local mode" section, line breaks read as spaces. */
const LOCAL = specGapsSection("Local mode");

describe("docs/spec-gaps.md, Local mode: the code it names", () => {
  it("cites files that exist, holding each name it cites there", () => {
    expect(expectCitationsHold(LOCAL)).toBeGreaterThan(50);
  });
});

/** The first group of `pattern`'s first match in the section; fails when the section no longer says it. */
const quoted = (pattern: RegExp): string => textsSaid(LOCAL, pattern)[0]?.[0] ?? "";

describe("docs/spec-gaps.md, Local mode: the messages it quotes", () => {
  it("quotes the first stop's notice of what a second one does as worded, while new tokens are unsaved and otherwise", () => {
    expect(secondStopNotice(false)).toBe(quoted(/does then: no longer "([^"]+)", which it did not while/));
    expect(secondStopNotice(true).startsWith(quoted(/or a refresh was under way\), but "([^"]+)"/))).toBe(true);
    const received = quoted(/a first SIGTERM or SIGHUP is named, "([^"]+) \.\.\."/);
    expect(stopNotice("run", { signal: "SIGTERM" })?.startsWith(received)).toBe(true);
    expect(secondStopNotice(false, "SIGTERM")).toContain(quoted(/its notice says "([^"]+)" where a first Ctrl-C's says/));
    expect(secondStopNotice(false, "SIGINT")).toContain(quoted(/where a first Ctrl-C's says "([^"]+)"/));
  });

  it("quotes a cycle lease's refusal on a state directory that takes no writes as it is worded", () => {
    expect(quoted(/naming `<state>\/locks`, the system's code and "([^"]+)"/)).toBe(unwritableStateDirRemedy("<state>"));
  });

  it("quotes the loss of held tokens that could not be saved as worded, for a directory taking no writes and for an unreadable lease", () => {
    const lost = new TokensLostError("/srv/state/tokens.json");
    expect(lost.exitCode).toBe(EXIT.reauthorize);
    expect(lost.message).toContain(quoted(/the new refresh token is lost and exits 3 \("([^"]+)"/));
    const lease = new LeaseUnreadableError("/srv/state/locks/qashio-token-refresh.lock", "EIO");
    const leaseLost = new TokensLostError("/srv/state/tokens.json", { failure: lease });
    expect(leaseLost.message).toContain(quoted(/could not read the token refresh lease kept for them, "([^"]+)"/));
  });
});

/** The groups of every match of `pattern` in the section, as numbers; fails when it matches nowhere. */
const said = (pattern: RegExp): number[][] => numbersSaid(LOCAL, pattern);


/** What parseCommand says of `argv`, or "accepted". */
function refusalOf(argv: string[]): string {
  try {
    parseCommand(argv);
    return "accepted";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const cwd = mkdtempSync(join(tmpdir(), "local-mode-gaps-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

/** The settings error `readLocalSettings` gives for the required settings plus `env`, or "accepted". */
const settingsRefusalOf = (env: Record<string, string>): string => settingsRefusal(env, cwd);

describe("docs/spec-gaps.md, Local mode: settings and durations", () => {
  it("gives each setting the default the settings table has, and the salt the length it needs", () => {
    const defaults = quoted(/Defaults: (.*?)\. All problems are reported/);
    const given = [...defaults.matchAll(/`(\w+)=([^`]+)`/g)].map((m) => [m[1], m[2]]);
    expect(given.length).toBeGreaterThanOrEqual(7);
    for (const [name, value] of given) expect(SETTINGS.find((setting) => setting.name === name)?.default, String(name)).toBe(value);
    expect(said(/needs `BRIDGE_PII_SALT`, at least (\d+) characters/)).toEqual([[PII_SALT_MIN_LENGTH]]);
    expect(said(/a `pii_salt` under (\d+) characters/)).toEqual([[PII_SALT_MIN_LENGTH]]);
  });

  it("bounds every duration by the longest timer and the minimum it says, refusing the examples it gives as it words them", () => {
    const [[power = 0] = []] = said(/is at most 2\^(\d+)-1 ms/);
    expect(2 ** power - 1).toBe(MAX_DURATION_MS);
    expect(refusalOf(["run", "--interval", `${MAX_DURATION_MS + 1}ms`])).toContain("must be at most");
    expect(said(/take at least (\d+)s \(`demo --interval` takes (\d+)\)/)).toEqual([[seconds(MIN_INTERVAL_MS), 0]]);
    expect(refusalOf(["demo", "--interval", "0"])).toBe("accepted");
    const tooShort = [...quoted(/a shorter duration \((.*?)\) is refused naming that minimum/).matchAll(/`(-?\w+)`/g)].map((m) => m[1] ?? "");
    expect(tooShort).toEqual(expect.arrayContaining(["0", "0s", "500ms", "-5s", "-1"]));
    for (const text of tooShort) {
      expect(refusalOf(["run", "--interval", text])).toBe(`--interval must be at least 1s, got ${text}`);
      expect(refusalOf(["authorize", "--timeout", text])).toBe(`--timeout must be at least 1s, got ${text}`);
      expect(settingsRefusalOf({ BRIDGE_CYCLE_BUDGET: text })).toContain("BRIDGE_CYCLE_BUDGET: must be at least 1s");
    }
    expect(refusalOf(["run", "--interval", "0s"])).toBe(quoted(/refused naming that minimum \("([^"]+)"\)/));
    expect(refusalOf(["run", "--interval", "often"])).toContain("invalid duration");
  });

  it("refuses a unit given twice or out of order, and tells BRIDGE_CYCLE_BUDGET the options' problem without its value", () => {
    const [twice = "", outOfOrder = ""] = quoted(/: (`\w+` and `\w+`) are refused naming the unit given twice or out of order/).match(/(?<=`)\w+(?=`)/g) ?? [];
    expect(refusalOf(["run", "--interval", twice])).toContain("is given twice");
    expect(refusalOf(["run", "--interval", outOfOrder])).toContain("comes after");
    const problem = quoted(/`BRIDGE_CYCLE_BUDGET` is told the same problem as the options \("([^"]+)"\)/);
    const refusal = settingsRefusalOf({ BRIDGE_CYCLE_BUDGET: "300" });
    expect(refusal).toContain(`BRIDGE_CYCLE_BUDGET: ${problem}`);
    expect(refusal).not.toContain("300");
    expect(refusalOf(["run", "--interval", "300"])).toContain('invalid duration "300": no unit');
  });
});

describe("docs/spec-gaps.md, Local mode: the state directory's leases and files", () => {
  it("names as many entries of a directory not the bridge's as it says, sorted, with how many more", () => {
    const [[named = 0] = []] = said(/the directory, up to (\w+) of its entries in the way, sorted, with how many more/);
    const dir = join(cwd, "not-a-state-dir");
    mkdirSync(dir);
    const entries = ["notes.txt", "b.md", "a.md", "photo.jpg", "c.md"];
    for (const entry of entries) writeFileSync(join(dir, entry), "mine");
    const shown = [...entries].sort().slice(0, named);
    expect(foreignStateDirProblem(dir)).toContain(`holds ${shown.join(", ")} and ${entries.length - named} more`);
  });

  it("records the salt fingerprint as the hex digits it says", () => {
    const [[digits = 0] = []] = said(/records `piiSaltFingerprint`: (\d+) hex digits of HMAC-SHA256/);
    expect(piiSaltFingerprint("a salt of sixteen characters")).toMatch(new RegExp(`^[0-9a-f]{${digits}}$`));
  });

  it("takes the cycle lease it names for the time it says, renewed every third of it", () => {
    const [[ttl = 0, renewal = 0] = []] = said(/`<state>\/locks\/cycle\.lock` \((\d+) s, renewed every (\d+) s/);
    expect(LOCAL).toContain(`\`<state>/locks/${CYCLE_LOCK}.lock\``);
    expect(ttl).toBe(seconds(CYCLE_LEASE_MS));
    expect(renewal).toBe(seconds(CYCLE_LEASE_MS) / 3);
    expect(said(/another process takes it over once this one has exited, or after (\d+) s/)).toEqual([[seconds(CYCLE_LEASE_MS)]]);
    expect(said(/blocks the next one until its lease expires, at most (\d+) s/)).toEqual([[seconds(CYCLE_LEASE_MS)]]);
  });

  it("removes temp files a crash left after the age it says", () => {
    expect(said(/removes the ones older than (\d+) minutes/)).toEqual([[STALE_TEMP_MS / 60_000]]);
  });

  it("has authorize --secret-id wait for the pollers' token lease as long as it says", () => {
    expect(said(/waits up to (\d+) s \(twice the lease's life\b/)).toEqual([[seconds(AUTHORIZE_LEASE_WAIT_MS)]]);
    expect(AUTHORIZE_LEASE_WAIT_MS).toBe(2 * DEFAULT_LOCK_TTL_MS);
  });
});

describe("docs/spec-gaps.md, Local mode: exits, cycles and the bench", () => {
  it("gives each outcome the exit code it has", () => {
    expect(said(/Exit codes\.\*\* (\d+) done; (\d+) the cycle could not finish/)).toEqual([[EXIT.ok, EXIT.failed]]);
    expect(said(/; (\d+) bad arguments or settings/)).toEqual([[EXIT.usage]]);
    expect(said(/(\d+) the token family is revoked/)).toEqual([[EXIT.reauthorize]]);
    expect(said(/(\d+) `run --once` stopped at its time budget/)).toEqual([[EXIT.incomplete]]);
    expect(said(/(\d+) interrupted at once/)).toEqual([[EXIT.interrupted]]);
  });

  it("lets a call under way run past the transactions' share of the budget by the grace it says", () => {
    expect(said(/a call under way may still run up to (\d+) s past that point/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS)]]);
  });

  it("counts the bench's floor calls as it says", () => {
    const [[pages = 0, outdated = 0, acks = 0] = []] = said(/Floor calls = `ceil\(N \/ (\d+)\)` list pages \+ (\d+) empty `outdated` page \+ `ceil\(N \/ (\d+)\)` acknowledge calls/);
    expect([pages, acks]).toEqual([DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE]);
    for (const n of [1, 100, 101, 30_000]) {
      expect(floorOf({ transactions: n, pageSize: DEFAULT_PAGE_SIZE, ackBatchSize: DEFAULT_PAGE_SIZE }).calls).toBe(Math.ceil(n / pages) + outdated + Math.ceil(n / acks));
    }
  });

  it("runs the scripts it names with the semi-space size it says", () => {
    const [[size = 0] = []] = said(/run Node with `--max-semi-space-size=(\d+)`/);
    const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    for (const script of ["start", "bridge", "bench"]) expect(scripts[script], script).toContain(`--max-semi-space-size=${size} `);
  });
});

describe("docs/spec-gaps.md, Local mode: authorize", () => {
  it("listens on the port it says by default and asks the scopes it says", () => {
    const [[port = -1] = []] = said(/`--port (\d+)` \(default\) picks a free port/);
    expect(parseCommand(["authorize"])).toMatchObject({ command: "authorize", args: { port } });
    expect(quoted(/\*\*Scopes requested .*?\*\* Default `([^`]+)`/)).toBe(DEFAULT_SCOPES);
  });

  it("refuses, exit 2, a QASHIO_AUTHORIZE_URL ending with the screen's own path it names", () => {
    const path = quoted(/a `QASHIO_AUTHORIZE_URL` ending with `([^`]+)` \(the screen's own address/);
    const env = { QASHIO_BASE_URL: "https://api.example.com", QASHIO_CLIENT_ID: "c", QASHIO_CLIENT_SECRET: "s" };
    expect(() => readAuthorizeSettings({ ...env, QASHIO_AUTHORIZE_URL: "https://auth.example.com" }, cwd)).not.toThrow();
    let refusal: unknown;
    try {
      readAuthorizeSettings({ ...env, QASHIO_AUTHORIZE_URL: `https://auth.example.com${path}` }, cwd);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ exitCode: EXIT.usage, message: expect.stringContaining(`QASHIO_AUTHORIZE_URL: ends with ${path}`) as unknown });
  });
});
