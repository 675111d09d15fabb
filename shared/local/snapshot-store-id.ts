/**
 * The snapshot store's id: a random id in `snapshots/store-id`, read and made here for the store (its scan cursors
 * carry it) and for the state binding (binding.json records it, so a store lost or replaced is noticed).
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createFileOnce, makeDirDurable } from "./atomic.js";
import { CorruptStateError } from "./errors.js";
import { STATE_DIRS } from "./layout.js";

/**
 * File naming the store: a random id, made by a cycle's bind (recorded in binding.json, so a store lost or replaced is
 * noticed: see bindStateDir) or the first time a walk hands out a cursor, so a cursor of another state directory (or
 * of this one before it was replaced) is refused rather than taken as a place in this one.
 */
export const STORE_ID_FILE = "store-id";

const STORE_ID_PATTERN = /^[0-9a-f]{16}$/;
/** What to do about a damaged id file: the binding records the id, and otherwise it only ties conform-pii cursors. */
const STORE_ID_HINT =
  "(write back the id binding.json records as snapshotStoreId; where it records none, deleting the file gives the store a new id, and only conform-pii cursors already handed out stop working)";

/**
 * The id of the snapshot store in `dir` (the snapshots directory), undefined when it has none (or no directory).
 * @throws CorruptStateError for an id file that cannot be read or holds no id.
 */
export function readStoreId(dir: string): string | undefined {
  const file = path.join(dir, STORE_ID_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw new CorruptStateError(`Snapshot store id cannot be read ${STORE_ID_HINT}`, { file }, { cause: err });
  }
  const id = text.trim();
  if (!STORE_ID_PATTERN.test(id)) throw new CorruptStateError(`Snapshot store id is not 16 hex digits ${STORE_ID_HINT}`, { file });
  return id;
}

/** The id of the snapshot store in `dir`, made (and the directory) when it has none; a race keeps the first one. */
export async function makeStoreId(dir: string): Promise<string> {
  const file = path.join(dir, STORE_ID_FILE);
  makeDirDurable(dir);
  await createFileOnce(file, `${randomBytes(8).toString("hex")}\n`, { mode: 0o600 });
  const id = readStoreId(dir);
  if (id === undefined) throw new CorruptStateError("Snapshot store id is missing", { file });
  return id;
}

/**
 * The id of the snapshot store of state directory `stateDir`, undefined when it has none (never made, or lost with its
 * snapshots directory).
 * @throws CorruptStateError for an id file that cannot be read or holds no id.
 */
export function snapshotStoreIdOf(stateDir: string): string | undefined {
  return readStoreId(path.join(stateDir, STATE_DIRS.snapshots));
}

/** The id of the snapshot store of state directory `stateDir`, made when it has none (see {@link snapshotStoreIdOf}). */
export function makeSnapshotStoreId(stateDir: string): Promise<string> {
  return makeStoreId(path.join(stateDir, STATE_DIRS.snapshots));
}
