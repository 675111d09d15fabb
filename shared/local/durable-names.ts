/**
 * Which files' names this process knows are on disk. A file renamed or created into place is durable only once its
 * directory is fsynced, and another process may have been killed between the two (a `run --once` beside a loop): a
 * file found there that this process neither wrote nor fsynced the directory for can still be taken back by a power
 * loss, the file it replaced with it, after this process acted on what it read.
 */
import path from "node:path";
import { fsyncDirSync, type FileIdentity } from "./atomic.js";

/**
 * Per path, the file (device and inode) last made durable there. A file replaced (atomic write) or created again at a
 * path is another file, so it costs one directory fsync when found; a file known durable costs nothing.
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

  /** Fsyncs `file`'s directory unless the file of `identity` is the one known durable at `file`; then knows it. */
  makeDurable(file: string, identity: FileIdentity): void {
    const key = identityKey(identity);
    if (this.#known.get(file) === key) return;
    fsyncDirSync(path.dirname(file));
    this.#known.set(file, key);
  }

  /** Notes the file of `identity` as durable at `file`: this process put it there and fsynced the directory after. */
  note(file: string, identity: FileIdentity): void {
    this.#known.set(file, identityKey(identity));
  }
}

/** Device and inode as one key; numbers and bigints of the same values give the same key. */
function identityKey({ dev, ino }: FileIdentity): string {
  return `${dev}:${ino}`;
}
