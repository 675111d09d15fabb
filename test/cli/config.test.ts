import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { parseCommand } from "../../shared/cli/args.js";
import { readAuthorizeSettings, readLocalSettings, readStateSettings, SETTINGS, settingNameWarnings } from "../../shared/cli/config.js";
import { loadEnv } from "../../shared/cli/env-file.js";
import { ConfigError } from "../../shared/cli/errors.js";
import { eventsFileAccessProblem, foreignStateDirProblem } from "../../shared/cli/path-checks.js";
import { FileLock } from "../../shared/local/file-lock.js";
import { tempDirPerTest } from "../temp-dir.js";
import { thrown } from "../thrown.js";

const SECRET = "s3cr3t-value-never-printed";
const valid = {
  QASHIO_BASE_URL: "http://127.0.0.1:9999",
  QASHIO_CLIENT_ID: "sandbox-client",
  QASHIO_CLIENT_SECRET: SECRET,
  BRIDGE_TENANT: "acme",
  QASHIO_REFRESH_TOKEN: "rt-seed",
};
/** A state directory's files as the bridge writes them: a state directory holding either is the bridge's. */
const TOKEN_SET = `${JSON.stringify({ refreshToken: "r-1" })}\n`;
const BINDING = `${JSON.stringify({ baseUrl: valid.QASHIO_BASE_URL, clientId: valid.QASHIO_CLIENT_ID, tenant: valid.BRIDGE_TENANT })}\n`;

function issuesOf(env: Record<string, string>): ConfigError {
  try {
    readLocalSettings(env, "/work");
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("readLocalSettings", () => {
  it("applies the documented defaults", () => {
    const settings = readLocalSettings(valid, "/work");
    expect(settings).toMatchObject({
      baseUrl: "http://127.0.0.1:9999",
      tenant: "acme",
      stateDir: "/work/.state",
      eventsFile: "/work/events.jsonl",
      piiMode: "redact",
      eventSource: "qashio.bridge",
      emitCardCreated: false,
      cardDetails: false,
      cycleBudgetMs: 300_000,
      logLevel: "info",
    });
    expect(settings.refreshToken).toBe("rt-seed");
  });

  it("reads the card switches in any case", () => {
    expect(readLocalSettings({ ...valid, BRIDGE_EMIT_CARD_CREATED: "TRUE", BRIDGE_CARD_DETAILS: "True" }, "/work")).toMatchObject({
      emitCardCreated: true,
      cardDetails: true,
    });
  });

  it("reads each card switch into its own setting", () => {
    expect(readLocalSettings({ ...valid, BRIDGE_EMIT_CARD_CREATED: "true" }, "/work")).toMatchObject({ emitCardCreated: true, cardDetails: false });
    expect(readLocalSettings({ ...valid, BRIDGE_CARD_DETAILS: "true" }, "/work")).toMatchObject({ emitCardCreated: false, cardDetails: true });
  });

  it("takes false for a card switch, as it takes true", () => {
    expect(readLocalSettings({ ...valid, BRIDGE_EMIT_CARD_CREATED: "false", BRIDGE_CARD_DETAILS: "FALSE" }, "/work")).toMatchObject({
      emitCardCreated: false,
      cardDetails: false,
    });
  });

  it("resolves a named provider environment through its variable, in any case", () => {
    for (const name of ["eu", "EU", "Eu"]) {
      expect(readLocalSettings({ ...valid, QASHIO_BASE_URL: name, QASHIO_EU_URL: "https://eu.provider.test/" }, "/work"), name).toMatchObject({
        baseUrl: "https://eu.provider.test",
        // The variable a failure's hint names: the one holding the URL.
        baseUrlSetting: "QASHIO_EU_URL",
      });
    }
    expect(readLocalSettings(valid, "/work").baseUrlSetting).toBe("QASHIO_BASE_URL");
    expect(readAuthorizeSettings({ ...valid, QASHIO_BASE_URL: "eu", QASHIO_EU_URL: "https://eu.provider.test" }, tmpdir()).baseUrlSetting).toBe("QASHIO_EU_URL");
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "Sandbox" }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: 'is "sandbox", which needs QASHIO_SANDBOX_URL to be set' },
    ]);
  });

  // Port 0 is no port a server listens on (a listener given 0 takes any free one): accepted, every call failed with
  // ECONNREFUSED, and the hint then said to start the sandbox with `--port 0`, which listens elsewhere.
  it.each(["http://127.0.0.1:0", "https://api.example.com:0/", "http://localhost:00"])("refuses a QASHIO_BASE_URL on port 0 (%s) at once, as no address a server listens on", (url) => {
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: url }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: "names port 0, on which no server listens: give the port the provider (or the sandbox) listens on; or use one of production, eu, sandbox" },
    ]);
  });

  it("names the variable a named environment needs when it is unset", () => {
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "sandbox" }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: 'is "sandbox", which needs QASHIO_SANDBOX_URL to be set' },
    ]);
  });

  it("names the named environment's variable and its real problem when that URL carries credentials or a query", () => {
    const error = issuesOf({ ...valid, QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "https://u:pw-value@h.test/?k=x" });
    expect(error.issues).toEqual([{ setting: "QASHIO_SANDBOX_URL", problem: 'must not carry credentials (user:password@) (QASHIO_BASE_URL is "sandbox")' }]);
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "https://h.test/?k=x" }).issues).toEqual([
      { setting: "QASHIO_SANDBOX_URL", problem: 'must not carry a query string or fragment (QASHIO_BASE_URL is "sandbox")' },
    ]);
    expect(error.message).not.toContain("pw-value");
  });

  it("refuses a base URL ending in an empty query or fragment (`?`, `#`): every request path would land in it", () => {
    // new URL() reports an empty `?` or `#` as no search or hash, but keeps it in href: "https://h.test/?/oauth2/token".
    for (const url of ["https://provider.test/?", "https://provider.test/v1#", "https://provider.test/v1?#"]) {
      expect(issuesOf({ ...valid, QASHIO_BASE_URL: url }).issues).toEqual([
        { setting: "QASHIO_BASE_URL", problem: "must not carry a query string or fragment; or use one of production, eu, sandbox" },
      ]);
    }
  });

  it("refuses a base URL holding the API's own path (a pasted endpoint), naming the setting, before any provider call", () => {
    const problem = "must not hold the API's own path (/public/v1 or /oauth2/token): give the address it follows, such as https://api.example.com";
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "https://provider.test/public/v1" }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: `${problem}; or use one of production, eu, sandbox` },
    ]);
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "eu", QASHIO_EU_URL: "https://provider.test/oauth2/token" }).issues).toEqual([
      { setting: "QASHIO_EU_URL", problem: `${problem} (QASHIO_BASE_URL is "eu")` },
    ]);
  });

  it("refuses a base URL pasted from a sign-in page (ending /oauth2, /oauth2/validate or /oauth2/authorize), before any provider call", () => {
    const problem =
      "must not end with an OAuth path (/oauth2, /oauth2/validate or /oauth2/authorize), as an address pasted from a sign-in page does: give the address the API's paths follow, such as https://api.example.com";
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "https://provider.test/oauth2/authorize" }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: `${problem}; or use one of production, eu, sandbox` },
    ]);
    for (const url of ["https://provider.test/oauth2", "https://provider.test/oauth2/validate"]) {
      expect(issuesOf({ ...valid, QASHIO_BASE_URL: "eu", QASHIO_EU_URL: url }).issues).toEqual([
        { setting: "QASHIO_EU_URL", problem: `${problem} (QASHIO_BASE_URL is "eu")` },
      ]);
    }
  });

  it("rejects a base URL carrying credentials without echoing them", () => {
    const error = issuesOf({ ...valid, QASHIO_BASE_URL: "https://user:pw@provider.test" });
    expect(error.issues.map((i) => i.setting)).toEqual(["QASHIO_BASE_URL"]);
    expect(error.message).not.toContain("pw");
  });

  it("bounds BRIDGE_CYCLE_BUDGET by what a Node timer can wait", () => {
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "600h" }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: "must be at most 2147483647 ms (about 24.8 days)" },
    ]);
    // Beyond what a number holds (Infinity) it is still a duration too long, not one of the wrong form.
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: `${"9".repeat(310)}h` }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: "must be at most 2147483647 ms (about 24.8 days)" },
    ]);
  });

  it("refuses a BRIDGE_CYCLE_BUDGET with a unit given twice or out of order, as the options do", () => {
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "5m5m" }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: "invalid duration: m is given twice; give each unit once, largest first (e.g. 1h30m)" },
    ]);
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "30s4m" }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: "invalid duration: m comes after s; give each unit once, largest first (e.g. 1h30m)" },
    ]);
    expect(readLocalSettings({ ...valid, BRIDGE_CYCLE_BUDGET: "4m30s" }, "/work").cycleBudgetMs).toBe(270_000);
  });

  it("tells a BRIDGE_CYCLE_BUDGET in days (1d) which units it takes, without echoing the value", () => {
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "1d" }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: "invalid duration: a unit other than ms, s, m or h; e.g. 30s, 5m, 1h, 1m30s" },
    ]);
  });

  it("tells a BRIDGE_CYCLE_BUDGET without a unit that it lacks one, without echoing the value", () => {
    const error = issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "300" });
    expect(error.issues).toEqual([{ setting: "BRIDGE_CYCLE_BUDGET", problem: "invalid duration: no unit; put s (seconds) or m (minutes) after the number" }]);
    expect(error.message).not.toContain("300");
  });

  it("tells a negative BRIDGE_CYCLE_BUDGET without a unit its minimum, not that it lacks a unit, without echoing the value", () => {
    const error = issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: "-300" });
    expect(error.issues).toEqual([{ setting: "BRIDGE_CYCLE_BUDGET", problem: "must be at least 1s" }]);
    expect(error.message).not.toContain("300");
  });

  // One function words the problem for the setting and the options: only the value the option quotes differs.
  it.each(["soon", "5 minutes", "1h1h", "30s1h"])("words a BRIDGE_CYCLE_BUDGET of %j as --interval's refusal, without the value", (text) => {
    const option = (() => {
      try {
        parseCommand(["run", "--interval", text]);
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    })();
    expect(option.startsWith(`--interval: invalid duration "${text}": `)).toBe(true);
    expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: text }).issues).toEqual([
      { setting: "BRIDGE_CYCLE_BUDGET", problem: option.replace(`--interval: invalid duration "${text}": `, "invalid duration: ") },
    ]);
  });

  it("refuses a BRIDGE_CYCLE_BUDGET under one second: every cycle would stop before its first page, forever", () => {
    for (const budget of ["0s", "500ms"]) {
      expect(issuesOf({ ...valid, BRIDGE_CYCLE_BUDGET: budget }).issues).toEqual([{ setting: "BRIDGE_CYCLE_BUDGET", problem: "must be at least 1s" }]);
    }
    expect(readLocalSettings({ ...valid, BRIDGE_CYCLE_BUDGET: "1s" }, "/work").cycleBudgetMs).toBe(1_000);
  });

  it("names every missing required setting in one error", () => {
    const error = issuesOf({});
    expect(error.issues.map((i) => i.setting)).toEqual(["QASHIO_BASE_URL", "QASHIO_CLIENT_ID", "QASHIO_CLIENT_SECRET", "BRIDGE_TENANT", "QASHIO_REFRESH_TOKEN"]);
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain("QASHIO_CLIENT_SECRET: is required");
  });

  it("requires https for the provider and the authorize screen unless the host is a loopback address", () => {
    const problem = "must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)";
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "http://provider.test" }).issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: `${problem}; or use one of production, eu, sandbox` },
    ]);
    expect(issuesOf({ ...valid, QASHIO_BASE_URL: "eu", QASHIO_EU_URL: "http://eu.provider.test" }).issues).toEqual([
      { setting: "QASHIO_EU_URL", problem: `${problem} (QASHIO_BASE_URL is "eu")` },
    ]);
    const authorize = (() => {
      try {
        readAuthorizeSettings({ ...valid, QASHIO_AUTHORIZE_URL: "http://auth.provider.test" }, tmpdir());
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(authorize?.issues).toEqual([{ setting: "QASHIO_AUTHORIZE_URL", problem }]);
    expect(readLocalSettings({ ...valid, QASHIO_BASE_URL: "http://[::1]:4010" }, "/work").baseUrl).toBe("http://[::1]:4010");
  });

  it("takes a PII salt holding a line break as it is: the binding refuses a salt that changes, and refused, no value would give the old pseudonyms back", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cli-control-salt-"));
    try {
      // As a deployment's .env had it before control characters were refused: `\n` in double quotes, a line break.
      await writeFile(join(dir, ".env"), `BRIDGE_PII_SALT="0123456789abcdef\\nx"\n`);
      const env = await loadEnv({ ...valid, BRIDGE_PII_MODE: "hash" }, dir);
      const settings = readLocalSettings(env, dir);
      expect([settings.piiMode, settings.piiSalt]).toEqual(["hash", "0123456789abcdef\nx"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a setting holding a line break or another control character, without echoing it", async () => {
    // In .env a `\n` inside double quotes is a line break (parseEnv's rule, as dotenv's): a secret or salt holding a
    // backslash and an n was silently another one, and a URL or path lost or gained characters.
    const dir = await mkdtemp(join(tmpdir(), "cli-control-"));
    try {
      await writeFile(join(dir, ".env"), `QASHIO_CLIENT_SECRET="${SECRET}\\nx"\nBRIDGE_PII_SALT='0123456789abcdef\\nx'\n`);
      const env = await loadEnv({ ...valid, QASHIO_CLIENT_SECRET: "", BRIDGE_PII_MODE: "hash", BRIDGE_EVENT_SOURCE: "acme.\u0000bridge", BRIDGE_TENANT: "ac\u007fme" }, dir);
      const error = thrown(() => readLocalSettings(env, dir), ConfigError);
      const problem = "holds a line break or another control character (in .env, \\n inside double quotes is a line break: single-quote the value to keep a backslash)";
      expect(error.issues).toEqual([
        { setting: "QASHIO_CLIENT_SECRET", problem },
        { setting: "BRIDGE_TENANT", problem },
        { setting: "BRIDGE_EVENT_SOURCE", problem },
      ]);
      expect(error.message).not.toContain(SECRET);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a refresh token holding a line break or another control character without echoing it", () => {
    const token = "rt-never-printed-0123";
    for (const bad of [`${token}\u0007`, `${token}\nx`]) {
      const error = issuesOf({ ...valid, QASHIO_REFRESH_TOKEN: bad });
      expect(error.issues.map((i) => i.setting)).toContain("QASHIO_REFRESH_TOKEN");
      expect(error.message).not.toContain(token);
    }
  });

  it("refuses each C0 control character to the last (U+001F), DEL and each C1 control character, but takes a space, a tilde and a no-break space", () => {
    // U+0085 is a line break (NEL) to some readers; U+009B a one-character CSI to some terminals.
    for (const character of ["\u0001", "\u001f", "\u007f", "\u0080", "\u0085", "\u009b", "\u009f"]) {
      expect(issuesOf({ ...valid, BRIDGE_TENANT: `ac${character}me` }).issues.map((i) => i.problem), JSON.stringify(character)).toEqual([
        expect.stringMatching(/^holds a line break or another control character/),
      ]);
    }
    expect(readLocalSettings({ ...valid, QASHIO_CLIENT_ID: "client id~\u00a0é" }, "/work").clientId).toBe("client id~\u00a0é");
  });

  it("names each invalid setting without echoing its value", () => {
    const error = issuesOf({
      ...valid,
      QASHIO_BASE_URL: "ftp://files",
      BRIDGE_TENANT: "acme corp",
      BRIDGE_PII_MODE: "scramble",
      BRIDGE_EMIT_CARD_CREATED: "yes",
      BRIDGE_CARD_DETAILS: "1",
      BRIDGE_EVENT_SOURCE: "aws.qashio",
      BRIDGE_CYCLE_BUDGET: "soon",
      BRIDGE_LOG_LEVEL: "loud",
    });
    expect(error.issues.map((i) => i.setting)).toEqual([
      "QASHIO_BASE_URL",
      "BRIDGE_TENANT",
      "BRIDGE_PII_MODE",
      "BRIDGE_EVENT_SOURCE",
      "BRIDGE_EMIT_CARD_CREATED",
      "BRIDGE_CARD_DETAILS",
      "BRIDGE_CYCLE_BUDGET",
      "BRIDGE_LOG_LEVEL",
    ]);
    for (const value of ["ftp://files", "acme corp", "scramble", "aws.qashio", "soon", "loud", SECRET]) {
      expect(error.message).not.toContain(value);
    }
  });

  it("reads the choice settings in any case, as the booleans", () => {
    expect(readLocalSettings({ ...valid, BRIDGE_PII_MODE: "Redact", BRIDGE_LOG_LEVEL: "DEBUG" }, "/w")).toMatchObject({ piiMode: "redact", logLevel: "debug" });
  });

  it("requires a salt of at least 16 characters in hash mode", () => {
    expect(issuesOf({ ...valid, BRIDGE_PII_MODE: "hash" }).issues).toEqual([
      { setting: "BRIDGE_PII_SALT", problem: "is required when BRIDGE_PII_MODE is hash" },
    ]);
    expect(issuesOf({ ...valid, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "short" }).issues.map((i) => i.setting)).toEqual(["BRIDGE_PII_SALT"]);
    expect(readLocalSettings({ ...valid, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "0123456789abcdef" }, "/w").piiMode).toBe("hash");
  });

  it("asks a salt of hash mode alone: full and redact go without one (README: required `with hash`)", () => {
    for (const mode of ["full", "redact"]) {
      expect(readLocalSettings({ ...valid, BRIDGE_PII_MODE: mode }, "/w")).toMatchObject({ piiMode: mode, piiSalt: undefined });
    }
  });

  it("refuses a salt one character short, naming the minimum but never the salt", () => {
    const error = issuesOf({ ...valid, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "salt-15-chars-x" });
    expect(error.issues).toEqual([{ setting: "BRIDGE_PII_SALT", problem: "must be at least 16 characters" }]);
    expect(error.message).not.toContain("salt-15-chars-x");
    // Refused in any mode: a short salt set now would only surface on a later switch to hash.
    expect(issuesOf({ ...valid, BRIDGE_PII_SALT: "salt-15-chars-x" }).issues).toEqual([{ setting: "BRIDGE_PII_SALT", problem: "must be at least 16 characters" }]);
  });

  it("refuses a salt holding a lone UTF-16 surrogate, naming the setting but never the salt", () => {
    // As UTF-8 (the HMAC key's bytes) a lone surrogate becomes U+FFFD: "…\ud800", "…\udfff" and "…\ufffd" would be one salt.
    for (const salt of ["0123456789abcdef\ud800", "\udfff0123456789abcdef"]) {
      const error = issuesOf({ ...valid, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: salt });
      expect(error.issues).toEqual([{ setting: "BRIDGE_PII_SALT", problem: "must be well-formed text: it holds a lone UTF-16 surrogate (\\ud800-\\udfff), which hashes as U+FFFD" }]);
      expect(error.message).not.toContain("0123456789abcdef");
    }
    expect(readLocalSettings({ ...valid, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "0123456789abcdef\ud83d\ude00" }, "/w").piiMode).toBe("hash");
  });

  it("says what a choice setting takes", () => {
    expect(issuesOf({ ...valid, BRIDGE_PII_MODE: "scramble", BRIDGE_LOG_LEVEL: "loud" }).issues).toEqual([
      { setting: "BRIDGE_PII_MODE", problem: "must be one of full, redact, hash" },
      { setting: "BRIDGE_LOG_LEVEL", problem: "must be one of debug, info, warn, error" },
    ]);
  });

  it("says what a card switch takes", () => {
    expect(issuesOf({ ...valid, BRIDGE_EMIT_CARD_CREATED: "yes", BRIDGE_CARD_DETAILS: "1" }).issues).toEqual([
      { setting: "BRIDGE_EMIT_CARD_CREATED", problem: "must be true or false" },
      { setting: "BRIDGE_CARD_DETAILS", problem: "must be true or false" },
    ]);
  });

  it("takes a tenant id of up to 64 characters starting with a letter or digit (README), and no other", () => {
    const long = "a".repeat(64);
    expect(readLocalSettings({ ...valid, BRIDGE_TENANT: long }, "/w").tenant).toBe(long);
    expect(readLocalSettings({ ...valid, BRIDGE_TENANT: "9acme_eu-1" }, "/w").tenant).toBe("9acme_eu-1");
    for (const tenant of [`${long}a`, "-acme", "_acme"]) {
      expect(issuesOf({ ...valid, BRIDGE_TENANT: tenant }).issues, tenant).toEqual([
        { setting: "BRIDGE_TENANT", problem: "must be 1-64 letters, digits, '-' or '_', starting with a letter or digit" },
      ]);
    }
  });

  it("takes an event source by the tenants file's rule (EventBridge's Source, at most 256 characters), so local mode takes what a stack would", () => {
    const long = `q.${"a".repeat(254)}`;
    expect(readLocalSettings({ ...valid, BRIDGE_EVENT_SOURCE: long }, "/w").eventSource).toBe(long);
    for (const source of [`${long}a`, "qashio bridge", "-qashio.bridge", "qashio/bridge"]) {
      expect(issuesOf({ ...valid, BRIDGE_EVENT_SOURCE: source }).issues, source).toEqual([
        { setting: "BRIDGE_EVENT_SOURCE", problem: "must be an EventBridge source such as qashio.bridge" },
      ]);
    }
    expect(issuesOf({ ...valid, BRIDGE_EVENT_SOURCE: "aws.qashio" }).issues).toEqual([{ setting: "BRIDGE_EVENT_SOURCE", problem: "must not start with aws." }]);
    // What every tenant of the stack may use is taken here too.
    for (const source of ["qashio.bridge", "acme_1.qashio-bridge", "1.x", "Qashio.Bridge"]) {
      expect(readLocalSettings({ ...valid, BRIDGE_EVENT_SOURCE: source }, "/w").eventSource, source).toBe(source);
    }
    // A tab is a control character, named as such (once).
    expect(issuesOf({ ...valid, BRIDGE_EVENT_SOURCE: "qashio\tbridge" }).issues.map((i) => i.problem)).toEqual([expect.stringMatching(/^holds a line break or another control character/)]);
  });

  it("treats a blank value as unset", () => {
    expect(issuesOf({ ...valid, QASHIO_CLIENT_ID: "   " }).issues.map((i) => i.setting)).toEqual(["QASHIO_CLIENT_ID"]);
  });

  it("says a required setting set blank is set but blank, and one absent is not set", () => {
    const { BRIDGE_TENANT: _, ...withoutTenant } = valid;
    expect(issuesOf({ ...withoutTenant, QASHIO_CLIENT_ID: "", QASHIO_CLIENT_SECRET: " \t " }).issues).toEqual([
      { setting: "QASHIO_CLIENT_ID", problem: "is set but blank" },
      { setting: "QASHIO_CLIENT_SECRET", problem: "is set but blank" },
      { setting: "BRIDGE_TENANT", problem: "is required but not set" },
    ]);
  });

  it("resolves relative paths against the working directory and keeps absolute ones", () => {
    const settings = readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "var/state", BRIDGE_EVENTS_FILE: "/tmp/e.jsonl" }, "/srv/app");
    expect(settings.stateDir).toBe("/srv/app/var/state");
    expect(settings.eventsFile).toBe("/tmp/e.jsonl");
  });
});

describe("readLocalSettings on the file system", () => {
  let dir: string;
  tempDirPerTest("cli-paths-", (made) => (dir = made));
  beforeEach(async () => {
    await writeFile(join(dir, "plain-file"), "x");
    await mkdir(join(dir, "a-directory"));
  });

  const settingsError = (env: Record<string, string>): ConfigError => {
    try {
      readLocalSettings(env, dir);
    } catch (error) {
      if (error instanceof ConfigError) return error;
      throw error;
    }
    throw new Error("expected a ConfigError");
  };

  it("applies to conform-pii the defaults run has (log level, PII mode, cycle budget)", () => {
    expect(readStateSettings({ BRIDGE_TENANT: "acme", BRIDGE_STATE_DIR: join(dir, "a-directory") }, dir)).toMatchObject({
      logLevel: "info",
      piiMode: "redact",
      cycleBudgetMs: 300_000,
    });
  });

  it("refuses conform-pii a state directory that does not exist, and takes one of other files, which it makes no state directory of", async () => {
    const missing = join(dir, "missing");
    expect(() => readStateSettings({ BRIDGE_TENANT: "acme", BRIDGE_STATE_DIR: missing }, dir)).toThrow(
      `BRIDGE_STATE_DIR: ${missing} does not exist, so it holds nothing to re-mask: set it to the directory \`run\` uses`,
    );
    expect(existsSync(missing)).toBe(false);
    // Only the commands that write a state directory's files refuse one of the user's (foreignStateDirProblem).
    await writeFile(join(dir, "a-directory", "notes.txt"), "the user's own\n");
    expect(readStateSettings({ BRIDGE_TENANT: "acme", BRIDGE_STATE_DIR: join(dir, "a-directory") }, dir).stateDir).toBe(join(dir, "a-directory"));
  });

  it("names a state directory it cannot even stat (a link loop) once, asking no token of it", async () => {
    await symlink(join(dir, "loop"), join(dir, "loop"));
    const { QASHIO_REFRESH_TOKEN: _seed, ...withoutSeed } = valid;
    expect(settingsError({ ...withoutSeed, BRIDGE_STATE_DIR: "loop" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `cannot be checked (ELOOP: a symbolic link on the way leads back to itself, or too many links are chained): ${join(dir, "loop")}` },
    ]);
  });

  it("asks no QASHIO_REFRESH_TOKEN of a state directory refused for a control character: its path is not the one meant", () => {
    const { QASHIO_REFRESH_TOKEN: _seed, ...noSeed } = valid;
    expect(settingsError({ ...noSeed, BRIDGE_STATE_DIR: join(dir, "st\u0001ate") }).issues.map((issue) => issue.setting)).toEqual(["BRIDGE_STATE_DIR"]);
  });

  it("names only the missing state directory to redrive, asking no token of a directory that holds nothing", () => {
    const { QASHIO_REFRESH_TOKEN: _seed, ...noSeed } = valid;
    const missing = join(dir, "missing");
    const error = thrown(() => readLocalSettings({ ...noSeed, BRIDGE_STATE_DIR: missing }, dir, { holds: "no quarantine to re-drive" }), ConfigError);
    expect(error.issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `${missing} does not exist, so it holds no quarantine to re-drive: set it to the directory \`run\` uses` },
    ]);
  });

  it("names a state directory under a regular file", () => {
    const error = settingsError({ ...valid, BRIDGE_STATE_DIR: "plain-file/state" });
    expect(error.issues).toEqual([{ setting: "BRIDGE_STATE_DIR", problem: `cannot be created: ${join(dir, "plain-file")} is a file, not a directory` }]);
    expect(error.exitCode).toBe(2);
  });

  it("refuses an events file that is the state directory or one of its entries, but not a file of its own there", () => {
    const problem = `must not be BRIDGE_STATE_DIR (${join(dir, "state")}) or one of the files and directories the bridge keeps there`;
    for (const events of ["state/tokens.json", "state/binding.json", "state", "./state/../state/snapshots/x.jsonl", "state/locks"]) {
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: events }).issues, events).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    for (const events of ["state/events.jsonl", "state-events.jsonl", "state/..events.jsonl"]) {
      expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: events }, dir).eventsFile, events).toBe(join(dir, events));
    }
  });

  it("refuses an events file that reaches the state directory's entries or .env through a symbolic link: appending destroyed the tokens", async () => {
    await mkdir(join(dir, "state"));
    await writeFile(join(dir, "state", "tokens.json"), TOKEN_SET);
    await symlink(join(dir, "state", "tokens.json"), join(dir, "events-link.jsonl"));
    await symlink(join(dir, "state"), join(dir, "state-link"));
    await writeFile(join(dir, ".env"), "");
    await symlink(join(dir, ".env"), join(dir, "env-link.jsonl"));
    const problem = `must not be BRIDGE_STATE_DIR (${join(dir, "state")}) or one of the files and directories the bridge keeps there`;
    for (const events of ["events-link.jsonl", "state-link/binding.json", "state-link/snapshots/x.jsonl"]) {
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: events }).issues, events).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "env-link.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `must not be the settings file ${join(dir, ".env")}` },
    ]);
    // A file of its own beside the entries, named through the link, is fine.
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: "state-link/events.jsonl" }, dir).eventsFile).toBe(join(dir, "state-link", "events.jsonl"));
  });

  it("refuses an events file that is a link to a state entry not made yet: the first append through it created that entry", async () => {
    // A fresh state directory (a first run from QASHIO_REFRESH_TOKEN): the link dangles until the token save makes
    // tokens.json, and the cycle's events then went into the token file (exit 3 from the next run on).
    await mkdir(join(dir, "state"));
    await symlink(join(dir, "state", "tokens.json"), join(dir, "events-link.jsonl"));
    await symlink(join(dir, "chain-link.jsonl"), join(dir, "events-chain.jsonl"));
    await symlink("state/binding.json", join(dir, "chain-link.jsonl"));
    await symlink(join(dir, "state-link", "tokens.json"), join(dir, "through-dir.jsonl"));
    await symlink(join(dir, "state"), join(dir, "state-link"));
    await symlink(join(dir, ".env"), join(dir, "env-link.jsonl"));
    const problem = `must not be BRIDGE_STATE_DIR (${join(dir, "state")}) or one of the files and directories the bridge keeps there`;
    for (const events of ["events-link.jsonl", "events-chain.jsonl", "through-dir.jsonl"]) {
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: events }).issues, events).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "env-link.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `must not be the settings file ${join(dir, ".env")}` },
    ]);
    // A link to a file of its own not made yet stays fine, as does one that loops (its stat names it).
    await symlink(join(dir, "state", "events.jsonl"), join(dir, "own-link.jsonl"));
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: "own-link.jsonl" }, dir).eventsFile).toBe(join(dir, "own-link.jsonl"));
  });

  it("follows a relative link not made yet from the directory it really lies in, as the kernel does, under a home that is a link", async () => {
    // A home directory that is a link (/home/u -> /data/u): `..` in a link inside it leads to /data, not /home.
    await mkdir(join(dir, "data", "u"), { recursive: true });
    await mkdir(join(dir, "data", "shared", "state"), { recursive: true });
    await mkdir(join(dir, "home"));
    await symlink(join(dir, "data", "u"), join(dir, "home", "u"));
    await symlink("../shared/state/tokens.json", join(dir, "home", "u", "events.jsonl"));
    const state = join(dir, "data", "shared", "state");
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: state, BRIDGE_EVENTS_FILE: "home/u/events.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `must not be BRIDGE_STATE_DIR (${state}) or one of the files and directories the bridge keeps there` },
    ]);
    // Where the link does not lead into the state directory, it stays fine (a lexical `..` would have named /home/shared).
    await mkdir(join(dir, "home", "shared", "state"), { recursive: true });
    await symlink("../shared/events.jsonl", join(dir, "home", "u", "own.jsonl"));
    const home = join(dir, "home", "shared", "state");
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: home, BRIDGE_EVENTS_FILE: "home/u/own.jsonl" }, dir).eventsFile).toBe(join(dir, "home", "u", "own.jsonl"));
  });

  it("refuses an events file that the state directory lies under: creating the state directory makes it a directory", () => {
    // Neither exists yet: each path alone is creatable, but the first cycle then publishes into a directory (EISDIR, exit 1).
    for (const [events, state, resolved] of [["out", "out/state", "out/state"], ["out", "out/a/b", "out/a/b"], ["./out/", "out/../out/state", "out/state"]] as const) {
      const problem =
        `is ${join(dir, "out")}, a path BRIDGE_STATE_DIR (${join(dir, resolved)}) lies under, so creating the state directory makes it a directory, ` +
        `not a file: name a file for the events, such as ${join(dir, "out", "events.jsonl")}`;
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: state, BRIDGE_EVENTS_FILE: events }).issues, `${events} ${state}`).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    // A sibling whose name only starts with the events file's is fine.
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "out-state", BRIDGE_EVENTS_FILE: "out" }, dir).eventsFile).toBe(join(dir, "out"));
  });

  it("refuses in one message an events file that is the directory the state directory lies in, made already, naming a file to use instead", async () => {
    // The state directory made, or only its parent: either way the events file's path is a directory, said once.
    for (const state of ["out/state", "out/a/b"]) {
      await mkdir(join(dir, state), { recursive: true });
      const problem = `is ${join(dir, "out")}, the directory BRIDGE_STATE_DIR (${join(dir, state)}) lies in, not a file: name a file for the events, such as ${join(dir, "out", "events.jsonl")}`;
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: state, BRIDGE_EVENTS_FILE: "out" }).issues, state).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    // A state directory named like the file suggested gets another name suggested.
    await mkdir(join(dir, "out", "events.jsonl"));
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "out/events.jsonl", BRIDGE_EVENTS_FILE: "out" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: expect.stringMatching(/, not a file: name a file for the events, such as .*\/out\/bridge-events\.jsonl$/) },
    ]);
  });

  it("leaves an events file that is a regular file already to the state directory set under it, which alone is misplaced", () => {
    // The file can hold events; it is the state directory that cannot be made under it, and only that is said.
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "plain-file/state", BRIDGE_EVENTS_FILE: "plain-file" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `cannot be created: ${join(dir, "plain-file")} is a file, not a directory` },
    ]);
  });

  it("refuses the settings file .env as the events file: the events appended to it would make every later run refuse it", () => {
    const problem = `must not be the settings file ${join(dir, ".env")}`;
    for (const events of [".env", "./.env", `${dir}/.env`]) {
      expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: events }).issues, events).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    }
    expect(readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: ".env.jsonl" }, dir).eventsFile).toBe(join(dir, ".env.jsonl"));
  });

  it("refuses a path starting with ~, which nothing expands here, naming the setting", () => {
    const problem = "starts with ~, which is not expanded here: use an absolute path (or $HOME in a shell)";
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "~/bridge-state" }).issues).toContainEqual({ setting: "BRIDGE_STATE_DIR", problem });
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "~" }).issues).toContainEqual({ setting: "BRIDGE_EVENTS_FILE", problem });
    expect(readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: "x~/events.jsonl" }, dir).eventsFile).toBe(join(dir, "x~", "events.jsonl"));
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "~/s" }, dir)).toThrow(/BRIDGE_STATE_DIR: starts with ~/);
    // A shell's ~user form is no home directory here either: it would make a directory named "~bridge" in the working one.
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "~bridge/state" }).issues).toContainEqual({ setting: "BRIDGE_STATE_DIR", problem });
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "~bridge" }).issues).toContainEqual({ setting: "BRIDGE_EVENTS_FILE", problem });
    // The one problem of that setting: the path it was not meant to be is not checked further (say for a token in it).
    const { QASHIO_REFRESH_TOKEN: _seed, ...unseeded } = valid;
    expect(settingsError({ ...unseeded, BRIDGE_STATE_DIR: "~/x", BRIDGE_EVENTS_FILE: "~" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem },
      { setting: "BRIDGE_EVENTS_FILE", problem },
    ]);
  });

  it("checks no events file against a refused state directory, nor a refused events file against the state directory: neither path is the one meant", () => {
    const problem = "starts with ~, which is not expanded here: use an absolute path (or $HOME in a shell)";
    // Read literally, `./~/state/tokens.json` is an entry of `~/state`, and `./~` the path `~/state` lies under.
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "~/state", BRIDGE_EVENTS_FILE: "./~/state/tokens.json" }).issues).toEqual([{ setting: "BRIDGE_STATE_DIR", problem }]);
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "./~/state", BRIDGE_EVENTS_FILE: "~" }).issues).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
  });

  it("refuses a path holding $NAME or ${NAME}, which nothing expands in .env, naming the setting", () => {
    // Written in .env (or quoted in a shell) as a docker-compose file would have it: it would make a directory "$HOME".
    const problem = "holds $NAME or ${NAME}, which is not expanded here (only a shell expands it, not .env): use the path itself";
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "$HOME/bridge-state" }).issues).toContainEqual({ setting: "BRIDGE_STATE_DIR", problem });
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "out/${BRIDGE_TENANT}.jsonl" }).issues).toContainEqual({ setting: "BRIDGE_EVENTS_FILE", problem });
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "${XDG_STATE_HOME}/s" }, dir)).toThrow(/BRIDGE_STATE_DIR: holds \$NAME/);
    // A name may start with an underscore, as a shell's does.
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "$_CACHE/events.jsonl" }).issues).toContainEqual({ setting: "BRIDGE_EVENTS_FILE", problem });
    // A `$` that starts no variable name is a character like any other.
    expect(readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: "out$/events-$1.jsonl" }, dir).eventsFile).toBe(join(dir, "out$", "events-$1.jsonl"));
    const { QASHIO_REFRESH_TOKEN: _seed, ...unseeded } = valid;
    expect(settingsError({ ...unseeded, BRIDGE_STATE_DIR: "$HOME/x" }).issues).toEqual([{ setting: "BRIDGE_STATE_DIR", problem }]);
    expect(readdirSync(dir)).not.toContain("$HOME");
  });

  it("refuses a path wrapped in quotes (docker --env-file keeps them), rather than make a directory named by a quote, and warns of it no more", () => {
    // Taken as it is, "/data/state" is a relative path: a directory `"` in the working directory (a container's, lost
    // with it, tokens and snapshots included) would hold the state, and an events file nobody reads the events.
    const problem = "is wrapped in quotes, which would be taken as part of the path (an env file of docker or systemd keeps them): remove them";
    const { QASHIO_REFRESH_TOKEN: _seed, ...unseeded } = valid;
    expect(settingsError({ ...unseeded, BRIDGE_STATE_DIR: '"/data/state"', BRIDGE_EVENTS_FILE: "'/data/events.jsonl'" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem },
      { setting: "BRIDGE_EVENTS_FILE", problem },
    ]);
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "`s`" }, dir)).toThrow(/BRIDGE_STATE_DIR: is wrapped in quotes/);
    expect(readdirSync(dir).filter((name) => /["'`]/.test(name))).toEqual([]);
    // A quote inside a path is a character like any other.
    expect(readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: `o'neil/"events".jsonl` }, dir).eventsFile).toBe(join(dir, "o'neil", '"events".jsonl'));
    // Refused, so not also warned of.
    expect(settingNameWarnings({ BRIDGE_STATE_DIR: '"/data/state"', BRIDGE_TENANT: '"acme"' })).toEqual([
      "BRIDGE_TENANT is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
    ]);
  });

  it("refuses an events file named with a trailing slash (a directory meant), rather than create a file by that name", () => {
    const problem = "ends with /, which names a directory: name the file in it, such as out/events.jsonl";
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "out/" }).issues).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: `${join(dir, "a-directory")}/` }).issues).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem }]);
    expect(readdirSync(dir)).not.toContain("out");
  });

  it("names an entry of the state directory of the wrong kind (tokens.json a directory, locks a file), exit 2", async () => {
    await mkdir(join(dir, "state", "tokens.json"), { recursive: true });
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `${join(dir, "state", "tokens.json")} must be a file, but is a directory` },
    ]);
    await rm(join(dir, "state", "tokens.json"), { recursive: true });
    await writeFile(join(dir, "state", "binding.json"), BINDING, { mode: 0o600 });
    await writeFile(join(dir, "state", "locks"), "");
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `${join(dir, "state", "locks")} must be a directory, but is a file` },
    ]);
  });

  it("names a file of the state directory that is no regular file (a named pipe), which reading it would block on for ever, exit 2", async () => {
    // Opened blocking, a pipe nothing writes to hung the run in its first read, deaf to Ctrl-C (see the .env pipe).
    await mkdir(join(dir, "state"));
    for (const name of ["tokens.json", "binding.json"]) {
      const fifo = join(dir, "state", name);
      execFileSync("mkfifo", [fifo]);
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state" }).issues, name).toEqual([
        { setting: "BRIDGE_STATE_DIR", problem: `${fifo} must be a regular file, but is a pipe` },
      ]);
      await rm(fifo);
    }
  });

  it("names a tokens.json or binding.json that is a symbolic link: a save renames a file over the link, leaving its target behind", async () => {
    // The target of a linked tokens.json kept the refresh token the first refresh spent, and the new one went into the
    // state directory instead, unseen: whatever reads the target next presents a spent token, which revokes the family.
    await mkdir(join(dir, "state"));
    await mkdir(join(dir, "elsewhere"), { mode: 0o700 });
    for (const name of ["tokens.json", "binding.json"]) {
      const target = join(dir, "elsewhere", name);
      await writeFile(target, name === "tokens.json" ? TOKEN_SET : BINDING, { mode: 0o600 });
      await symlink(target, join(dir, "state", name));
      expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "state" }).issues, name).toEqual([
        {
          setting: "BRIDGE_STATE_DIR",
          problem:
            `${join(dir, "state", name)} is a symbolic link (to ${target}): the bridge replaces this file by a rename, which puts a file ` +
            "in the link's place and leaves the target as it was; move the file into the state directory, or link the state directory itself",
        },
      ]);
      await rm(join(dir, "state", name));
    }
    // The state directory itself may be a link: its entries are then written where it leads.
    await symlink(join(dir, "elsewhere"), join(dir, "state-link"));
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state-link" }, dir).stateDir).toBe(join(dir, "state-link"));
  });

  it.runIf(existsSync("/proc/self"))("names an events file its directory's permissions allow but the filesystem refuses (/proc), not leaving a probe behind", () => {
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "/proc/qashio-bridge-events.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: "cannot be created (ENOENT): /proc/qashio-bridge-events.jsonl" },
    ]);
    readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: "fresh-events.jsonl" }, dir);
    expect(existsSync(join(dir, "fresh-events.jsonl"))).toBe(false);
  });

  it("accepts an events file that is a link to a file not created yet, probing beside its target, never through the link", async () => {
    // Opening the link itself exclusively would fail (EEXIST): only a probe of its own name tells creatable apart.
    await mkdir(join(dir, "logs"));
    await symlink(join(dir, "logs", "events.jsonl"), join(dir, "linked-events.jsonl"));
    expect(readLocalSettings({ ...valid, BRIDGE_EVENTS_FILE: "linked-events.jsonl" }, dir).eventsFile).toBe(join(dir, "linked-events.jsonl"));
    expect(existsSync(join(dir, "logs", "events.jsonl"))).toBe(false);
    expect((await readdir(dir)).filter((name) => name.startsWith("linked-events.jsonl"))).toEqual(["linked-events.jsonl"]);
    expect(await readdir(join(dir, "logs"))).toEqual([]);
  });

  it("refuses an events file that is a link into a directory that does not exist: every append failed, as only the file's own path has its directories made", async () => {
    await symlink(join(dir, "gone", "logs", "events.jsonl"), join(dir, "dangling-events.jsonl"));
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "dangling-events.jsonl" }).issues).toEqual([
      {
        setting: "BRIDGE_EVENTS_FILE",
        problem:
          `is a symbolic link to ${join(dir, "gone", "logs", "events.jsonl")}, whose directory ${join(dir, "gone", "logs")} does not exist ` +
          "(the bridge makes the directories of the setting's own path only): create it, or set the file's own path",
      },
    ]);
    expect(existsSync(join(dir, "gone"))).toBe(false);
  });

  it("refuses an events file that is a link into a regular file's path, naming the file where the link points", async () => {
    await symlink(join(dir, "plain-file", "events.jsonl"), join(dir, "filed-events.jsonl"));
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "filed-events.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `cannot be created: ${join(dir, "plain-file")} (where its symbolic link points) is a file, not a directory` },
    ]);
  });

  it("names a state directory that is a regular file", () => {
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "plain-file" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `must be a directory, but ${join(dir, "plain-file")} is a file` },
    ]);
  });

  it("names an events file that is a directory, a device or a pipe, or lies under a regular file", () => {
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "a-directory" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `must be a regular file, but ${join(dir, "a-directory")} is a directory` },
    ]);
    // Every cycle would publish, then fail at the fsync these refuse, and never acknowledge.
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "/dev/null" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: "must be a regular file, but /dev/null is a character device (such as /dev/null or a terminal)" },
    ]);
    const fifo = join(dir, "events.fifo");
    execFileSync("mkfifo", [fifo]);
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: fifo }).issues).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem: `must be a regular file, but ${fifo} is a pipe` }]);
    expect(settingsError({ ...valid, BRIDGE_EVENTS_FILE: "plain-file/events.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_EVENTS_FILE", problem: `cannot be created: ${join(dir, "plain-file")} is a file, not a directory` },
    ]);
  });

  it("tries a missing state directory's first level and removes it again: a creatable one is no problem and is not left behind", async () => {
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "new/state", BRIDGE_EVENTS_FILE: "out/events.jsonl" }, dir).stateDir).toBe(join(dir, "new", "state"));
    expect(existsSync(join(dir, "new"))).toBe(false);
    expect(existsSync(join(dir, "out"))).toBe(false);
  });

  it("names a state directory that is a link to a missing target (an unmounted volume), which mkdir cannot follow", async () => {
    await symlink(join(dir, "unmounted", "volume"), join(dir, "dangling"));
    expect(settingsError({ ...valid, BRIDGE_STATE_DIR: "dangling" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `cannot be created: ${join(dir, "dangling")} is a link to a missing target` },
    ]);
  });

  it("turns a path it cannot even stat (a symbolic link loop) into a problem of its setting, not an unexpected error", async () => {
    await symlink(join(dir, "loop"), join(dir, "loop"));
    const tokens = join(dir, "a-directory", "tokens.json");
    await symlink(tokens, tokens);
    const { QASHIO_REFRESH_TOKEN: _seed, ...withoutSeed } = valid;
    expect(settingsError({ ...withoutSeed, BRIDGE_STATE_DIR: "a-directory", BRIDGE_EVENTS_FILE: "loop/events.jsonl" }).issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: `cannot be checked (ELOOP: a symbolic link on the way leads back to itself, or too many links are chained): ${tokens}` },
      { setting: "BRIDGE_EVENTS_FILE", problem: `cannot be checked (ELOOP: a symbolic link on the way leads back to itself, or too many links are chained): ${join(dir, "loop", "events.jsonl")}` },
    ]);
  });

  it.runIf(existsSync("/proc/self"))("names a state directory or events file on a pseudo filesystem at once, where a recursive mkdir would loop forever", () => {
    const error = settingsError({ ...valid, BRIDGE_STATE_DIR: "/proc/qashio-bridge-test/state", BRIDGE_EVENTS_FILE: "/proc/qashio-bridge-test/events.jsonl" });
    expect(error.issues).toEqual([
      { setting: "BRIDGE_STATE_DIR", problem: "cannot be created: /proc/qashio-bridge-test cannot be made in /proc (ENOENT)" },
      { setting: "BRIDGE_EVENTS_FILE", problem: "cannot be created: /proc/qashio-bridge-test cannot be made in /proc (ENOENT)" },
    ]);
  });

  it("asks for QASHIO_REFRESH_TOKEN only while the state directory holds no token, pointing to authorize", async () => {
    const { QASHIO_REFRESH_TOKEN: _seed, ...withoutSeed } = valid;
    expect(settingsError({ ...withoutSeed, BRIDGE_STATE_DIR: "state" }).issues).toEqual([
      {
        setting: "QASHIO_REFRESH_TOKEN",
        problem: `is required while the state directory (${join(dir, "state")}) holds no token; or run \`npm run bridge -- authorize\` first`,
      },
    ]);
    // A state directory that exists is no token: only its tokens.json is.
    await mkdir(join(dir, "state"));
    expect(settingsError({ ...withoutSeed, BRIDGE_STATE_DIR: "state" }).issues.map((issue) => issue.setting)).toEqual(["QASHIO_REFRESH_TOKEN"]);
    await writeFile(join(dir, "state", "tokens.json"), TOKEN_SET);
    expect(readLocalSettings({ ...withoutSeed, BRIDGE_STATE_DIR: "state" }, dir).refreshToken).toBeUndefined();
  });

  it("names every file-system problem together with the other bad settings in one error", () => {
    const { QASHIO_REFRESH_TOKEN: _seed, ...withoutSeed } = valid;
    const error = settingsError({ ...withoutSeed, BRIDGE_TENANT: "acme corp", BRIDGE_EVENTS_FILE: "a-directory", BRIDGE_STATE_DIR: "fresh-state" });
    expect(error.issues.map((i) => i.setting)).toEqual(["BRIDGE_TENANT", "BRIDGE_EVENTS_FILE", "QASHIO_REFRESH_TOKEN"]);
  });
});

describe("a state directory that is an ordinary directory of other files", () => {
  let dir: string;
  tempDirPerTest("cli-foreign-state-", (made) => (dir = made));

  const problemOf = (env: Record<string, string>): string[] => {
    try {
      readLocalSettings(env, dir);
    } catch (error) {
      if (error instanceof ConfigError) return error.issues.filter((i) => i.setting === "BRIDGE_STATE_DIR").map((i) => i.problem);
      throw error;
    }
    return [];
  };
  const refusal = (state: string, listed: string) =>
    `${state} is not a state directory of the bridge (it holds no binding.json, no token set in tokens.json and no snapshot store in snapshots) but holds ${listed}: ` +
    "the bridge would write its state among them and make the directory private (mode 0700), so it will not use it; point BRIDGE_STATE_DIR at an empty or new directory, " +
    "or at the one the bridge used before";
  const fill = async (at: string, names: readonly string[]) => {
    await mkdir(at, { recursive: true });
    for (const name of names) await writeFile(join(at, name), "the user's own\n");
  };

  it("refuses the working directory, a home or project directory, naming a few of the entries in the way, and changes nothing there", async () => {
    await fill(dir, ["package.json", "README.md", "notes.txt", "report.pdf"]);
    await mkdir(join(dir, "src"));
    await chmod(dir, 0o755);

    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "." })).toEqual([refusal(dir, "README.md, notes.txt, package.json and 2 more")]);
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "." }, dir)).toThrow(refusal(dir, "README.md, notes.txt, package.json and 2 more"));
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
    expect((await readdir(dir)).sort()).toEqual(["README.md", "notes.txt", "package.json", "report.pdf", "src"]);
  });

  it("names all four entries in the way but the last, counting it as one more", async () => {
    await fill(join(dir, "state"), ["a.txt", "b.txt", "c.txt", "d.txt"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state" })).toEqual([refusal(join(dir, "state"), "a.txt, b.txt, c.txt and 1 more")]);
  });

  it("names a single entry in the way, escaped so a name cannot forge a line", async () => {
    await fill(join(dir, "state"), ["notes\nBRIDGE_TENANT: fine.txt"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state" })).toEqual([refusal(join(dir, "state"), "notes\\nBRIDGE_TENANT: fine.txt")]);
  });

  it("takes an empty directory, and one holding only lost+found, placeholder dotfiles, and the events file set inside it with its rotations and recovery files", async () => {
    const state = join(dir, "state");
    await mkdir(state);
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state" }, dir).stateDir).toBe(state);
    await mkdir(join(state, "lost+found"));
    await fill(state, [".gitkeep", ".keep", ".gitignore", ".DS_Store", "events.jsonl", "events.jsonl.1", "events.jsonl.2.gz", "events.jsonl.cut-1024", "events.jsonl.cut-1024.2", "events.jsonl-20260301"]);
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: "state/events.jsonl" }, dir).stateDir).toBe(state);
    // An interrupted first write of the binding leaves its temp file; an events file in a subdirectory, that directory.
    const nested = join(dir, "nested");
    await fill(join(nested, "out"), ["events.jsonl"]);
    await fill(nested, ["binding.json.4242.0a1b2c3d.tmp"]);
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: "nested", BRIDGE_EVENTS_FILE: "nested/out/events.jsonl" }, dir).stateDir).toBe(nested);
    // The directory's name starts no rotations: a file named after it is in the way.
    await fill(nested, ["out.1"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "nested", BRIDGE_EVENTS_FILE: "nested/out/events.jsonl" })).toEqual([refusal(nested, "out.1")]);
    // Set elsewhere, the same files are no events of this bridge's: they are in the way.
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: "events.jsonl" })).toEqual([
      refusal(state, "events.jsonl, events.jsonl-20260301, events.jsonl.1 and 3 more"),
    ]);
  });

  it("takes a directory holding only what Windows Explorer and macOS Finder leave, there and in the bridge's directories, but not an AppleDouble file of another's", async () => {
    // Explorer's thumbnail cache and folder settings; Finder's localized-name marker, and the AppleDouble twin of its
    // .DS_Store on a volume without extended attributes (FAT, exFAT, SMB).
    const state = join(dir, "state");
    await fill(state, ["Thumbs.db", "desktop.ini", ".localized", ".DS_Store", "._.DS_Store"]);
    await fill(join(state, "snapshots"), ["Thumbs.db", "desktop.ini", "._.DS_Store"]);
    for (const sub of ["", "snapshots"]) await chmod(join(state, sub), 0o700);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state" })).toEqual([]);
    // The twin of a file of the user's is theirs, as that file is; so is a name the file managers do not write.
    const shared = join(dir, "shared");
    await fill(shared, ["._report.pdf", "._", "Thumbs.db.bak", ".DS_Store"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "shared" })).toEqual([refusal(shared, "._, ._report.pdf, Thumbs.db.bak")]);
  });

  it("lets authorize take a state directory holding only the events file run is set to write there, as run does", async () => {
    // Made ahead as README says (for a consumer's group), before the first authorize: not in the way of either command.
    const state = join(dir, "state");
    await fill(state, ["events.jsonl", "events.jsonl.1"]);
    await chmod(state, 0o700);
    const env = { ...valid, BRIDGE_STATE_DIR: "state", BRIDGE_EVENTS_FILE: "state/events.jsonl" };
    expect(readLocalSettings(env, dir).stateDir).toBe(state);
    expect(readAuthorizeSettings(env, dir).stateDir).toBe(state);
    // Set elsewhere (the default, events.jsonl in the working directory), the same files are in the way.
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "state" }, dir)).toThrow(refusal(state, "events.jsonl, events.jsonl.1"));
  });

  it("refuses a user's project whose only dotfiles are its own (.git, .env): only placeholders are no one's files", async () => {
    for (const [name, directory] of [[".git", true], [".env", false], [".ssh", true]] as const) {
      const state = join(dir, `project${name}`);
      await fill(state, [".DS_Store"]);
      if (directory) await fill(join(state, name), ["config"]);
      else await writeFile(join(state, name), "API_KEY=secret\n");
      expect(problemOf({ ...valid, BRIDGE_STATE_DIR: `project${name}` }), name).toEqual([refusal(state, name)]);
    }
    // In a directory of the bridge's name too: a repository's snapshots/ is no empty store.
    const repo = join(dir, "repo");
    await fill(join(repo, "snapshots", ".git"), ["HEAD"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "repo" })).toEqual([refusal(repo, "snapshots")]);
  });

  it("refuses a directory of the user's holding a snapshots, locks or quarantine directory, or a tokens.json, of its own", async () => {
    // A photo folder, a project with design tokens: the bridge's names, none of its state.
    const photos = join(dir, "photos");
    await fill(join(photos, "snapshots"), ["IMG_0001.jpg", "IMG_0002.jpg"]);
    await fill(photos, ["holiday.jpg"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "photos" })).toEqual([refusal(photos, "holiday.jpg, snapshots")]);
    // Alone, a directory of the bridge's name holding files of another's is in the way too.
    const alone = join(dir, "alone");
    await fill(join(alone, "locks"), ["front-door.txt"]);
    await fill(join(alone, "quarantine"), ["sick-note.json"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "alone" })).toEqual([refusal(alone, "locks, quarantine")]);
    const design = join(dir, "design");
    await mkdir(design);
    await writeFile(join(design, "tokens.json"), JSON.stringify({ color: { primary: { value: "#0a84ff" } } }));
    await mkdir(join(design, "snapshots"));
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "design" })).toEqual([refusal(design, "tokens.json")]);
    // A tokens.json past what a token set takes is another's, JSON or not; a lease's name is the bridge's in locks/ only.
    const big = join(dir, "big");
    await mkdir(big);
    await writeFile(join(big, "tokens.json"), "x".repeat(64 * 1024 + 1));
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "big" })).toEqual([refusal(big, "tokens.json")]);
    const leased = join(dir, "leased");
    await fill(join(leased, "snapshots"), ["cycle.lock"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "leased" })).toEqual([refusal(leased, "snapshots")]);
  });

  it("refuses a locks directory holding files only named like leases: generation 0 spelled out, a leading zero, a name with a space", async () => {
    for (const name of ["cycle.lock.0", "cycle.lock.01", "old cycle.lock"]) {
      const state = join(dir, `state-${name.replaceAll(" ", "-")}`);
      await fill(join(state, "locks"), [name]);
      expect(problemOf({ ...valid, BRIDGE_STATE_DIR: state })).toEqual([refusal(state, "locks")]);
    }
  });

  it("takes a tokens.json of exactly 64 KiB, the most read to tell a token set, as the bridge's torn one: a byte more is another's", async () => {
    const edge = join(dir, "edge");
    await mkdir(edge);
    await writeFile(join(edge, "tokens.json"), "x".repeat(64 * 1024));
    expect(foreignStateDirProblem(edge)).toBeUndefined();
  });

  it("refuses a file of the user's named as one of the bridge's directories (locks, quarantine): no directory, so nothing the bridge left", async () => {
    const state = join(dir, "state");
    await fill(state, ["locks", "quarantine"]);
    expect(foreignStateDirProblem(state)).toBe(refusal(state, "locks, quarantine"));
  });

  it("refuses a temp file of the user's (notes.tmp): only a temp file of a state file's write is the bridge's", async () => {
    const state = join(dir, "state");
    await fill(state, ["tokens.json.4242.0a1b2c3d.tmp", "binding.json.4242.0a1b2c3d.tmp"]);
    expect(foreignStateDirProblem(state)).toBeUndefined();
    await fill(state, ["notes.tmp"]);
    expect(foreignStateDirProblem(state)).toBe(refusal(state, "notes.tmp"));
  });

  it("takes a directory holding only the events file set inside it through a symbolic link, either path linked", async () => {
    const real = join(dir, "real");
    await fill(real, ["events.jsonl", "events.jsonl.1"]);
    const via = join(dir, "via");
    await symlink(real, via);
    expect(foreignStateDirProblem(real, join(via, "events.jsonl"))).toBeUndefined();
    expect(foreignStateDirProblem(via, join(real, "events.jsonl"))).toBeUndefined();
    // Another file there by the link's path is still in the way.
    expect(foreignStateDirProblem(real, join(via, "other.jsonl"))).toBe(refusal(real, "events.jsonl, events.jsonl.1"));
  });

  it("takes a state directory the current version made, by its binding or its snapshot store, with a file of the user's beside them", async () => {
    const bound = join(dir, "bound");
    await fill(bound, ["notes.txt"]);
    await writeFile(join(bound, "binding.json"), BINDING, { mode: 0o600 });
    const stored = join(dir, "stored");
    await fill(stored, ["notes.txt"]);
    await fill(join(stored, "snapshots"), []);
    await writeFile(join(stored, "snapshots", "store-id"), "0123456789abcdef", { mode: 0o600 });
    for (const state of [bound, stored]) await chmod(state, 0o700);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "bound" })).toEqual([]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "stored" })).toEqual([]);
  });

  it("takes a state directory an older version left (before binding.json and snapshots/store-id): its token set, or its snapshot segments", async () => {
    // The layout of every version before a9a7fa6 (bindings) and 1f11e52 (store ids): tokens.json, segments, records, leases.
    const old = join(dir, "old");
    await fill(old, ["notes.txt"]);
    await writeFile(join(old, "tokens.json"), `${JSON.stringify({ accessToken: "a-1", accessTokenExpiresAt: 1_790_000_000_000, refreshToken: "r-1" })}\n`, { mode: 0o600 });
    await fill(join(old, "snapshots"), []);
    await writeFile(join(old, "snapshots", "seg-000000000001-0a1b2c3d.log"), "[]\n", { mode: 0o600 });
    await fill(join(old, "quarantine"), []);
    await writeFile(join(old, "quarantine", "txn-1.json"), "{}\n", { mode: 0o600 });
    await fill(join(old, "locks"), []);
    await writeFile(join(old, "locks", "qashio-token-refresh.lock"), "{}\n", { mode: 0o600 });
    // Its tokens.json removed (to sign in again): the segments still mark it, and the binding check takes it from there.
    const signedOut = join(dir, "signed-out");
    await fill(join(signedOut, "snapshots"), []);
    await writeFile(join(signedOut, "snapshots", "seg-000000000007-ffee0011.log"), "[]\n", { mode: 0o600 });
    for (const state of [old, join(old, "snapshots"), join(old, "quarantine"), join(old, "locks"), signedOut, join(signedOut, "snapshots")]) await chmod(state, 0o700);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "old" })).toEqual([]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "signed-out" })).toEqual([]);
    expect(readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: "old" }, dir).stateDir).toBe(old);
  });

  it("takes an older version's directory whose tokens.json is no JSON (torn, emptied, edited by hand): what follows names what is wrong, not the directory another's", async () => {
    // No binding.json (before bindings) and no segments (a tenant that listed nothing yet): the token file is all it holds.
    for (const [name, text] of [["torn", '{"refreshToken":"r-1'], ["emptied", ""], ["unquoted", "{refreshToken: r-1}\n"]] as const) {
      const state = join(dir, name);
      await fill(join(state, "snapshots"), []);
      await fill(join(state, "locks"), []);
      await writeFile(join(state, "tokens.json"), text, { mode: 0o600 });
      for (const sub of ["", "snapshots", "locks"]) await chmod(join(state, sub), 0o700);
      expect(problemOf({ ...valid, BRIDGE_STATE_DIR: name }), name).toEqual([]);
    }
    // JSON of another's (a design-token file) is still no token set of the bridge's.
    const design = join(dir, "design");
    await mkdir(design, { mode: 0o700 });
    await writeFile(join(design, "tokens.json"), JSON.stringify({ spacing: { small: { value: "4px" } } }));
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "design" })).toEqual([refusal(design, "tokens.json")]);
  });

  it("takes a directory whose snapshots or locks cannot be listed (a link loop) as the bridge's: the entries check names what is wrong there", async () => {
    // A snapshots/ that cannot be listed counts as state: a file of the user's beside it is no reason to refuse.
    const looped = join(dir, "looped");
    await fill(looped, ["notes.txt"]);
    await symlink("snapshots", join(looped, "snapshots"));
    expect(foreignStateDirProblem(looped)).toBeUndefined();
    // A locks/ that cannot be listed, alone, is not in the way.
    const locked = join(dir, "locked");
    await mkdir(locked);
    await symlink("locks", join(locked, "locks"));
    expect(foreignStateDirProblem(locked)).toBeUndefined();
  });

  it("takes a directory holding only what an older version's first run left before its first token save: empty directories, leases, temp files", async () => {
    const state = join(dir, "state");
    await fill(join(state, "snapshots"), []);
    await fill(join(state, "quarantine"), [".DS_Store"]);
    await fill(join(state, "locks"), ["cycle.lock.1.4242.0a1b2c3d.tmp"]);
    // Leases as the lock names them (a name URI-encoded; a later generation), not as this test spells them.
    const lock = new FileLock(state);
    // "cycle" taken twice: released, its lease is taken again as the next generation (cycle.lock.1).
    for (const name of ["cycle", "qashio-token-refresh", "cycle:acme/eu", "cycle"]) await (await lock.tryAcquire(name, 60_000))?.release();
    expect(await readdir(join(state, "locks"))).toContain("cycle.lock.1");
    expect((await readdir(join(state, "locks"))).length).toBeGreaterThan(3);
    for (const sub of ["", "snapshots", "quarantine", "locks"]) await chmod(join(state, sub), 0o700);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state" })).toEqual([]);
    // A file of the user's beside them is in the way: nothing there is state of the bridge's.
    await fill(state, ["notes.txt"]);
    expect(problemOf({ ...valid, BRIDGE_STATE_DIR: "state" })).toEqual([refusal(state, "notes.txt")]);
  });
});

describe("a state directory other local users could write into", () => {
  let dir: string;
  let state: string;
  tempDirPerTest("cli-state-access-", (made) => (dir = made));
  beforeEach(async () => {
    state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
  });

  const issuesFor = (read: () => unknown): ConfigError => {
    try {
      read();
    } catch (error) {
      if (error instanceof ConfigError) return error;
      throw error;
    }
    throw new Error("expected a ConfigError");
  };
  const runIssues = () => issuesFor(() => readLocalSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir));
  const replaced = "another local user could replace the tokens, binding or snapshots there, so the bridge will not use it";
  const modeOf = async (path: string) => (await stat(path)).mode & 0o7777;

  it.runIf(process.platform !== "win32")("refuses one writable by others or by its group, exit 2, naming the fix and leaving the mode alone", async () => {
    for (const [mode, by] of [
      [0o777, "its group and others (mode 0777)"],
      [0o703, "others (mode 0703)"],
      [0o770, "its group (mode 0770)"],
      [0o775, "its group (mode 0775)"],
    ] as const) {
      await chmod(state, mode);
      const error = runIssues();
      expect(error.issues, by).toEqual([{ setting: "BRIDGE_STATE_DIR", problem: `is writable by ${by}: ${state}; ${replaced}: run \`chmod 700 ${state}\`` }]);
      expect(error.exitCode).toBe(2);
      expect(await modeOf(state)).toBe(mode);
    }
  });

  it.runIf(process.platform !== "win32")("refuses a sticky world-writable one (as /tmp is): others may still create the files it lacks", async () => {
    await chmod(state, 0o1777);
    expect(runIssues().issues).toEqual([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `is writable by its group and others (mode 1777; the sticky bit still lets them create files in it): ${state}; ${replaced}: run \`chmod 700 ${state}\``,
      },
    ]);
    expect(await modeOf(state)).toBe(0o1777);
  });

  it.runIf(process.platform !== "win32")("accepts one only its owner may write (0700, 0755, 0750, 0711)", async () => {
    for (const mode of [0o700, 0o755, 0o750, 0o711]) {
      await chmod(state, mode);
      expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir).stateDir, mode.toString(8)).toBe(state);
    }
  });

  it.runIf(process.platform !== "win32")("refuses the directories and files in it that others may write (a restored backup), naming the one", async () => {
    await mkdir(join(state, "snapshots"), { mode: 0o700 });
    await chmod(join(state, "snapshots"), 0o777);
    expect(runIssues().issues).toEqual([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `is writable by its group and others (mode 0777): ${join(state, "snapshots")}; ${replaced}: run \`chmod 700 ${join(state, "snapshots")}\``,
      },
    ]);
    await chmod(join(state, "snapshots"), 0o700);
    const segment = join(state, "snapshots", "seg-000000000001-0123abcd.log");
    await writeFile(segment, "x", { mode: 0o600 });
    await chmod(segment, 0o646);
    expect(runIssues().issues).toEqual([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `is writable by others (mode 0646): ${segment}; another local user could rewrite it, so the bridge will not use it: run \`chmod 600 ${segment}\``,
      },
    ]);
    await chmod(segment, 0o644);
    const tokens = join(state, "tokens.json");
    await writeFile(tokens, "{}", { mode: 0o600 });
    await chmod(tokens, 0o620);
    expect(runIssues().issues).toEqual([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `is writable by its group (mode 0620): ${tokens}; another local user could rewrite it, so the bridge will not use it: run \`chmod 600 ${tokens}\``,
      },
    ]);
    await chmod(tokens, 0o600);
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir).stateDir).toBe(state);
    // Left out: a lease (a forged one only holds a cycle off until it expires) and a temp file (never read: swept).
    await mkdir(join(state, "locks"), { mode: 0o700 });
    await writeFile(join(state, "locks", "cycle.lock"), "{}", { mode: 0o600 });
    await writeFile(join(state, "snapshots", "seg-000000000002-0123abcd.log.tmp"), "x", { mode: 0o600 });
    for (const file of [join(state, "locks", "cycle.lock"), join(state, "snapshots", "seg-000000000002-0123abcd.log.tmp")]) await chmod(file, 0o666);
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir).stateDir).toBe(state);
  });

  it.runIf(process.platform !== "win32")("refuses it for authorize and conform-pii too, before any provider call", async () => {
    await chmod(state, 0o777);
    const problem = `is writable by its group and others (mode 0777): ${state}; ${replaced}: run \`chmod 700 ${state}\``;
    expect(issuesFor(() => readAuthorizeSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir)).issues).toEqual([{ setting: "BRIDGE_STATE_DIR", problem }]);
    expect(issuesFor(() => readStateSettings({ BRIDGE_TENANT: "acme", BRIDGE_STATE_DIR: state }, dir)).issues).toEqual([{ setting: "BRIDGE_STATE_DIR", problem }]);
  });

  it.runIf(process.getuid?.() === 0)("refuses one owned by another user (staged as root, who may chown)", async () => {
    await chown(state, 1001, 1001);
    expect(runIssues().issues).toEqual([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `is owned by uid 1001, not by you (uid 0): ${state}; ${replaced}: run \`sudo chown -R 0 ${state}\` (or use a state directory of your own)`,
      },
    ]);
  });

  it("skips the check on Windows, whose modes say nothing of who may write", async () => {
    const platform = Object.getOwnPropertyDescriptor(process, "platform")!;
    Object.defineProperty(process, "platform", { ...platform, value: "win32" });
    try {
      await chmod(state, 0o777);
      expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: state }, dir).stateDir).toBe(state);
    } finally {
      Object.defineProperty(process, "platform", platform);
    }
  });
});

describe("an events file other local users could read or write", () => {
  let dir: string;
  let events: string;
  tempDirPerTest("cli-events-access-", (made) => (dir = made));
  beforeEach(async () => {
    events = join(dir, "events.jsonl");
    await writeFile(events, "", { mode: 0o600 });
  });

  const issuesOf = (path: string): ConfigError => {
    try {
      readLocalSettings({ ...valid, BRIDGE_STATE_DIR: join(dir, "state"), BRIDGE_EVENTS_FILE: path }, dir);
    } catch (error) {
      if (error instanceof ConfigError) return error;
      throw error;
    }
    throw new Error("expected a ConfigError");
  };
  const forged = "another local user could forge or delete the events consumers read, or read them all (cardholder data), so the bridge will not use it";
  const uid = process.geteuid?.() ?? 0;

  it.runIf(process.platform !== "win32")("refuses one writable by its group or others, exit 2, naming the fix chmod go-w and leaving the mode alone", async () => {
    for (const [mode, by] of [
      [0o666, "its group and others (mode 0666)"],
      [0o602, "others (mode 0602)"],
      [0o660, "its group (mode 0660)"],
    ] as const) {
      await chmod(events, mode);
      const error = issuesOf(events);
      expect(error.issues, by).toEqual([{ setting: "BRIDGE_EVENTS_FILE", problem: `is writable by ${by}: ${events}; ${forged}: run \`chmod go-w ${events}\`` }]);
      expect(error.exitCode).toBe(2);
      expect((await stat(events)).mode & 0o7777).toBe(mode);
    }
  });

  it.runIf(process.platform !== "win32")("accepts one its group or others may only read (chmod 640 for a consumer's group), and a directory others may write", async () => {
    for (const mode of [0o600, 0o640]) {
      await chmod(events, mode);
      expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: join(dir, "state"), BRIDGE_EVENTS_FILE: events }, dir).eventsFile, mode.toString(8)).toBe(events);
    }
    // The directory above is not checked, as the state directory's are not; a file not made yet is created 0600.
    await mkdir(join(dir, "shared"), { mode: 0o1777 });
    await chmod(join(dir, "shared"), 0o1777);
    const fresh = join(dir, "shared", "events.jsonl");
    expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: join(dir, "state"), BRIDGE_EVENTS_FILE: fresh }, dir).eventsFile).toBe(fresh);
  });

  it.runIf(process.getuid?.() === 0)("refuses one owned by another user, also through a symbolic link, naming the path set (staged as root, who may chown)", async () => {
    await chown(events, 65_534, 65_534);
    await chmod(events, 0o644);
    const link = join(dir, "events-link.jsonl");
    await symlink(events, link);
    for (const path of [events, link]) {
      expect(issuesOf(path).issues, path).toEqual([
        {
          setting: "BRIDGE_EVENTS_FILE",
          problem: `is owned by uid 65534, not by you (uid ${uid}): ${path}; ${forged}: run \`sudo chown ${uid} ${path}\` (or use an events file of your own)`,
        },
      ]);
    }
    await chmod(events, 0o666);
    expect(issuesOf(link).issues).toEqual([
      {
        setting: "BRIDGE_EVENTS_FILE",
        problem:
          `is owned by uid 65534, not by you (uid ${uid}) and is writable by its group and others (mode 0666): ${link}; ${forged}: ` +
          `run \`sudo chown ${uid} ${link} && chmod go-w ${link}\` (or use an events file of your own)`,
      },
    ]);
  });

  it.runIf(process.platform !== "win32")("leaves a path it cannot stat (a symbolic link loop) to the events file's own check, which names it", async () => {
    const loop = join(dir, "loop.jsonl");
    await symlink("loop.jsonl", loop);
    expect(eventsFileAccessProblem(loop)).toBeUndefined();
  });

  it("skips the check on Windows, whose modes say nothing of who may write", async () => {
    const platform = Object.getOwnPropertyDescriptor(process, "platform")!;
    Object.defineProperty(process, "platform", { ...platform, value: "win32" });
    try {
      await chmod(events, 0o666);
      expect(readLocalSettings({ ...valid, BRIDGE_STATE_DIR: join(dir, "state"), BRIDGE_EVENTS_FILE: events }, dir).eventsFile).toBe(events);
    } finally {
      Object.defineProperty(process, "platform", platform);
    }
  });
});

describe("settingNameWarnings", () => {
  it("suggests the setting of the other prefix for a name given under the wrong one (QASHIO_TENANT, BRIDGE_BASE_URL)", () => {
    expect(settingNameWarnings({ QASHIO_TENANT: "acme", BRIDGE_BASE_URL: "https://p.test", qashio_state_dir: "/s" })).toEqual([
      "BRIDGE_BASE_URL is not a setting (did you mean QASHIO_BASE_URL?); see `npm run bridge -- help`",
      "QASHIO_TENANT is not a setting (did you mean BRIDGE_TENANT?); see `npm run bridge -- help`",
      "qashio_state_dir is not a setting (did you mean BRIDGE_STATE_DIR?); see `npm run bridge -- help`",
    ]);
  });

  it("warns of a prefixed variable that names no setting, suggesting the near one, never echoing a value", () => {
    const warnings = settingNameWarnings({ BRIDGE_PII_MOD: "hash-secret-value", QASHIO_CLIENTID: "x", BRIDGE_SOMETHING_ELSE: "1", PATH: "/bin" });
    expect(warnings).toEqual([
      "BRIDGE_PII_MOD is not a setting (did you mean BRIDGE_PII_MODE?); see `npm run bridge -- help`",
      "BRIDGE_SOMETHING_ELSE is not a setting; see `npm run bridge -- help`",
      "QASHIO_CLIENTID is not a setting (did you mean QASHIO_CLIENT_ID?); see `npm run bridge -- help`",
    ]);
    expect(warnings.join("\n")).not.toContain("hash-secret-value");
  });

  it("warns of a setting whose whole value is quoted (docker --env-file and systemd keep the quotes), naming it, never the value", () => {
    const warnings = settingNameWarnings({ QASHIO_CLIENT_SECRET: '"s3cret-value"', QASHIO_BASE_URL: "'https://api.test'", BRIDGE_TENANT: "acme", BRIDGE_PII_MODE: '"' });
    expect(warnings).toEqual([
      "QASHIO_BASE_URL is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
      "QASHIO_CLIENT_SECRET is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
    ]);
    expect(warnings.join("\n")).not.toContain("s3cret-value");
  });

  it("warns of a setting that is just a pair of quotes: `NAME=\"\"` in a docker or systemd env file sets it to the two quote characters, not blank", () => {
    expect(settingNameWarnings({ BRIDGE_PII_SALT: '""', QASHIO_REFRESH_TOKEN: "''" })).toEqual([
      "BRIDGE_PII_SALT is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
      "QASHIO_REFRESH_TOKEN is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
    ]);
  });

  it("never quotes a name that is no variable name: Node's parseEnv glues a line without = (value included) onto the next name", () => {
    const glued = { "QASHIO_CLIENT_SECRET: ClientS3cret\nBRIDGE_TENANT": "acme", "BRIDGE_PII_SALT SaltS3cret": "x", BRIDGE_PII_MOD: "hash" };
    const warnings = settingNameWarnings(glued);
    expect(warnings).toEqual(["BRIDGE_PII_MOD is not a setting (did you mean BRIDGE_PII_MODE?); see `npm run bridge -- help`"]);
    expect(warnings.join("\n")).not.toMatch(/ClientS3cret|SaltS3cret/);
  });

  it("warns of a setting's name in the wrong case, which names no setting either (names are case-sensitive)", () => {
    const warnings = settingNameWarnings({ bridge_pii_mode: "hash", Qashio_Client_Secret: "s3cret-value", qashio_unknown: "x" });
    expect(warnings).toEqual([
      "Qashio_Client_Secret is not a setting (did you mean QASHIO_CLIENT_SECRET?); see `npm run bridge -- help`",
      "bridge_pii_mode is not a setting (did you mean BRIDGE_PII_MODE?); see `npm run bridge -- help`",
      "qashio_unknown is not a setting; see `npm run bridge -- help`",
    ]);
    expect(warnings.join("\n")).not.toContain("s3cret-value");
  });

  it("is silent for a variable present with no value (an env map's removed entry) and for a value in mismatched quotes", () => {
    // Only a value wrapped in one kind of quote is one an env file of docker or systemd kept quoted.
    expect(settingNameWarnings({ BRIDGE_PII_MOD: undefined, QASHIO_CLIENT_SECRET: `"s3cret-value'`, BRIDGE_TENANT: "'acme`" })).toEqual([]);
  });

  it("warns of a named deployment's URL variable wrapped in quotes, as of a setting", () => {
    expect(settingNameWarnings({ QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: '"http://127.0.0.1:4010"', QASHIO_EU_URL: "'https://e.test'" })).toEqual([
      "QASHIO_EU_URL is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
      "QASHIO_SANDBOX_URL is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them",
    ]);
  });

  it("is silent for every real setting and the named deployments' URL variables", () => {
    const env = { QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "http://127.0.0.1:4010", QASHIO_PRODUCTION_URL: "https://p.test", QASHIO_EU_URL: "https://e.test", QASHIO_AUTHORIZE_URL: "https://a.test", BRIDGE_TENANT: "acme", BRIDGE_PII_MODE: "redact" };
    expect(settingNameWarnings(env)).toEqual([]);
  });
});

describe("SETTINGS", () => {
  let cwd: string;
  tempDirPerTest("settings-commands-", (made) => (cwd = made));
  beforeEach(async () => {
    // conform-pii and redrive work on a state directory that exists.
    await mkdir(join(cwd, ".state"), { mode: 0o700 });
  });

  /** Every setting good, so that the one made bad is the only issue a command can name. */
  const good = {
    ...valid,
    QASHIO_AUTHORIZE_URL: "http://127.0.0.1:9999",
    BRIDGE_PII_MODE: "hash",
    BRIDGE_PII_SALT: "a-salt-of-sixteen-or-more",
    BRIDGE_EVENT_SOURCE: "acme.cards",
    BRIDGE_EMIT_CARD_CREATED: "true",
    BRIDGE_CARD_DETAILS: "true",
    BRIDGE_CYCLE_BUDGET: "1m",
    BRIDGE_LOG_LEVEL: "debug",
  };
  const readers = {
    run: (env: Record<string, string>) => readLocalSettings(env, cwd),
    redrive: (env: Record<string, string>) => readLocalSettings(env, cwd, { holds: "no quarantine to re-drive", walksCards: false }),
    "conform-pii": (env: Record<string, string>) => readStateSettings(env, cwd),
    authorize: (env: Record<string, string>) => readAuthorizeSettings(env, cwd),
  } as const;

  /** The settings `read` names when each in turn holds a bad value (a control character; the salt: too short). */
  function refused(read: (env: Record<string, string>) => unknown): string[] {
    return SETTINGS.filter((s) => {
      const bad = s.name === "BRIDGE_PII_SALT" ? "short" : "a\u0001b";
      try {
        read({ ...good, [s.name]: bad });
        return false;
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        return error.issues.some((issue) => issue.setting === s.name);
      }
    }).map((s) => s.name);
  }

  it("names for each setting exactly the commands that check it (a bad value refuses them), as help shows each command its own", () => {
    for (const [command, read] of Object.entries(readers)) {
      expect(() => read(good), command).not.toThrow();
      expect(refused(read), command).toEqual(SETTINGS.filter((s) => s.commands.includes(command as keyof typeof readers)).map((s) => s.name));
    }
  });
});

describe("readAuthorizeSettings", () => {
  let dir: string;
  tempDirPerTest("cli-authorize-", (made) => (dir = made));

  it("lets authorize --secret-id go with client settings set blank, as without them", () => {
    const settings = readAuthorizeSettings({ QASHIO_BASE_URL: "http://127.0.0.1:4010", QASHIO_CLIENT_ID: "", QASHIO_CLIENT_SECRET: " " }, dir, { tokensInSecret: true });
    expect(settings).toMatchObject({ clientId: undefined, clientSecret: undefined });
  });

  it("lets authorize --secret-id go without client settings and without a state directory", () => {
    expect(
      readAuthorizeSettings({ QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "http://127.0.0.1:4010", BRIDGE_STATE_DIR: "/dev/null/state" }, dir, {
        tokensInSecret: true,
      }),
    ).toEqual({
      baseUrl: "http://127.0.0.1:4010",
      baseUrlSetting: "QASHIO_SANDBOX_URL",
      authorizeUrl: "http://127.0.0.1:4010",
      clientId: undefined,
      clientSecret: undefined,
      stateDir: "/dev/null/state",
    });
  });

  it("lets authorize --secret-id go with a state directory and tenant it never uses that would be refused without it", () => {
    // A .env left from local mode must not stop an onboarding that writes the tokens into the secret.
    const unused = { BRIDGE_STATE_DIR: "~/state", BRIDGE_TENANT: "not a tenant!" };
    expect(() => readAuthorizeSettings({ ...valid, ...unused }, dir)).toThrow(/BRIDGE_STATE_DIR: starts with ~[\s\S]*BRIDGE_TENANT: must be/);
    const settings = readAuthorizeSettings({ QASHIO_BASE_URL: "http://127.0.0.1:4010", ...unused }, dir, { tokensInSecret: true });
    expect(settings).toMatchObject({ baseUrl: "http://127.0.0.1:4010", clientId: undefined });
    expect(settings.tenant).toBeUndefined();
  });

  it("with --secret-id, names the stack output ProviderBaseUrl for a QASHIO_BASE_URL not set or blank, which local mode does not", () => {
    // The secret's description and the SecretArn output name it; any other URL stores a token the pollers cannot use.
    const hint = "with --secret-id, give the tenant stack's output ProviderBaseUrl (the URL its pollers use)";
    const refusal = (env: Record<string, string>, options = {}): string => {
      try {
        readAuthorizeSettings(env, dir, options);
      } catch (error) {
        return (error as Error).message;
      }
      return "";
    };
    const { QASHIO_BASE_URL: _unused, ...local } = valid;
    expect(refusal({}, { tokensInSecret: true })).toContain(`QASHIO_BASE_URL: is required but not set: ${hint}`);
    expect(refusal({ QASHIO_BASE_URL: " " }, { tokensInSecret: true })).toContain(`QASHIO_BASE_URL: is set but blank: ${hint}`);
    expect(refusal(local)).toContain("QASHIO_BASE_URL: is required but not set");
    expect(refusal(local)).not.toContain("ProviderBaseUrl");
  });

  it("lets authorize --secret-id go without client settings, but not with a client secret holding a control character", () => {
    expect(() =>
      readAuthorizeSettings({ QASHIO_BASE_URL: "http://127.0.0.1:4010", QASHIO_CLIENT_SECRET: "s3cr3t\nvalue" }, dir, { tokensInSecret: true }),
    ).toThrow(/QASHIO_CLIENT_SECRET: holds a line break or another control character/);
  });

  it("takes the authorize screen from QASHIO_AUTHORIZE_URL", () => {
    expect(readAuthorizeSettings({ ...valid, QASHIO_AUTHORIZE_URL: "https://auth.provider.test/" }, dir).authorizeUrl).toBe("https://auth.provider.test");
  });

  it("refuses a QASHIO_AUTHORIZE_URL that already ends with /oauth2/authorize, which authorize appends itself", () => {
    // Pasted as the screen's whole address, it sent the browser to .../oauth2/authorize/oauth2/authorize.
    for (const url of ["https://auth.provider.test/oauth2/authorize", "https://auth.provider.test/sso/oauth2/authorize/", "https://auth.provider.test/OAuth2/Authorize"]) {
      expect(() => readAuthorizeSettings({ ...valid, QASHIO_AUTHORIZE_URL: url }, dir)).toThrow(
        "QASHIO_AUTHORIZE_URL: ends with /oauth2/authorize, which authorize appends itself: give the address before it",
      );
    }
    expect(readAuthorizeSettings({ ...valid, QASHIO_AUTHORIZE_URL: "https://auth.provider.test/oauth2" }, dir).authorizeUrl).toBe("https://auth.provider.test/oauth2");
  });

  it("names every bad setting at once, the state directory included, without echoing a value", async () => {
    await writeFile(join(dir, "afile"), "x");
    const error = thrown(() => readAuthorizeSettings({ QASHIO_BASE_URL: "sandbox", QASHIO_AUTHORIZE_URL: "nope-value", BRIDGE_STATE_DIR: join(dir, "afile", "state") }, dir), ConfigError);
    expect(error.issues).toEqual([
      { setting: "QASHIO_BASE_URL", problem: 'is "sandbox", which needs QASHIO_SANDBOX_URL to be set' },
      { setting: "QASHIO_CLIENT_ID", problem: "is required but not set" },
      { setting: "QASHIO_CLIENT_SECRET", problem: "is required but not set" },
      { setting: "QASHIO_AUTHORIZE_URL", problem: "is not an absolute http(s) URL" },
      { setting: "BRIDGE_STATE_DIR", problem: `cannot be created: ${join(dir, "afile")} is a file, not a directory` },
    ]);
    expect(error.message).not.toContain("nope-value");
  });

  it("checks BRIDGE_TENANT when it is set, though authorize needs none", () => {
    expect(readAuthorizeSettings({ ...valid, BRIDGE_TENANT: "acme" }, dir).tenant).toBe("acme");
    expect(() => readAuthorizeSettings({ ...valid, BRIDGE_TENANT: "acme corp" }, dir)).toThrow(
      /BRIDGE_TENANT: must be 1-64 letters, digits, '-' or '_', starting with a letter or digit/,
    );
  });
});
