/**
 * File-backed Quarantine: one JSON file per record, named by its deterministic id (idempotent put).
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Quarantine, QuarantineRecord } from "../bridge/ports.js";
import { TEMP_SUFFIX, removeFileDurably, writeFileAtomic } from "./atomic.js";
import { CorruptStateError } from "./errors.js";

/**
 * Keeps quarantine records in `<stateDir>/quarantine/<id>.json`, written atomically.
 *
 * @example
 * ```ts
 * const quarantine = new FileQuarantine(".state");
 * for (const record of await quarantine.list()) console.log(record.reason);
 * ```
 */
export class FileQuarantine implements Quarantine {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, "quarantine");
  }

  async put(record: QuarantineRecord): Promise<boolean> {
    const file = this.#file(record.id);
    // A record file only ever appears whole (atomic write), so one that exists is durable.
    if (existsSync(file)) return false;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(file, JSON.stringify(record) + "\n", { mode: 0o600 });
    return true;
  }

  async delete(id: string): Promise<void> {
    removeFileDurably(this.#file(id));
  }

  #file(id: string): string {
    return path.join(this.dir, `${encodeURIComponent(id)}.json`);
  }

  /** All records, oldest first. */
  async list(): Promise<QuarantineRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    const records: QuarantineRecord[] = [];
    for (const name of names) {
      if (!name.endsWith(".json") || name.endsWith(TEMP_SUFFIX)) continue;
      const file = path.join(this.dir, name);
      try {
        records.push(JSON.parse(await readFile(file, "utf8")) as QuarantineRecord);
      } catch (err) {
        throw new CorruptStateError("Quarantine record is not valid JSON", { file }, { cause: err });
      }
    }
    return records.sort((a, b) => (a.at === b.at ? a.id.localeCompare(b.id) : a.at.localeCompare(b.at)));
  }

  /** Number of records, counted from file names without reading them. */
  async size(): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
      throw err;
    }
    return names.filter((name) => name.endsWith(".json") && !name.endsWith(TEMP_SUFFIX)).length;
  }
}
