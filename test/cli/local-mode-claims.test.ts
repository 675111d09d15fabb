/**
 * docs/local-mode.md's claims that local-mode-doc.test.ts does not hold: the fixes it names for loose modes, the
 * messages it quotes, the hints and examples it gives, the spec it quotes and the sections it cites, each read out of
 * the page and held to what the code does with them.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CALLBACK_PATH } from "../../shared/cli/authorize.js";
import { baseUrlHint } from "../../shared/cli/base-url-hint.js";
import { checkRequestedScope } from "../../shared/cli/cycle-scopes.js";
import { NAMED_ENVIRONMENTS, settingNameWarnings } from "../../shared/cli/config.js";
import { EXIT, PiiSaltChangedError } from "../../shared/cli/errors.js";
import { openerCommand } from "../../shared/cli/open-url.js";
import { eventsFileAccessProblem, foreignStateDirProblem, stateDirAccessProblem } from "../../shared/cli/path-checks.js";
import { restrictStateDir } from "../../shared/cli/state-access.js";
import { piiSaltFingerprint } from "../../shared/bridge/pii.js";
import { TOKEN_PATH } from "../../shared/qashio/auth/oauth.js";
import { DEFAULT_LOCK_TTL_MS, refreshDeadline } from "../../shared/qashio/auth/refresh-lease.js";
import { NetworkError, QashioError } from "../../shared/qashio/errors.js";
import { docText, firstTextsSaid, numbersSaid, quotedNames, quotePattern } from "../doc-text.js";
import { PROVIDER_SPEC, specSection } from "../provider-spec.js";
import { seconds } from "../spec-gaps-section.js";
import { REQUIRED_RUN_SETTINGS, runInProcess, settingsRefusalOf as settingsRefusal } from "./helpers.js";

/** docs/local-mode.md, line breaks read as spaces. */
const page = docText("docs/local-mode.md");

/** The first group of `pattern`'s first match in the page; fails the test when the page no longer says it. */
const said = (pattern: RegExp): string => firstTextsSaid(page, pattern)[0] ?? "";

const scratch = mkdtempSync(join(tmpdir(), "local-mode-claims-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let made = 0;

/** A new directory under the scratch directory, with `mode` when given. */
function newDir(mode?: number): string {
  const dir = join(scratch, `d${++made}`);
  mkdirSync(dir);
  if (mode !== undefined) chmodSync(dir, mode);
  return dir;
}

/** The settings `run` requires, with a state directory and events file of their own, plus `env`. */
function runEnv(env: Record<string, string> = {}): Record<string, string> {
  const dir = newDir(0o700);
  return { ...REQUIRED_RUN_SETTINGS, BRIDGE_STATE_DIR: join(dir, "state"), BRIDGE_EVENTS_FILE: join(dir, "events.jsonl"), ...env };
}

/** What readLocalSettings says of `env` (see runEnv), or "accepted". */
const settingsRefusalOf = (env: Record<string, string>): string => settingsRefusal(runEnv(env), scratch);

describe("docs/local-mode.md's events file", () => {
  it("names the fix for an events file others may write, and takes one whose group may only read, as it says", () => {
    const fix = said(/the fix \(`([^`]+) <file>`, which keeps a group's read/);
    const file = join(newDir(), "events.jsonl");
    writeFileSync(file, "");
    chmodSync(file, 0o660);
    expect(eventsFileAccessProblem(file)).toContain(`\`${fix} ${file}\``);
    chmodSync(file, 0o640);
    expect(eventsFileAccessProblem(file)).toBeUndefined();
  });

  it("counts not in the way of a state directory the events file lying in it, with its rotations and recovery files", () => {
    expect(page).toContain("the events file when `BRIDGE_EVENTS_FILE` lies in it (with its rotations and `.cut-` recovery files)");
    const dir = newDir();
    // A rotation as logrotate names it and the recovery names the page gives: `<events file>.cut-<byte>` and `.cut-<byte>.2`.
    const byte = "4096";
    const recovery = quotedNames(said(/to (`<events file>\.cut-<byte>` beside it \(`\.cut-<byte>\.2`)/)).map((name) => name.replace("<events file>", "").replace("<byte>", byte));
    expect(recovery).toHaveLength(2);
    for (const name of ["events.jsonl", "events.jsonl.1", ...recovery.map((suffix) => `events.jsonl${suffix}`)]) writeFileSync(join(dir, name), "");
    expect(foreignStateDirProblem(dir, join(dir, "events.jsonl"))).toBeUndefined();
    expect(foreignStateDirProblem(dir)).toContain("events.jsonl");
  });
});

describe("docs/local-mode.md's state directory modes", () => {
  it("refuses each mode it gives as letting others write, naming the fix it gives, and a file of it with a file's fix", () => {
    const modes = said(/others may write into \(say (.*?)\), or that another user owns/).match(/\b[0-7]{4}\b/g) ?? [];
    expect(modes.length).toBeGreaterThanOrEqual(3);
    const fix = said(/the mode or owner and the fix \(`([^`]+) <dir>`; the bridge does not change/);
    for (const mode of modes) {
      const dir = newDir(Number.parseInt(mode, 8));
      expect(stateDirAccessProblem(dir), mode).toContain(`\`${fix} ${dir}\``);
    }
    const fileFix = said(/as a restored backup may carry other modes \(`([^`]+)` for a file\)/);
    const dir = newDir(0o700);
    writeFileSync(join(dir, "tokens.json"), "{}");
    chmodSync(join(dir, "tokens.json"), 0o660);
    expect(stateDirAccessProblem(dir)).toContain(`\`${fileFix} ${join(dir, "tokens.json")}\``);
  });

  it("makes a state directory others may enter the mode it says, with a warning naming it and the mode it had", () => {
    const [had = "", now = ""] = firstTextsSaid(page, /\(a copy restored with the umask's (\d{4})\) is made (\d{4}) when/);
    const dir = newDir(Number.parseInt(had, 8));
    const warnings: string[] = [];
    restrictStateDir(dir, (text) => warnings.push(text));
    expect((statSync(dir).mode & 0o7777).toString(8).padStart(4, "0")).toBe(now);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(dir);
    expect(warnings[0]).toContain(`mode ${had}`);
  });
});

describe("docs/local-mode.md's settings", () => {
  it("reports a required setting set blank in the words it quotes", () => {
    expect(settingsRefusalOf({ BRIDGE_TENANT: " " })).toContain(`BRIDGE_TENANT: ${said(/is reported "([^"]+)"/)}`);
  });

  it("names as QASHIO_BASE_URL's named environments those the code reads, in any case", () => {
    const named = quotedNames(said(/`QASHIO_BASE_URL` may also be (`production`, `eu` or `sandbox`)/));
    expect([...named].sort()).toEqual([...NAMED_ENVIRONMENTS].sort());
    expect(quotedNames(said(/named environments \((`production`, `eu`, `sandbox`)\) are read in any case/))).toEqual(named);
    for (const name of named) {
      const variable = `QASHIO_${name.toUpperCase()}_URL`;
      expect(settingsRefusalOf({ QASHIO_BASE_URL: name.toUpperCase(), [variable]: "https://named.example.com" }), name).toBe("accepted");
    }
  });

  it("refuses the base URL naming port 0 it gives as an example", () => {
    const url = said(/A URL naming port 0 \(`([^`]+)`\) is refused/);
    expect(settingsRefusalOf({ QASHIO_BASE_URL: url })).toMatch(/QASHIO_BASE_URL: .*port 0/);
  });

  it("warns of the mistyped names it gives with the nearest setting, and refuses only the two quoted paths it names", () => {
    const typos = quotedNames(said(/names no setting \(a typo such as (`\w+` or `\w+`)\)/));
    const warnings = settingNameWarnings(Object.fromEntries(typos.map((name) => [name, "redact"])));
    for (const typo of typos) expect(warnings.find((warning) => warning.startsWith(`${typo} `)), typo).toContain("BRIDGE_PII_MODE");
    const refused = quotedNames(said(/env file of docker or systemd passes them on; (`\w+` and `\w+`) so quoted are refused/));
    for (const name of refused) expect(settingsRefusalOf({ [name]: `"${join(scratch, "quoted")}"` }), name).toMatch(new RegExp(`${name}: is wrapped in quotes`));
    expect(settingsRefusalOf({ QASHIO_CLIENT_ID: '"c"' })).toBe("accepted");
    expect(settingNameWarnings({ QASHIO_CLIENT_ID: '"c"' }).join(" ")).toContain("QASHIO_CLIENT_ID is wrapped in quotes");
  });
});

describe("docs/local-mode.md's QASHIO_BASE_URL hints", () => {
  /** A failed token request the endpoint answered `status`, as the client reports it. */
  const answered = (status: number): QashioError => new QashioError(`POST ${TOKEN_PATH} answered ${status}`, { status, method: "POST", path: TOKEN_PATH });
  const refused = new NetworkError(`POST ${TOKEN_PATH} failed before a response`, { method: "POST", path: TOKEN_PATH, reason: "ECONNREFUSED" });

  it("asks whether it names the provider's API for each answer it lists, and for no other", () => {
    const statuses = numbersSaid(page, /answered as no OAuth server does \(a redirect, (\d+), (\d+), (\d+), or a body that is not JSON\)/)[0] ?? [];
    for (const status of [...statuses, 302]) expect(baseUrlHint(answered(status), "https://api.example.com"), String(status)).toContain("the provider's API?");
    expect(baseUrlHint(answered(500), "https://api.example.com")).toBe("");
  });

  it("says what it quotes of a refused loopback address, adding where the sandbox listens for the other ones only", () => {
    const quote = said(/\(`ECONNREFUSED` on .*? says "(nothing listens on HOST:PORT [^"]+)"/);
    const only = said(/adding that (it listens on 127\.0\.0\.1 only) for any other loopback address/);
    for (const [host, other] of [["localhost", false], ["127.0.0.1", false], ["127.0.0.2", true], ["[::1]", true]] as const) {
      const hint = baseUrlHint(refused, `http://${host}:4010`);
      // HOST and PORT stand for the address refused, `...` for the rest of the hint.
      expect(hint, host).toMatch(quotePattern(quote.replace(/\)$/, "").replaceAll("HOST", host).replaceAll("PORT", "4010"), / ?\.\.\./, ".*?"));
      expect(hint.includes(only), host).toBe(other);
    }
    // "a refusal elsewhere may be an outage and gets no hint"
    expect(page).toContain("a refusal elsewhere may be an outage and gets no hint");
    expect(baseUrlHint(refused, "https://api.example.com")).toBe("");
  });
});

describe("docs/local-mode.md's authorize", () => {
  it("listens for the redirect at the URI it gives, and opens the browser with the openers it names", () => {
    const uri = said(/the redirect URI `(http:\/\/127\.0\.0\.1:<port>\/[^`]+)`/);
    expect(uri.slice(uri.indexOf("<port>") + "<port>".length)).toBe(CALLBACK_PATH);
    const openers = quotedNames(said(/the browser opener \((`[^)]*`)\) gets the authorize URL/));
    const used = (["linux", "darwin", "win32"] as const).map((platform) => openerCommand("https://a.test/?state=s", platform)).map(({ command, args }) => (command === "cmd" ? args[3] : command));
    expect(used).toEqual(openers);
  });

  it("refuses a --scope joining scopes with a comma, naming each, and warns of a set lacking the scopes it names, saying what fails", () => {
    expect(page).toContain("a value joining scopes with a comma (they are separated by spaces) is refused, exit 2, naming each");
    expect(() => checkRequestedScope("cards:read,transactions:read users:read,wallet:read")).toThrow(/"cards:read,transactions:read" and "users:read,wallet:read" join scopes/);
    const [scopeA = "", whatA = "", scopeB = "", whatB = ""] = firstTextsSaid(page, /what fails without it: `([\w:]+)`, (every \w+); `([\w:]+)`, (every [\w ]+); those tokens are stored/);
    const { warnings, missing } = checkRequestedScope("transactions:read");
    expect(missing).toEqual([scopeA, scopeB]);
    const warned = warnings.join(" ");
    expect(warned).toMatch(new RegExp(`Without ${scopeA}, [^;]*${whatA.replace("every ", "")}`));
    expect(warned).toContain(`without ${scopeB}, ${whatB}`);
  });
});

describe("docs/local-mode.md's redrive", () => {
  it("refuses a state directory that does not exist with the words it quotes, exit 2", async () => {
    const quote = said(/is refused, exit 2, with ``(does not exist, [^`]*`run` uses)``/);
    const env = runEnv();
    const outcome = await runInProcess(["redrive"], { ...env, BRIDGE_STATE_DIR: join(scratch, "mistyped") }, undefined, scratch);
    expect(outcome.code).toBe(EXIT.usage);
    expect(outcome.stderr).toContain(`BRIDGE_STATE_DIR: ${join(scratch, "mistyped")} ${quote}`);
  });
});

describe("docs/local-mode.md's hash salt", () => {
  it("names the command of a switch on purpose as the changed salt's refusal names it", () => {
    const command = said(/To switch salts on purpose, run `([^`]+)` once/);
    expect(new PiiSaltChangedError("/state").message).toContain(`run \`${command}\` once`);
  });

  it("records a fingerprint of the hex digits it says", () => {
    const [[digits = 0] = []] = numbersSaid(page, /\((\d+) hex digits of HMAC-SHA256 keyed by the salt/);
    expect(piiSaltFingerprint("a salt of sixteen characters")).toMatch(new RegExp(`^[0-9a-f]{${digits}}$`));
  });
});

describe("docs/local-mode.md's shared state directories", () => {
  it("asks machines sharing one to keep their clocks as close as the token refresh lease tolerates", () => {
    const [[skew = 0] = []] = numbersSaid(page, /keep them within (\d+) s of each other/);
    // A refresh is over half-way through the lease: a contender whose clock runs ahead by the rest takes it live.
    expect(skew).toBe(seconds(DEFAULT_LOCK_TTL_MS - refreshDeadline(0, DEFAULT_LOCK_TTL_MS)));
  });
});

describe.skipIf(PROVIDER_SPEC === "")("docs/local-mode.md's quotes of the provider's spec", () => {
  it("lists as the spec's scopes those the spec says it has seen, and that the spec says its list is not complete", () => {
    const listed = quotedNames(said(/a value that is no scope the spec names \(([^)]*?): its list is not complete/));
    expect(quotedNames(specSection("5 rule 8"))).toEqual(listed);
    expect(specSection("5 rule 10")).toMatch(/^Complete list of scopes and which operation needs which scope: not shown/);
  });

  it("says of §4.2 what it says: 401 for client credentials and refresh tokens alike, a validate answering only active, no PKCE", () => {
    expect(page).toContain("(spec §4.2 answers both so)");
    const oauth = specSection("4.2");
    expect(oauth).toMatch(/`401` for [^.]*invalid client credentials, or a refresh token that is invalid/);
    const validate = said(/its `(\/oauth2\/validate)` answers only/);
    const answer = said(/answers only `(\{ active: true \})`/);
    expect(oauth).toContain(`**GET ${validate}**`);
    expect(oauth).toContain(`Response \`200\`: \`${answer}\` (boolean)`);
    expect(page).toContain("The provider's spec offers no PKCE");
    expect(PROVIDER_SPEC).not.toMatch(/code_challenge|code_verifier|PKCE/);
  });
});
