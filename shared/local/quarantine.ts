/**
 * File-backed Quarantine: one JSON file per record, named by its deterministic id (idempotent put).
 */
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import type { Quarantine, QuarantinePagesOptions, QuarantineRecord } from "../bridge/ports.js";
import { TEMP_SUFFIX, makeDirDurable, removeFilesDurably, staleTempSweep, writeFileAtomic } from "./atomic.js";
import { DurableNames } from "./durable-names.js";
import { CorruptStateError, LocalStateError } from "./errors.js";
import { STATE_DIRS, namesInStateDir } from "./layout.js";

/**
 * Keeps quarantine records in `<stateDir>/quarantine/<id>.json`, written atomically. The first `put` or `list` of a
 * store removes the stale temp files a crashed write left (see staleTempSweep): they hold raw bodies, cardholder
 * data included, which a later PII mode switch would never reach.
 *
 * @example
 * ```ts
 * const quarantine = new FileQuarantine(".state");
 * for (const record of await quarantine.list()) console.log(record.reason);
 * ```
 */
export class FileQuarantine implements Quarantine {
  readonly dir: string;
  readonly #sweep: () => Promise<void>;
  /**
   * Record files this store wrote, or found and fsynced the directory for: their names are durable. Any other record
   * file found may be one another process renamed into place and was killed before its directory fsync, also after
   * this store's last fsync (a `run --once` between a loop's cycles).
   */
  readonly #durable = new DurableNames();

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, STATE_DIRS.quarantine);
    this.#sweep = staleTempSweep(this.dir);
  }

  async put(record: QuarantineRecord): Promise<boolean> {
    await this.#sweep();
    const file = this.#file(record.id);
    // A record file only ever appears whole (atomic write), but its name is durable only once its directory is fsynced:
    // a process killed between the two left one that a power loss can still take back, after this put said it is held.
    const held = this.#read(file);
    if (held !== undefined) {
      // Found again: the first `at` stays; reason and body take the current form (a PII mode switch masks them).
      const text = JSON.stringify({ ...held, reason: record.reason, raw: record.raw }) + "\n";
      if (text !== JSON.stringify(held) + "\n") this.#durable.note(file, await writeFileAtomic(file, text, { mode: 0o600 }));
      else this.#durable.makeDurable(file, statSync(file, { bigint: true }));
      return false;
    }
    makeDirDurable(this.dir);
    this.#durable.note(file, await writeFileAtomic(file, JSON.stringify(record) + "\n", { mode: 0o600 }));
    return true;
  }

  /** The record in `file`; undefined when there is none (never put, or deleted meanwhile). */
  #read(file: string): QuarantineRecord | undefined {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new LocalStateError("Quarantine record cannot be read", { file }, { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // No cause: JSON.parse's message quotes the text around the fault, a raw body's personal data.
      throw new CorruptStateError("Quarantine record is not valid JSON", { file });
    }
    if (!isRecordShaped(parsed)) throw new CorruptStateError("Quarantine record is not a record", { file });
    // A record under another name (a copy made by hand) is never the one a put or delete of its id reaches: a PII mode
    // switch would leave its body as it is, and a re-drive would count it removed and find it again every run.
    if (this.#file(parsed.id) !== file) throw new CorruptStateError("Quarantine record's id is not its file's name", { file });
    return parsed;
  }

  /** Record file names this store remembers as durable (what that costs in memory). */
  get durableNamesKnown(): number {
    return this.#durable.size;
  }

  /** Unlinks the records' files, then fsyncs the directory once for them all. */
  async deleteMany(ids: readonly string[]): Promise<void> {
    const files = ids.map((id) => this.#file(id));
    // Forgotten first: a file a failed unlink left is only fsynced again when found, never taken as durable.
    this.#durable.forget(files);
    removeFilesDurably(files);
  }

  #file(id: string): string {
    return path.join(this.dir, `${encodeURIComponent(id)}.json`);
  }

  /** All records, oldest first. */
  async list(): Promise<QuarantineRecord[]> {
    const records: QuarantineRecord[] = [];
    for await (const page of this.pages({ limit: LIST_PAGE_SIZE })) records.push(...page);
    return records.sort((a, b) => (a.at === b.at ? a.id.localeCompare(b.id) : a.at.localeCompare(b.at)));
  }

  /**
   * Records in the order of their file names (their ids, URI-encoded), read file by file: only the names are held
   * beside the page in hand. From after the record `after` when given. A file deleted since its name was read is
   * passed over.
   */
  async *pages({ limit, after }: QuarantinePagesOptions): AsyncGenerator<QuarantineRecord[]> {
    await this.#sweep();
    const from = after === undefined ? undefined : encodeURIComponent(after);
    const stems = this.#names()
      .filter(isRecordFile)
      .map((name) => name.slice(0, -".json".length))
      .filter((stem) => from === undefined || stem > from)
      .sort();
    let page: QuarantineRecord[] = [];
    for (const stem of stems) {
      const record = this.#read(path.join(this.dir, `${stem}.json`));
      if (record === undefined) continue;
      page.push(record);
      if (page.length >= limit) {
        yield page;
        page = [];
      }
    }
    if (page.length > 0) yield page;
  }

  /** The names in the quarantine directory; none when it does not exist yet. */
  #names(): string[] {
    return namesInStateDir(this.dir, "Quarantine");
  }

  /** Number of records, counted from file names without reading them. */
  async size(): Promise<number> {
    return this.#names().filter(isRecordFile).length;
  }
}

/** Records read per page by `list`, which keeps them all. */
const LIST_PAGE_SIZE = 100;

/** Whether a quarantine directory entry is a record (not a temp file a write left). */
function isRecordFile(name: string): boolean {
  return name.endsWith(".json") && !name.endsWith(TEMP_SUFFIX);
}

/** Whether a parsed record file has the members every reader of a record relies on (written by something else if not). */
function isRecordShaped(value: unknown): value is QuarantineRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { id, kind, reason, at } = value as Record<string, unknown>;
  return [id, kind, reason, at].every((member) => typeof member === "string");
}
