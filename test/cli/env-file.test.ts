import { closeSync, constants, openSync } from "node:fs";
import { mkdir, open, readFile, symlink, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { ENV_PIPE_WAIT_MS, loadEnv, parseEnvFile } from "../../shared/cli/env-file.js";
import { ConfigError, EnvFileError } from "../../shared/cli/errors.js";
import { tempDirPerTest } from "../temp-dir.js";
import { thrown } from "../thrown.js";
import { ROOT } from "./helpers.js";

/** Lets go a reader stuck in a blocking open of `fifo` (a writer's open ends it), so the test run cannot hang on one. */
function letReaderGo(fifo: string): void {
  try {
    closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // ENXIO: no reader holds it open.
  }
}

describe("parseEnvFile", () => {
  const clean = { malformed: [], unclosed: [], cutAtHash: [], afterQuote: [], repeated: {}, strayCr: [] };

  it("reads NAME=value lines with Node's quoting, comments, export and CRLF", () => {
    const text = 'export A=1\r\nB = two words # note\r\nC="with  spaces"\n# comment\nD=\'x#y\'\nE=\nF="a#b" # note\n';
    expect(parseEnvFile(text)).toEqual({ values: { A: "1", B: "two words", C: "with  spaces", D: "x#y", E: "", F: "a#b" }, ...clean });
  });

  it("reads the first variable of a file that starts with a byte order mark (as some Windows editors save it)", () => {
    expect(parseEnvFile("\uFEFFQASHIO_BASE_URL=sandbox\r\nBRIDGE_TENANT=acme\r\n")).toEqual({
      values: { QASHIO_BASE_URL: "sandbox", BRIDGE_TENANT: "acme" },
      ...clean,
    });
  });

  it("reads a value as text whatever the variable's name, one Node's parseEnv drops or an object's own names included", () => {
    const { values } = parseEnvFile("__proto__=x\nconstructor=y\ntoString=\"z\"\n");
    expect(Object.entries(values)).toEqual([
      ["__proto__", "x"],
      ["constructor", "y"],
      ["toString", "z"],
    ]);
  });

  it("keeps the variable after a blank line of spaces or an indented comment (parseEnv alone glues them into its name)", () => {
    expect(parseEnvFile("A=1\n   \n  # note\n\tB=2\n")).toEqual({ values: { A: "1", B: "2" }, ...clean });
  });

  it.each([
    ["KEY value", "QASHIO_CLIENT_SECRET ClientS3cret"],
    ["KEY: value", "QASHIO_CLIENT_SECRET: ClientS3cret"],
    ["text only", "ClientS3cret"],
    ["no name", "=ClientS3cret"],
    ["a name with a space", "QASHIO_CLIENT SECRET=ClientS3cret"],
  ])("reports a %s line by number, reads none of it, and still reads the next line", (_, bad) => {
    const { values, malformed } = parseEnvFile(`QASHIO_CLIENT_ID=cid\n${bad}\nBRIDGE_TENANT=acme\n`);
    expect(malformed).toEqual([2]);
    expect(values).toEqual({ QASHIO_CLIENT_ID: "cid", BRIDGE_TENANT: "acme" });
  });

  it("reports a line whose name no shell takes (a dot in it, a digit first) as malformed, reading none of it", () => {
    const { values, malformed } = parseEnvFile("QASHIO.CLIENT_ID=cid\n1BRIDGE_TENANT=acme\nBRIDGE_TENANT=acme\n");
    expect(malformed).toEqual([1, 2]);
    expect(values).toEqual({ BRIDGE_TENANT: "acme" });
  });

  it("takes backticks as quotes, as parseEnv does: a # inside them is the value's, one not closed is reported", () => {
    expect(parseEnvFile("BRIDGE_PII_SALT=`abcdefgh#ijklmnop`\nQASHIO_CLIENT_SECRET=`s3cret\nBRIDGE_TENANT=acme\n")).toEqual({
      values: { BRIDGE_PII_SALT: "abcdefgh#ijklmnop", BRIDGE_TENANT: "acme" },
      ...clean,
      unclosed: [2],
    });
  });

  it("unquotes a value after a tab as after a space (tab-aligned files): Node's parseEnv skips only spaces before a quote", () => {
    const text = 'QASHIO_CLIENT_SECRET=\t"s3cret"\nBRIDGE_TENANT\t=\t\'acme\'\nBRIDGE_EVENT_SOURCE= \t"my.src"  # note\nBRIDGE_LOG_LEVEL=\twarn\n';
    expect(parseEnvFile(text)).toEqual({
      values: { QASHIO_CLIENT_SECRET: "s3cret", BRIDGE_TENANT: "acme", BRIDGE_EVENT_SOURCE: "my.src", BRIDGE_LOG_LEVEL: "warn" },
      ...clean,
    });
  });

  it("reports a quote not closed on its line by number, without swallowing the assignments after it", () => {
    const text = 'QASHIO_CLIENT_SECRET="s3cret\nBRIDGE_TENANT=demo\nBRIDGE_EVENT_SOURCE="my.src"\nX=\'open\n';
    expect(parseEnvFile(text)).toEqual({ values: { BRIDGE_TENANT: "demo", BRIDGE_EVENT_SOURCE: "my.src" }, malformed: [], unclosed: [1, 4], cutAtHash: [], afterQuote: [], repeated: {}, strayCr: [] });
  });

  it("reports a quote not closed, or text after a closing quote, after blanks between = and the quote, as without them", () => {
    expect(parseEnvFile('QASHIO_CLIENT_SECRET= "s3cret\nBRIDGE_TENANT=\t\'acme\nBRIDGE_PII_SALT= "abcdefgh"ijklmnop\n')).toMatchObject({ unclosed: [1, 2], afterQuote: [3] });
  });

  it("reports a variable set twice even when one of its lines is refused for an unclosed quote (all refusals at once)", () => {
    expect(parseEnvFile('QASHIO_CLIENT_SECRET="s3cret\nQASHIO_CLIENT_SECRET=other\n')).toMatchObject({ unclosed: [1], repeated: { QASHIO_CLIENT_SECRET: [1, 2] } });
  });

  it("reads a name that starts with export (exported=1) as that name, not as an export of the rest", () => {
    expect(parseEnvFile("exported=1\nexport exported_at=2\n").values).toEqual({ exported: "1", exported_at: "2" });
  });

  it("reports a carriage return inside a line, not only one at its end (CR-only endings, the last line without one)", () => {
    expect(parseEnvFile("BRIDGE_TENANT=demo\rBRIDGE_LOG_LEVEL=warn\n")).toEqual({ values: {}, ...clean, strayCr: [1] });
  });

  it("reports a line holding a carriage return that ends no line (CR-only or CR CR LF line endings) by number, reading none of it, a comment included", () => {
    // CR only (classic Mac): one line, which starts as a comment and would hide every setting after it.
    expect(parseEnvFile("# settings\rBRIDGE_TENANT=demo\rBRIDGE_LOG_LEVEL=warn\r")).toEqual({ values: {}, ...clean, strayCr: [1] });
    // CR CR LF (a CRLF file converted once more): each line ends in a CR its text would keep.
    expect(parseEnvFile("BRIDGE_TENANT=demo\r\r\nBRIDGE_LOG_LEVEL=warn\r\n")).toEqual({ values: { BRIDGE_LOG_LEVEL: "warn" }, ...clean, strayCr: [1] });
  });

  it("reports text after a closing quote, which parseEnv drops (an escaped quote, a second assignment), not a comment", () => {
    const { afterQuote, values } = parseEnvFile(
      'SECRET="ab\\"cd"\nSALT="abcdefgh"ijklmnop#q\nID="a" TENANT=b\nOK="a b"   # note\nQ=\'it"s\'\n',
    );
    expect(afterQuote).toEqual([1, 2, 3]);
    expect(values).toMatchObject({ OK: "a b", Q: 'it"s' });
  });

  it("reports a # right after a closing quote, which parseEnv drops with what follows, as it does unquoted (a comment needs a blank)", () => {
    // A secret holding `"#` quoted with `"`: parseEnv ends it at its own quote and reads the rest as a comment.
    const { afterQuote, values } = parseEnvFile('SECRET="ab"#cd"\nSALT=\'abcdefgh\'#ijklmnop\nOK="a b" #note\nTAB=\'x\'\t# note\n');
    expect(afterQuote).toEqual([1, 2]);
    expect(values).toMatchObject({ OK: "a b", TAB: "x" });
  });

  it("reports an unquoted value that # would cut (first, or right after text), not a comment after a space", () => {
    const { cutAtHash, values } = parseEnvFile(
      "SALT=abcdefgh#ijklmnop\nTENANT=acme#1\nEMPTY=#x\nOK=value # comment\nQ='a#b'\nBLANK=   # only the first run\nT=acme # ticket#123, see https://x.test/#a\n",
    );
    expect(cutAtHash).toEqual([1, 2, 3]);
    expect(values).toMatchObject({ OK: "value", Q: "a#b", BLANK: "", T: "acme" });
  });

  it("takes a # after a tab as a comment, as after a space (tab-aligned files)", () => {
    const { cutAtHash, values } = parseEnvFile("OK=value\t# comment\n");
    expect(cutAtHash).toEqual([]);
    // parseEnv keeps the tab; every setting is read trimmed.
    expect(values["OK"]?.trim()).toBe("value");
  });
});

describe("loadEnv", () => {
  let dir: string;
  tempDirPerTest("cli-env-", (made) => (dir = made));

  it("reads .env and lets the environment win", async () => {
    await writeFile(join(dir, ".env"), 'BRIDGE_TENANT=from-file\nQASHIO_CLIENT_ID="quoted id"\n# comment\nBRIDGE_PII_MODE=full\n');
    const env = await loadEnv({ BRIDGE_TENANT: "from-env" }, dir);
    expect(env.BRIDGE_TENANT).toBe("from-env");
    expect(env.QASHIO_CLIENT_ID).toBe("quoted id");
    expect(env.BRIDGE_PII_MODE).toBe("full");
  });

  it("refuses a .env whose values a quote or a # would silently cut, naming the lines but never their text (exit 2)", async () => {
    await writeFile(
      join(dir, ".env"),
      'QASHIO_CLIENT_SECRET="s3cret-value\nBRIDGE_TENANT=demo\nBRIDGE_PII_SALT=abcdefgh#s3cret-salt\nQASHIO_CLIENT_ID="s3cret\\"id"\n',
    );
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues).toEqual([
      { setting: ".env", problem: "a quote is not closed on line 1 (a value cannot span lines)" },
      {
        setting: ".env",
        problem: "# in an unquoted value on line 3 starts a comment and cuts the value: quote the value if # belongs to it, or put a space before the comment",
      },
      {
        setting: ".env",
        problem:
          "text after the closing quote on line 4 would be dropped: a quote inside a quoted value cannot be escaped (quote the value with another kind of quote), and one line holds one setting",
      },
    ]);
    expect((error as Error).message).not.toMatch(/s3cret/);
  });

  it("refuses a .env that sets one variable on two lines, naming it and the lines, never a value (exit 2)", async () => {
    // The earlier line may be the one meant (a stale credential pasted below it): which one counts is no guess to make.
    await writeFile(join(dir, ".env"), "QASHIO_CLIENT_SECRET=s3cret-new\nBRIDGE_TENANT=demo\nexport QASHIO_CLIENT_SECRET=s3cret-old\n");
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues).toEqual([
      { setting: ".env", problem: "QASHIO_CLIENT_SECRET is set on lines 1, 3: keep one (only the last would count)" },
    ]);
    expect((error as Error).message).not.toMatch(/s3cret/);
  });

  it("works without a .env file", async () => {
    expect(await loadEnv({ A: "1" }, dir)).toEqual({ A: "1" });
  });

  it("hands back a copy of the environment when there is no .env, never the environment itself", async () => {
    const given = { A: "1" };
    const env = await loadEnv(given, dir);
    expect(env).toEqual(given);
    expect(env).not.toBe(given);
  });

  it("lets .env apply for a variable the environment holds as undefined", async () => {
    await writeFile(join(dir, ".env"), "BRIDGE_TENANT=from-file\n");
    expect((await loadEnv({ BRIDGE_TENANT: undefined }, dir)).BRIDGE_TENANT).toBe("from-file");
  });

  it("lets .env apply when the environment sets the variable blank (blank counts as unset)", async () => {
    await writeFile(join(dir, ".env"), "BRIDGE_TENANT=from-file\n");
    expect((await loadEnv({ BRIDGE_TENANT: "", QASHIO_CLIENT_ID: " " }, dir)).BRIDGE_TENANT).toBe("from-file");
    expect((await loadEnv({ BRIDGE_TENANT: "  " }, dir)).BRIDGE_TENANT).toBe("from-file");
  });

  it("says a setting is set but blank when the environment sets it blank and .env names it not, or blank too", async () => {
    await writeFile(join(dir, ".env"), "QASHIO_CLIENT_SECRET=\nQASHIO_BASE_URL=http://127.0.0.1:9999\n");
    const env = await loadEnv({ BRIDGE_TENANT: " ", QASHIO_CLIENT_ID: "", QASHIO_CLIENT_SECRET: "", QASHIO_REFRESH_TOKEN: "rt-seed" }, dir);
    const error = thrown(() => readLocalSettings(env, dir), ConfigError);
    expect(error.issues).toEqual([
      { setting: "QASHIO_CLIENT_ID", problem: "is set but blank" },
      { setting: "QASHIO_CLIENT_SECRET", problem: "is set but blank" },
      { setting: "BRIDGE_TENANT", problem: "is set but blank" },
    ]);
  });

  it.each([
    ["KEY value", "QASHIO_CLIENT_SECRET ClientS3cretValue"],
    ["KEY: value", "QASHIO_CLIENT_SECRET: ClientS3cretValue"],
    ["text only", "ClientS3cretValue"],
  ])("refuses a .env with a %s line as a settings error (exit 2), naming the line number but never its text", async (_, bad) => {
    await writeFile(join(dir, ".env"), `QASHIO_CLIENT_ID=cid\n\n${bad}\nBRIDGE_TENANT=acme\n`);
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).message).toBe(
      "Invalid settings (environment or .env):\n  - .env: line 3 is malformed (expected NAME=value); its text is not shown, in case it holds a secret",
    );
    expect((error as ConfigError).message).not.toContain("ClientS3cretValue");
  });

  it("names every malformed line at once", async () => {
    await writeFile(join(dir, ".env"), "A=1\nbad one\nB=2\nbad: two\n");
    await expect(loadEnv({}, dir)).rejects.toThrow("lines 2, 4 are malformed (expected NAME=value)");
  });

  it.each([
    [10, ""],
    [11, " and 1 more"],
    [12, " and 2 more"],
  ])("names the first ten of %i malformed lines and counts the rest", async (count, more) => {
    await writeFile(join(dir, ".env"), "bad\n".repeat(count));
    await expect(loadEnv({}, dir)).rejects.toThrow(`lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10${more} are malformed (expected NAME=value)`);
  });

  it("refuses a .env with bytes that are not UTF-8 (a Latin-1 editor), naming the lines, rather than read them as U+FFFD", async () => {
    // "pässwört" in Latin-1: decoded as UTF-8, each ä and ö became U+FFFD, and the secret sent was not the one saved.
    const latin1 = Buffer.from("QASHIO_CLIENT_SECRET=p\xe4ssw\xf6rt-s3cret\n", "latin1");
    await writeFile(join(dir, ".env"), Buffer.concat([Buffer.from("QASHIO_CLIENT_ID=cid\n"), latin1, Buffer.from("BRIDGE_TENANT=acme\n# caf\xe9\n", "latin1")]));
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues).toEqual([
      { setting: ".env", problem: "lines 2, 4 are not UTF-8 (saved in another encoding, such as Latin-1): save the file as UTF-8; their text is not shown, in case it holds a secret" },
    ]);
    expect((error as Error).message).not.toMatch(/s3cret/);
    await writeFile(join(dir, ".env"), Buffer.concat([Buffer.from("QASHIO_CLIENT_ID=cid\n"), latin1]));
    expect(await loadEnv({}, dir).catch((e: unknown) => (e as ConfigError).issues)).toEqual([
      { setting: ".env", problem: "line 2 is not UTF-8 (saved in another encoding, such as Latin-1): save the file as UTF-8; its text is not shown, in case it holds a secret" },
    ]);
  });

  it("refuses a .env with CR-only line endings by its line endings, rather than read it as one comment and call its settings not set", async () => {
    await writeFile(join(dir, ".env"), "# bridge settings\rBRIDGE_TENANT=acme\rBRIDGE_LOG_LEVEL=warn\r");
    const problem =
      "line 1 holds a carriage return (CR) that ends no line (a file saved with CR-only line endings, or CR CR LF): save it with LF or CRLF line endings; its text is not shown, in case it holds a secret";
    await expect(loadEnv({}, dir)).rejects.toSatisfy((error) => error instanceof ConfigError && error.exitCode === 2);
    await expect(loadEnv({}, dir)).rejects.toMatchObject({ issues: [{ setting: ".env", problem }] });
  });

  it("names several lines a carriage return ends no line in, in the plural", async () => {
    await writeFile(join(dir, ".env"), "BRIDGE_TENANT=acme\r\r\nBRIDGE_LOG_LEVEL=warn\r\r\n");
    const problem =
      "lines 1, 2 hold carriage returns (CR) that end no line (a file saved with CR-only line endings, or CR CR LF): save it with LF or CRLF line endings; their text is not shown, in case it holds a secret";
    await expect(loadEnv({}, dir)).rejects.toMatchObject({ issues: [{ setting: ".env", problem }] });
  });

  it("counts a blank line when naming a line that is not UTF-8", async () => {
    await writeFile(join(dir, ".env"), Buffer.from("QASHIO_CLIENT_ID=cid\n\nQASHIO_CLIENT_SECRET=p\xe4ss\n", "latin1"));
    await expect(loadEnv({}, dir)).rejects.toMatchObject({ issues: [{ setting: ".env", problem: expect.stringMatching(/^line 3 is not UTF-8 /) as unknown }] });
  });

  it("reads UTF-8 beyond ASCII as it is, a byte order mark included", async () => {
    await writeFile(join(dir, ".env"), "\uFEFFBRIDGE_PII_SALT=pässwört-sält-0123\n# café\n");
    expect((await loadEnv({}, dir)).BRIDGE_PII_SALT).toBe("pässwört-sält-0123");
  });

  it.each([
    ["little-endian", "utf16le", [0xff, 0xfe]],
    ["big-endian", "utf16be", [0xfe, 0xff]],
  ])("refuses a UTF-16 .env (%s, as Windows PowerShell's `>` writes it) as UTF-16, not as lines malformed", async (_, encoding, bom) => {
    const text = "QASHIO_CLIENT_ID=cid\r\nQASHIO_CLIENT_SECRET=s3cret\r\n";
    const le = Buffer.from(text, "utf16le");
    const body = encoding === "utf16le" ? le : le.swap16();
    await writeFile(join(dir, ".env"), Buffer.concat([Buffer.from(bom), body]));
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).issues).toEqual([
      { setting: ".env", problem: "is UTF-16 text (its byte order mark says so; Windows PowerShell's > and Out-File write it): save it as UTF-8" },
    ]);
  });

  it("names the settings file it was given in its refusals, not .env", async () => {
    await writeFile(join(dir, "bridge.env"), "BRIDGE_TENANT=a\nBRIDGE_TENANT=b\n");
    await expect(loadEnv({}, dir, "bridge.env")).rejects.toMatchObject({
      issues: [{ setting: "bridge.env", problem: "BRIDGE_TENANT is set on lines 1, 2: keep one (only the last would count)" }],
    });
    await writeFile(join(dir, "utf16.env"), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("BRIDGE_TENANT=a\r\n", "utf16le")]));
    await expect(loadEnv({}, dir, "utf16.env")).rejects.toMatchObject({ issues: [{ setting: "utf16.env", problem: expect.stringMatching(/^is UTF-16 text/) as unknown }] });
  });

  it("names a .env that is a link to a missing target (an unmounted secrets volume) with exit 2, not as no .env", async () => {
    await symlink(join(dir, "mounted", "bridge.env"), join(dir, ".env"));
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EnvFileError);
    expect((error as EnvFileError).exitCode).toBe(2);
    expect((error as EnvFileError).message).toBe(`cannot read the settings file ${join(dir, ".env")} (a link to a missing target): fix or remove it`);
  });

  it("refuses a .env larger than 1 MiB (a log or a dump saved by that name) without reading it all, exit 2", async () => {
    // Read whole, one over 512 MiB cannot even be decoded (a bare "RangeError"), and a link to /dev/zero filled 2 GiB first.
    await writeFile(join(dir, ".env"), `# ${"x".repeat(1024 * 1024)}\n`);
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EnvFileError);
    expect((error as EnvFileError).exitCode).toBe(2);
    expect((error as EnvFileError).message).toBe(`cannot read the settings file ${join(dir, ".env")} (larger than 1 MiB, which no settings file is): fix or remove it`);
  });

  it("refuses a .env pipe that brings more than 1 MiB, read in the pipe's chunks, rather than read its first MiB", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    // The reader stops a byte past the cap and closes the pipe: the writer's EPIPE is expected.
    const writer = sleep(100).then(() => writeFile(fifo, `# ${"x".repeat(1024 * 1024)}\n`)).catch(() => undefined);
    try {
      await expect(loadEnv({}, dir, undefined, { pipeWaitMs: 5_000 })).rejects.toThrow(/\(larger than 1 MiB, which no settings file is\)/);
    } finally {
      letReaderGo(fifo);
      await writer;
    }
  });

  it("reads a .env of exactly 1 MiB", async () => {
    const line = "BRIDGE_TENANT=acme\n";
    await writeFile(join(dir, ".env"), `${line}#${"x".repeat(1024 * 1024 - line.length - 2)}\n`);
    expect((await loadEnv({}, dir)).BRIDGE_TENANT).toBe("acme");
  });

  it("reads a .env up to the size docs/local-mode.md gives, and refuses one a byte over it", async () => {
    const text = (await readFile(join(ROOT, "docs/local-mode.md"), "utf8")).replace(/\s+/g, " ");
    const mib = Number(/an unreadable `\.env` \(or one over (\d+) MiB, which is not read/.exec(text)?.[1]);
    expect(mib).toBeGreaterThan(0);
    const line = "BRIDGE_TENANT=acme\n";
    const filler = (bytes: number) => `#${"x".repeat(bytes - line.length - 2)}\n`;
    await writeFile(join(dir, ".env"), `${line}${filler(mib * 1024 * 1024)}`);
    expect((await loadEnv({}, dir)).BRIDGE_TENANT).toBe("acme");
    await writeFile(join(dir, ".env"), `${line}${filler(mib * 1024 * 1024 + 1)}`);
    await expect(loadEnv({}, dir)).rejects.toBeInstanceOf(EnvFileError);
  });

  it("names a .env that is a named pipe nothing writes to (a secrets manager's mount, not running) at its deadline, exit 2", async () => {
    // Opened blocking, it hung for ever, deaf to Ctrl-C and SIGTERM: not even process.exit ends a thread stuck in open().
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    try {
      const started = performance.now();
      const error = await Promise.race([loadEnv({}, dir, undefined, { pipeWaitMs: 200 }).catch((e: unknown) => e), sleep(5_000).then(() => "still waiting")]);
      expect(error).toBeInstanceOf(EnvFileError);
      expect((error as EnvFileError).exitCode).toBe(2);
      expect((error as EnvFileError).message).toBe(
        `cannot read the settings file ${fifo} (a named pipe nothing wrote to within 0.2 s: is the program that fills it running?): fix or remove it`,
      );
      expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    } finally {
      letReaderGo(fifo);
    }
  });

  it("stops waiting for a .env pipe on Ctrl-C", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    const controller = new AbortController();
    try {
      const loading = loadEnv({}, dir, undefined, { signal: controller.signal }).catch((e: unknown) => e);
      await sleep(100);
      controller.abort();
      const error = await Promise.race([loading, sleep(5_000).then(() => "still waiting")]);
      expect(error).toBeInstanceOf(EnvFileError);
      expect((error as EnvFileError).message).toBe(`cannot read the settings file ${fifo} (a named pipe nothing wrote to; stopped waiting): fix or remove it`);
    } finally {
      letReaderGo(fifo);
    }
  });

  it("waits ENV_PIPE_WAIT_MS for a .env pipe's writer when given no wait of its own", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    // The clock jumps by the default wait after the deadline is set: the wait ends at once, naming the wait it took.
    const now = performance.now.bind(performance);
    let reads = 0;
    const clock = vi.spyOn(performance, "now").mockImplementation(() => now() + (reads++ === 0 ? 0 : ENV_PIPE_WAIT_MS));
    try {
      const error = await Promise.race([loadEnv({}, dir).catch((e: unknown) => e), sleep(5_000).then(() => "still waiting")]);
      expect(error).toBeInstanceOf(EnvFileError);
      expect((error as EnvFileError).message).toContain(`(a named pipe nothing wrote to within ${ENV_PIPE_WAIT_MS / 1000} s: `);
    } finally {
      clock.mockRestore();
      letReaderGo(fifo);
    }
  });

  it.each([
    ["docs/local-mode.md", "that nothing wrote to and closed within %s s or before Ctrl-C"],
    ["docs/spec-gaps.md", "is read until its writer closes it, waiting at most %s s (Ctrl-C ends the wait)"],
  ])("says in %s the wait for a .env pipe's writer that ENV_PIPE_WAIT_MS is", async (doc, said) => {
    // A secrets manager's mount is filled when its program gets to it: a shorter wait than documented refuses one in time.
    const text = (await readFile(join(ROOT, doc), "utf8")).replace(/\s+/g, " ");
    expect(text).toContain(said.replace("%s", String(ENV_PIPE_WAIT_MS / 1000)));
  });

  it("reads a .env that is a named pipe once its writer has written and closed it", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    const writer = sleep(100).then(() => writeFile(fifo, "BRIDGE_TENANT=acme\nQASHIO_CLIENT_ID=cid\n"));
    const env = await loadEnv({}, dir, undefined, { pipeWaitMs: 5_000 });
    await writer;
    expect(env).toMatchObject({ BRIDGE_TENANT: "acme", QASHIO_CLIENT_ID: "cid" });
  });

  it("waits for a .env pipe's writer that has opened it but not written yet, rather than fail on the empty read", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    const loading = loadEnv({}, dir, undefined, { pipeWaitMs: 5_000 }).catch((e: unknown) => e);
    try {
      // A writer's open without blocking succeeds only once the reader holds the pipe open.
      let writer;
      for (let tries = 0; writer === undefined && tries < 100; tries++) {
        writer = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => sleep(20).then(() => undefined));
      }
      expect(writer).toBeDefined();
      await sleep(200);
      await writer?.write("BRIDGE_TENANT=acme\n");
      await writer?.close();
      expect(await loading).toMatchObject({ BRIDGE_TENANT: "acme" });
    } finally {
      letReaderGo(fifo);
    }
  });

  it("stops at once on a .env pipe nothing wrote to when told to wait 0 ms, not the default wait", async () => {
    const fifo = join(dir, ".env");
    execFileSync("mkfifo", [fifo]);
    try {
      const error = await Promise.race([loadEnv({}, dir, undefined, { pipeWaitMs: 0 }).catch((e: unknown) => e), sleep(3_000).then(() => "still waiting")]);
      expect(error).toBeInstanceOf(EnvFileError);
      expect((error as EnvFileError).message).toContain("(a named pipe nothing wrote to within 0 s: ");
    } finally {
      letReaderGo(fifo);
    }
  });

  it("reads an empty .env as no settings at once, not as a pipe to wait for", async () => {
    await writeFile(join(dir, ".env"), "");
    expect(await loadEnv({ BRIDGE_TENANT: "acme" }, dir, undefined, { pipeWaitMs: 200 })).toEqual({ BRIDGE_TENANT: "acme" });
  });

  it("names a .env that is a directory as one, with exit 2", async () => {
    await mkdir(join(dir, ".env"));
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EnvFileError);
    expect((error as EnvFileError).exitCode).toBe(2);
    expect((error as EnvFileError).message).toBe(
      `cannot read the settings file ${join(dir, ".env")} (EISDIR): it is a directory, not a file: rename it, or start the bridge in another working directory`,
    );
  });

  it("names a .env that is a link to a directory as a directory, not as a link to a missing target", async () => {
    await mkdir(join(dir, "mounted"));
    await symlink(join(dir, "mounted"), join(dir, ".env"));
    const error = await loadEnv({}, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EnvFileError);
    expect((error as EnvFileError).message).toMatch(/ \(EISDIR\): it is a directory, not a file/);
  });
});
