/**
 * The `.env` file beside the environment: parsed with Node's parseEnv, every line it would misread (malformed, an
 * unclosed quote, a value cut at `#`, text after a closing quote, a stray CR, a name set twice) refused by line number,
 * read with a size cap and without hanging on a FIFO. The environment wins over the file.
 */
import { isUtf8 } from "node:buffer";
import { constants } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseEnv } from "node:util";
import type { Env } from "./config.js";
import { ConfigError, EnvFileError, type SettingIssue } from "./errors.js";
import { deniedAccessOf } from "./access-advice.js";

/** One `.env` assignment: optional `export`, a variable name, `=`, the value (parsed by Node's parseEnv). */
const ASSIGNMENT = /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=(.*)$/;
/** The quotes parseEnv takes around a value (and a settings file of docker or systemd keeps as part of it). */
export const QUOTES = ['"', "'", "`"];

/** The settings file read beside the environment, relative to the working directory. */
export const ENV_FILE = ".env";

/** What {@link parseEnvFile} read. */
export interface EnvFileContent {
  readonly values: Record<string, string>;
  /** 1-based numbers of the lines that are neither `NAME=value` nor a comment nor blank. */
  readonly malformed: readonly number[];
  /** Lines whose value opens a quote the line does not close (it would swallow the lines after it). */
  readonly unclosed: readonly number[];
  /** Lines whose unquoted value holds `#` first or right after other text: parseEnv cuts the value there, as a comment. */
  readonly cutAtHash: readonly number[];
  /** Lines with text after a quoted value's closing quote (other than a blank and a `# comment`): parseEnv drops it. */
  readonly afterQuote: readonly number[];
  /** Variables assigned on more than one line, with those lines: only the last one would count. */
  readonly repeated: Readonly<Record<string, readonly number[]>>;
  /**
   * Lines holding a carriage return that ends no line (CR-only line endings, or CR CR LF): read as they are, a CR-only
   * file is one line, a comment when it starts with one, and every setting in it would be reported not set.
   */
  readonly strayCr: readonly number[];
}

/**
 * Parses `.env` text line by line. Node's parseEnv alone does not drop a line without `=`: it glues the line's text,
 * value included, onto the next variable's name (and a blank line holding spaces, or an indented comment, loses the
 * next variable the same way). Here each line is an assignment, a comment or blank; any other line is reported by
 * number and never read. The value of each assignment (quotes, `\n` in double quotes, `# comment`) is Node's
 * parseEnv's. Two silent cuts of parseEnv are reported by line instead, since no setting of the bridge spans lines
 * and secrets and salts may hold `#`: a quote not closed on its line (parseEnv runs on to a later quote, swallowing
 * the assignments between), an unquoted value with `#` right after other text (parseEnv ends the value there), and
 * text after a closing quote (parseEnv drops it: `"ab\"cd"` is `ab\`, as a quote cannot be escaped). A variable
 * assigned on two lines is reported with both (the earlier line, maybe the one meant, would not count). A line holding a
 * carriage return that ends no line (CR-only or CR CR LF line endings) is reported and not read either.
 *
 * @example
 * parseEnvFile("A=1\nQASHIO_CLIENT_SECRET: x\nB=ab#c\n"); // { values: { A: "1", B: "ab" }, malformed: [2], unclosed: [], cutAtHash: [3], afterQuote: [], repeated: {}, strayCr: [] }
 */
export function parseEnvFile(text: string): EnvFileContent {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  const malformed: number[] = [];
  const unclosed: number[] = [];
  const cutAtHash: number[] = [];
  const afterQuote: number[] = [];
  const strayCr: number[] = [];
  const assigned = new Map<string, number[]>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    // Before the comment check: a CR-only file that starts with a comment is one comment line.
    if (line.includes("\r")) {
      strayCr.push(i + 1);
      continue;
    }
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const match = ASSIGNMENT.exec(line);
    if (match === null) {
      malformed.push(i + 1);
      continue;
    }
    const [, name = "", rest = ""] = match;
    const at = assigned.get(name);
    if (at === undefined) assigned.set(name, [i + 1]);
    else at.push(i + 1);
    const value = rest.replace(/^[ \t]+/, "");
    const quote = value[0] ?? "";
    if (QUOTES.includes(quote)) {
      const close = value.indexOf(quote, 1);
      if (close === -1) {
        unclosed.push(i + 1);
        continue;
      }
      // A comment needs a blank before its `#`, as after an unquoted value: `"ab"#cd"` is a secret holding `"#`, cut.
      if (!/^(?:[ \t]+#.*|[ \t]*)$/.test(value.slice(close + 1))) afterQuote.push(i + 1);
    }
    // The first `#` of the text after `=` decides: after a blank it starts a comment (`NAME=   # note`, `A=b # c#d`),
    // first or right after text it cuts the value (`NAME=#x`, `NAME=a#b`).
    const hash = rest.indexOf("#");
    if (!QUOTES.includes(quote) && hash !== -1 && (hash === 0 || !/[ \t]/.test(rest.charAt(hash - 1)))) cutAtHash.push(i + 1);
    // Ends with a line break, as a line of a file does. Without the blanks before it: parseEnv skips spaces but not a
    // tab before an opening quote, and would keep the quotes in the value (`NAME=<tab>"secret"` read as `"secret"`).
    // Under a fixed name: parseEnv drops `__proto__`, whose lookup then finds Object.prototype.
    values[name] = parseEnv(`VALUE=${value}\n`)["VALUE"] ?? "";
  }
  const repeated = Object.fromEntries([...assigned].filter(([, at]) => at.length > 1));
  return { values, malformed, unclosed, cutAtHash, afterQuote, repeated, strayCr };
}

/** Largest `.env` read: no settings file comes near it, and a larger one (a log saved by that name) is not read whole. */
const MAX_ENV_FILE_BYTES = 1024 * 1024;

/**
 * How long a `.env` that is a named pipe (a secrets manager's mount, such as 1Password's) may take to be written and
 * closed by the program that fills it.
 */
export const ENV_PIPE_WAIT_MS = 30_000;
/** Pause between reads of a `.env` pipe that is not written yet. */
const ENV_PIPE_POLL_MS = 50;

/** How {@link loadEnv} waits for a `.env` that is a named pipe. */
export interface EnvPipeWait {
  /** @default ENV_PIPE_WAIT_MS */
  readonly pipeWaitMs?: number;
  /** Ends the wait (Ctrl-C). */
  readonly signal?: AbortSignal;
}

/**
 * The bytes of `path`, or undefined when it holds more than `max` (only `max` + 1 are read: `/dev/zero` ends too).
 * Opened without blocking: a named pipe nothing writes to would block a blocking open for ever, in a thread that
 * neither Ctrl-C nor process.exit ends. Such a pipe is read until its writer closes it, within `wait`.
 */
async function readAtMost(path: string, max: number, wait: EnvPipeWait): Promise<Buffer | undefined> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const pipe = (await handle.stat()).isFIFO();
    const waitMs = wait.pipeWaitMs ?? ENV_PIPE_WAIT_MS;
    const deadline = performance.now() + waitMs;
    const buffer = Buffer.alloc(max + 1);
    let length = 0;
    while (length < buffer.length) {
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(buffer, length, buffer.length - length, null));
      } catch (error) {
        // EAGAIN: the pipe's writer has it open but wrote nothing more yet.
        if (!pipe || (error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        bytesRead = -1;
      }
      if (bytesRead > 0) {
        length += bytesRead;
        continue;
      }
      // The end of a file; of a pipe too once something was written (before its writer opens it, a pipe reads as ended).
      if (bytesRead === 0 && (!pipe || length > 0)) break;
      if (wait.signal?.aborted === true) throw new EnvFileError(path, "a named pipe nothing wrote to; stopped waiting");
      if (performance.now() >= deadline) {
        throw new EnvFileError(path, `a named pipe nothing wrote to within ${waitMs / 1000} s: is the program that fills it running?`);
      }
      await sleep(ENV_PIPE_POLL_MS);
    }
    return length > max ? undefined : buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/** Byte order marks of UTF-16 (little- and big-endian), which Windows PowerShell's `>` and `Out-File` write. */
const UTF16_BOMS = [Buffer.from([0xff, 0xfe]), Buffer.from([0xfe, 0xff])];

/**
 * 1-based numbers of the lines of `bytes` that are not UTF-8: decoded, each such byte would become U+FFFD, and a
 * secret or salt saved in Latin-1 would silently be another one.
 *
 * @example
 * nonUtf8Lines(Buffer.from("A=1\nB=caf\xe9\n", "latin1")); // [2]
 */
function nonUtf8Lines(bytes: Buffer): number[] {
  const lines: number[] = [];
  let start = 0;
  for (let number = 1; start <= bytes.length; number++) {
    const end = bytes.indexOf(0x0a, start);
    const stop = end === -1 ? bytes.length : end;
    if (!isUtf8(bytes.subarray(start, stop))) lines.push(number);
    start = stop + 1;
  }
  return lines;
}

/** `.env` lines by number only (never their text, in case it holds a secret): "line 3", "lines 3, 5 and 2 more". */
function linesNamed(lines: readonly number[]): string {
  const shown = lines.slice(0, 10).join(", ");
  const more = lines.length > 10 ? ` and ${lines.length - 10} more` : "";
  return `${lines.length === 1 ? "line" : "lines"} ${shown}${more}`;
}

/** The problem of a `.env` with malformed lines: their numbers only, never their text. */
function malformedProblem(lines: readonly number[]): string {
  return lines.length === 1
    ? `${linesNamed(lines)} is malformed (expected NAME=value); its text is not shown, in case it holds a secret`
    : `${linesNamed(lines)} are malformed (expected NAME=value); their text is not shown, in case it holds a secret`;
}

/**
 * What to do about a `.env` whose read failed with `code`, past "fix or remove it" where more is known: a directory by
 * that name (EISDIR), or a file this user may not read (EACCES: its mode and owner, and the way in).
 */
function envReadRemedy(path: string, code: string | undefined): string | undefined {
  if (code === "EISDIR") return "it is a directory, not a file: rename it, or start the bridge in another working directory";
  return code === "EACCES" ? deniedAccessOf(path) : undefined;
}

/**
 * Reads `.env` in `cwd` (when present) and overlays the given environment: a variable set in
 * the environment wins over the same one in `.env`. A blank variable counts as unset (as everywhere in the
 * settings), so it does not hide the `.env` value; it is kept where `.env` has none, so a required setting set blank
 * is told from one not set.
 *
 * @throws EnvFileError (exit 2) when `.env` exists but cannot be read (a link to a missing target included), is
 *   larger than 1 MiB (not read), or is a named pipe nothing wrote to within `wait` (or before its signal).
 * @throws ConfigError (exit 2) when a line of `.env` is not `NAME=value`, a comment or blank: it names the line
 *   numbers only, since such a line (`QASHIO_CLIENT_SECRET: ...`) most likely holds a value meant for a setting;
 *   likewise for values a quote or `#` would cut, for a variable assigned on two lines, for lines a carriage return
 *   ends no line in (CR-only line endings), and for lines that are not UTF-8 (a UTF-16 file is named as such).
 * @example
 * const env = await loadEnv(process.env, process.cwd());
 */
export async function loadEnv(env: Env, cwd: string, file = ENV_FILE, wait: EnvPipeWait = {}): Promise<Env> {
  const path = resolve(cwd, file);
  let bytes: Buffer | undefined;
  try {
    bytes = await readAtMost(path, MAX_ENV_FILE_BYTES, wait);
  } catch (error) {
    if (error instanceof EnvFileError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    // A link to nothing (an unmounted secrets volume) is a .env meant to be read, not the absence of one: read as none,
    // its settings would be reported missing, with no word of the file.
    if (code === "ENOENT" && (await lstat(path).catch(() => undefined))?.isSymbolicLink() === true) {
      throw new EnvFileError(path, "a link to a missing target", { cause: error });
    }
    if (code === "ENOENT") return { ...env };
    throw new EnvFileError(path, code ?? (error as Error).name, { cause: error, remedy: envReadRemedy(path, code) });
  }
  if (bytes === undefined) throw new EnvFileError(path, `larger than ${MAX_ENV_FILE_BYTES / (1024 * 1024)} MiB, which no settings file is`);
  // Read as UTF-8, every line of it would be "malformed", in a file an editor shows as fine.
  if (UTF16_BOMS.some((bom) => bytes.subarray(0, 2).equals(bom))) {
    throw new ConfigError([{ setting: file, problem: "is UTF-16 text (its byte order mark says so; Windows PowerShell's > and Out-File write it): save it as UTF-8" }]);
  }
  const { values: fromFile, malformed, unclosed, cutAtHash, afterQuote, repeated, strayCr } = parseEnvFile(bytes.toString("utf8"));
  const issues: SettingIssue[] = [];
  const notUtf8 = nonUtf8Lines(bytes);
  if (notUtf8.length > 0) {
    const their = notUtf8.length === 1 ? "its" : "their";
    issues.push({
      setting: file,
      problem: `${linesNamed(notUtf8)} ${notUtf8.length === 1 ? "is" : "are"} not UTF-8 (saved in another encoding, such as Latin-1): save the file as UTF-8; ${their} text is not shown, in case it holds a secret`,
    });
  }
  if (strayCr.length > 0) {
    issues.push({
      setting: file,
      problem: `${linesNamed(strayCr)} ${strayCr.length === 1 ? "holds a carriage return (CR) that ends" : "hold carriage returns (CR) that end"} no line (a file saved with CR-only line endings, or CR CR LF): save it with LF or CRLF line endings; ${strayCr.length === 1 ? "its" : "their"} text is not shown, in case it holds a secret`,
    });
  }
  if (malformed.length > 0) issues.push({ setting: file, problem: malformedProblem(malformed) });
  if (unclosed.length > 0) {
    issues.push({ setting: file, problem: `a quote is not closed on ${linesNamed(unclosed)} (a value cannot span lines)` });
  }
  if (cutAtHash.length > 0) {
    issues.push({
      setting: file,
      problem: `# in an unquoted value on ${linesNamed(cutAtHash)} starts a comment and cuts the value: quote the value if # belongs to it, or put a space before the comment`,
    });
  }
  if (afterQuote.length > 0) {
    issues.push({
      setting: file,
      problem: `text after the closing quote on ${linesNamed(afterQuote)} would be dropped: a quote inside a quoted value cannot be escaped (quote the value with another kind of quote), and one line holds one setting`,
    });
  }
  for (const [name, at] of Object.entries(repeated)) {
    issues.push({ setting: file, problem: `${name} is set on ${linesNamed(at)}: keep one (only the last would count)` });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  const merged: Record<string, string | undefined> = { ...fromFile };
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && (value.trim() !== "" || (merged[key] ?? "").trim() === "")) merged[key] = value;
  }
  return merged;
}
