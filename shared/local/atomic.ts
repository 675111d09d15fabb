/**
 * Crash-safe file writes: write a temp file, fsync it, rename over the target, fsync the directory.
 * A crash at any point leaves either the old file or the new one, never a torn one.
 */
import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import path from "node:path";

/** Suffix of temp files; anything ending with it is a leftover of a crash and safe to delete. */
export const TEMP_SUFFIX = ".tmp";

/** Fsyncs a directory so a rename in it is durable (best effort: some platforms refuse directory fsync). */
export async function fsyncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // Directory fsync is unsupported on some filesystems (e.g. Windows); the rename is still atomic.
  } finally {
    await handle?.close();
  }
}

/**
 * Atomically replaces `file` with `data`.
 *
 * @example
 * ```ts
 * await writeFileAtomic(".state/tokens.json", JSON.stringify(tokens), { mode: 0o600 });
 * ```
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array | readonly Uint8Array[], options: { mode?: number } = {}): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}${TEMP_SUFFIX}`;
  const handle = await open(temp, "w", options.mode ?? 0o644);
  try {
    // Chunks go one after the other from the handle's current position.
    if (Array.isArray(data)) for (const chunk of data as readonly Uint8Array[]) await handle.writeFile(chunk);
    else await handle.writeFile(data as string | Uint8Array);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await fsyncDir(path.dirname(file));
}

/**
 * A buffer reused across writes of one writer that never overlaps its own writes: encoding each page into a fresh
 * buffer leaves ~1 MB of external memory per page alive until the next full GC (it outlives the fsync, so it is
 * promoted), which shows up as peak RSS.
 *
 * @example
 * ```ts
 * const scratch = new ScratchBuffer();
 * const buffer = scratch.take(text.length * 3);
 * ```
 */
export class ScratchBuffer {
  private buffer: Buffer = Buffer.alloc(0);

  /** A buffer of at least `size` bytes; its contents are undefined and it is valid until the next call. */
  take(size: number): Buffer {
    if (this.buffer.length < size) this.buffer = Buffer.allocUnsafeSlow(Math.max(size, this.buffer.length * 2));
    return this.buffer;
  }
}
