/**
 * Which files' names this process knows are on disk. A file renamed or created into place is durable only once its
 * directory is fsynced, and another process may have been killed between the two (a `run --once` beside a loop): a
 * file found there that this process neither wrote nor fsynced the directory for can still be taken back by a power
 * loss, the file it replaced with it, after this process acted on what it read.
 */
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";
import { fsyncDirSync, type FileIdentity } from "./atomic.js";

/**
 * Paths remembered at most ({@link DurableNames}): a quarantine's record files are one per record, and a loop that runs
 * for weeks quarantines and sees re-driven (deleted) more records than it should keep a name for. A name forgotten
 * costs one directory fsync when its file is found again, never a name taken as durable that is not.
 */
export const DURABLE_NAMES_LIMIT = 4096;

/**
 * Per path, the file (device and inode) last made durable there. A file replaced (atomic write) or created again at a
 * path is another file, so it costs one directory fsync when found; a file known durable costs nothing. At most
 * `limit` paths are remembered, the least recently noted forgotten first; a deleted file's path is forgotten at once
 * ({@link forget}).
 *
 * @example
 * ```ts
 * const durable = new DurableNames();
 * durable.note(file, await writeFileAtomic(file, text)); // written here: durable
 * durable.makeDurable(file, fstatSync(fd, { bigint: true })); // found: fsyncs the directory unless known durable
 * ```
 */
export class DurableNames {
  readonly #known = new Map<string, string>();

  constructor(private readonly limit = DURABLE_NAMES_LIMIT) {}

  /**
   * Fsyncs `file`'s directory unless the file of `identity` is the one known durable at `file`; then knows it. A
   * symbolic link's target's directory too: an open through a link (the events file may be one) creates the target
   * there, and that entry is the one a power loss could take.
   */
  makeDurable(file: string, identity: FileIdentity): void {
    if (this.knows(file, identity)) return;
    fsyncDirSync(path.dirname(file));
    const target = realPathOfLink(file);
    if (target !== undefined) fsyncDirSync(path.dirname(target));
    this.#remember(file, identityKey(identity));
  }

  /** Notes the file of `identity` as durable at `file`: this process put it there and fsynced the directory after. */
  note(file: string, identity: FileIdentity): void {
    this.#remember(file, identityKey(identity));
  }

  /** Whether the file of `identity` is the one known durable at `file`. */
  knows(file: string, identity: FileIdentity): boolean {
    return this.#known.get(file) === identityKey(identity);
  }

  /** Forgets `files` (deleted: a file found there later is another one, whose name is not known durable). */
  forget(files: Iterable<string>): void {
    for (const file of files) this.#known.delete(file);
  }

  /** Paths remembered (what this costs in memory). */
  get size(): number {
    return this.#known.size;
  }

  #remember(file: string, key: string): void {
    // Deleted first, so the path moves to the newest end of the map's order: the least recently noted go first.
    this.#known.delete(file);
    this.#known.set(file, key);
    if (this.#known.size > this.limit) this.#known.delete(this.#known.keys().next().value as string);
  }
}

/** The real path `file` leads to when it is a symbolic link; undefined for any other file, or one gone meanwhile. */
function realPathOfLink(file: string): string | undefined {
  try {
    return lstatSync(file).isSymbolicLink() ? realpathSync(file) : undefined;
  } catch (err) {
    // Moved away since it was written (a rotation): the name to make durable is the rotation's, not this process's.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Device and inode as one key; numbers and bigints of the same values give the same key. */
function identityKey({ dev, ino }: FileIdentity): string {
  return `${dev}:${ino}`;
}
