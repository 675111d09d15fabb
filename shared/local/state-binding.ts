/**
 * What a state directory belongs to. Its tokens were issued by one provider to one client, and its snapshots record
 * what one tenant has published: sending those tokens to another provider would leak them, and another tenant's
 * snapshots would hide its changes. So a directory is bound on first use and checked on every later one.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { piiSaltVerdict } from "../bridge/pii.js";
import { makeDirDurable, TEMP_SUFFIX, writeFileAtomic } from "./atomic.js";
import { CorruptStateError, LocalStateError } from "./errors.js";
import { STATE_DIRS, STATE_FILES } from "./layout.js";
import { STORE_ID_FILE, makeSnapshotStoreId, snapshotStoreIdOf } from "./snapshot-store-id.js";

/** The owner of a state directory; `tenant` is absent where the caller does not know it (authorize). */
export interface StateBinding {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly tenant?: string;
  /**
   * Fingerprint of the `hash` mode salt the snapshots' pseudonyms are made with (`piiSaltFingerprint`), never the salt:
   * given by a caller that hashes, absent otherwise (another PII mode, authorize). Not part of the owner.
   */
  readonly piiSaltFingerprint?: string;
  /**
   * Id of the snapshot store the directory's cycles diff against (`snapshots/store-id`), recorded by the first cycle's
   * bind: a store lost or replaced later (a partial restore, `snapshots/` removed by hand) is then refused rather than
   * taken for a first run, which would publish everything the provider lists as new. Not part of the owner.
   */
  readonly snapshotStoreId?: string;
}

/** The fields that name the owner, each checked against the recorded binding. */
const OWNER_FIELDS = ["baseUrl", "clientId", "tenant"] as const;
type OwnerField = (typeof OWNER_FIELDS)[number];

/**
 * The state directory belongs to another provider, client or tenant. The message names the fields; `recorded` and
 * `given` hold both bindings, for a caller that shows them (none of them is a secret).
 */
export class StateBindingMismatchError extends LocalStateError {
  override name = "StateBindingMismatchError";
  readonly fields: readonly OwnerField[];
  readonly recorded: StateBinding;
  readonly given: Partial<StateBinding>;

  constructor(file: string, fields: readonly OwnerField[], bindings: { recorded: StateBinding; given: Partial<StateBinding> }, options?: ErrorOptions) {
    super(`state directory belongs to another ${fields.join(", ")} (recorded in ${file})`, { file }, options);
    this.fields = fields;
    this.recorded = bindings.recorded;
    this.given = bindings.given;
  }
}

/**
 * The state directory holds tokens or snapshots but no binding file (deleted, lost in a partial restore, or written by
 * a version before bindings): whose they are cannot be told, so they are not handed to whoever comes next.
 */
export class StateBindingMissingError extends LocalStateError {
  override name = "StateBindingMissingError";

  constructor(file: string, options?: ErrorOptions) {
    super("state directory holds tokens or snapshots but no binding file", { file }, options);
  }
}

/**
 * The snapshots of the state directory hold pseudonyms made with another `hash` salt than the one given (a mistyped
 * salt, a swapped .env): hashing with it would publish every item pulled again as a change of its personal fields,
 * then store it under that salt. Names the file the fingerprint is recorded in, neither salt nor fingerprint.
 */
export class PiiSaltMismatchError extends LocalStateError {
  override name = "PiiSaltMismatchError";

  constructor(file: string, options?: ErrorOptions) {
    super("state directory's pseudonyms were made with another PII salt (its fingerprint is recorded in the binding file)", { file }, options);
  }
}

/**
 * A switch of salts was asked for (`run --new-pii-salt`) with the salt the binding records already: nothing to switch.
 * Names the file the fingerprint is recorded in, neither salt nor fingerprint.
 */
export class PiiSaltAlreadyRecordedError extends LocalStateError {
  override name = "PiiSaltAlreadyRecordedError";

  constructor(file: string, options?: ErrorOptions) {
    super("a new PII salt was asked for, but the state directory records the given salt already (its fingerprint is in the binding file)", { file }, options);
  }
}

/**
 * The state directory was used (its binding records a snapshot store) but that store is gone: `snapshots/` removed or
 * lost in a partial restore (`found` undefined), or replaced by another store (`found` its id). A cycle on it would take
 * every item the provider lists for new. `recorded` is the binding, for a caller that shows how to start over.
 */
export class SnapshotStoreMissingError extends LocalStateError {
  override name = "SnapshotStoreMissingError";
  readonly recorded: StateBinding & { readonly snapshotStoreId: string };
  readonly found?: string;

  constructor(file: string, recorded: StateBinding & { readonly snapshotStoreId: string }, found: string | undefined, options?: ErrorOptions) {
    super(
      found === undefined
        ? `the snapshot store the binding records (${recorded.snapshotStoreId}) is missing: no ${STATE_DIRS.snapshots}/${STORE_ID_FILE}`
        : `the snapshot store the binding records (${recorded.snapshotStoreId}) was replaced by another (${found})`,
      { file },
      options,
    );
    this.recorded = recorded;
    this.found = found;
  }
}

/** How far a caller may move a directory that already holds state. */
export interface BindOptions {
  /**
   * Let a new client id take the directory over (authorize: it replaces the tokens through a fresh sign-in and sends
   * none of the old ones). The provider and tenant still have to match.
   */
  readonly rebindClient?: boolean;
  /**
   * Only check the owner: write none of it (authorize checks before the sign-in and records the binding once it is
   * stored). A salt fingerprint given is still recorded into a binding that has none, with the owner left as recorded:
   * the caller is about to hash with that salt (conform-pii).
   */
  readonly checkOnly?: boolean;
  /**
   * Let the given salt fingerprint replace the recorded one (`run --new-pii-salt`): the operator switches salts on
   * purpose, and each hashed item pulled again then publishes one change of its pseudonyms.
   */
  readonly newPiiSalt?: boolean;
  /**
   * Refuse the salt fingerprint the binding records already (the start of `run --new-pii-salt`, with `newPiiSalt`): the
   * flag left in a service definition or script would take a later mistyped salt as a switch. Not for the binds of that
   * process's cycles, the first of which records the new one. A directory that records none takes it, as without the flag.
   */
  readonly refuseRecordedPiiSalt?: boolean;
  /**
   * Only check a binding already recorded, writing nothing to it: neither another owner's of a directory without state,
   * nor a salt fingerprint or tenant of this owner's (a bridge opening, outside the cycle lease). A cycle of the
   * recorded settings may be under way, about to store its first token or snapshot, which would then sit under this
   * binding (and its next cycle be refused). The bind under the lease, where no cycle of another runs, records them.
   */
  readonly keepOther?: boolean;
  /**
   * The caller diffs against the snapshots (a cycle, a re-drive, conform-pii): the store the binding records must still
   * be there (SnapshotStoreMissingError), and, unless `checkOnly` or `keepOther`, the store's id (made when it has none)
   * is recorded where none is yet. Not for authorize, which stores tokens before any snapshot exists.
   */
  readonly snapshots?: boolean;
}

/**
 * Checks `binding` against the one recorded in `<dir>/binding.json`, recording it on first use (and a tenant or salt
 * fingerprint not yet recorded). The binding guards state: while the directory holds no tokens and no snapshots (a
 * first run that failed on a mistyped setting), it simply follows the settings; so does the salt fingerprint while it
 * holds no snapshots. With `checkOnly`, `binding` may name only some of the owner (conform-pii, which never calls the
 * provider, knows the tenant alone): only those are checked.
 *
 * @throws StateBindingMismatchError when the directory holds state of another provider, client or tenant.
 * @throws PiiSaltMismatchError when its snapshots were hashed with another salt than the fingerprint given names
 *   (unless `newPiiSalt`).
 * @throws PiiSaltAlreadyRecordedError with `refuseRecordedPiiSalt`, when the fingerprint given is the recorded one.
 * @throws StateBindingMissingError when it holds state but no binding file (restore the file to let its owner in).
 * @throws SnapshotStoreMissingError with `snapshots`, when the snapshot store the binding records is gone or replaced.
 * @throws CorruptStateError when the binding file cannot be parsed.
 * @example
 * ```ts
 * await bindStateDir(".state", { baseUrl: "https://api.example.test", clientId: "c-1", tenant: "acme" });
 * ```
 */
export async function bindStateDir(dir: string, binding: StateBinding, options?: BindOptions): Promise<void>;
export async function bindStateDir(dir: string, binding: Partial<StateBinding>, options: BindOptions & { readonly checkOnly: true }): Promise<void>;
export async function bindStateDir(dir: string, binding: Partial<StateBinding>, options: BindOptions = {}): Promise<void> {
  const file = path.join(dir, STATE_FILES.binding);
  const recorded = readBinding(file);
  let next = nextBinding(dir, file, recorded, binding, options);
  const current = next ?? recorded;
  // Recorded before the cycle writes its first snapshot, so a store lost from then on is noticed.
  if (options.snapshots === true && options.checkOnly !== true && options.keepOther !== true && current !== undefined && current.snapshotStoreId === undefined) {
    next = { ...current, snapshotStoreId: await makeSnapshotStoreId(dir) };
  }
  if (next === undefined) return;
  makeDirDurable(dir);
  await writeFileAtomic(file, `${JSON.stringify(next)}\n`, { mode: 0o600 });
}

/** The binding to write for `given` over `recorded` (undefined: leave the file as it is); throws a refusal. */
function nextBinding(dir: string, file: string, recorded: StateBinding | undefined, given: Partial<StateBinding>, options: BindOptions): StateBinding | undefined {
  if (recorded === undefined) {
    if (holdsState(dir)) throw new StateBindingMissingError(file);
    // Only a check may name part of the owner (the overloads): what is written is a whole binding.
    return options.checkOnly === true ? undefined : merged({}, given);
  }
  const fields = OWNER_FIELDS.filter((field) => recorded[field] !== undefined && given[field] !== undefined && recorded[field] !== given[field]);
  if (fields.length > 0) {
    if (holdsState(dir)) {
      const clientOnly = fields.length === 1 && fields[0] === "clientId";
      if (!(clientOnly && options.rebindClient === true)) throw new StateBindingMismatchError(file, fields, { recorded, given });
      // A new client of the same tenant: its snapshots stay, and the salt they were hashed with is still recorded.
      return options.checkOnly === true ? undefined : merged(recorded, given);
    }
    if (options.keepOther === true || options.checkOnly === true) return undefined;
    // Another owner takes a directory without state: no pseudonym of the recorded salt stays in it, nor a store it used.
    const { piiSaltFingerprint: _none, snapshotStoreId: _store, ...owner } = recorded;
    return merged(owner, given);
  }
  if (options.snapshots === true) checkSnapshotStore(dir, file, recorded);
  const salt = given.piiSaltFingerprint;
  if (options.refuseRecordedPiiSalt === true && salt !== undefined && salt === recorded.piiSaltFingerprint) throw new PiiSaltAlreadyRecordedError(file);
  // A directory without a fingerprint (first hashed now, or written by a version before fingerprints) learns this one.
  const verdict = piiSaltVerdict(recorded.piiSaltFingerprint, salt, { newSalt: options.newPiiSalt === true });
  if (verdict === "differs" && holdsSnapshots(dir)) throw new PiiSaltMismatchError(file);
  const newSalt = verdict !== "same";
  if (options.keepOther === true) return undefined;
  if (options.checkOnly === true) return newSalt && recorded.piiSaltFingerprint === undefined ? { ...recorded, piiSaltFingerprint: salt } : undefined;
  // Same owner; only a tenant or a salt learnt now is worth recording.
  const tenantLearnt = recorded.tenant === undefined && given.tenant !== undefined;
  return tenantLearnt || newSalt ? merged(recorded, given) : undefined;
}

/** `base` with every field `given` holds a value for replaced (a field given as undefined keeps `base`'s). */
function merged(base: Partial<StateBinding>, given: Partial<StateBinding>): StateBinding {
  const defined = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
  return { ...base, ...defined } as StateBinding;
}

/** Refuses a directory whose snapshot store is not the one `recorded` names (none recorded: nothing to check). */
function checkSnapshotStore(dir: string, file: string, recorded: StateBinding): void {
  const { snapshotStoreId } = recorded;
  if (snapshotStoreId === undefined) return;
  const found = snapshotStoreIdOf(dir);
  if (found !== snapshotStoreId) throw new SnapshotStoreMissingError(file, { ...recorded, snapshotStoreId }, found);
}

/** Whether the directory holds what the binding protects: tokens, or snapshots of what was published. */
function holdsState(dir: string): boolean {
  return existsSync(path.join(dir, STATE_FILES.tokens)) || holdsSnapshots(dir);
}

/**
 * Whether the directory holds snapshots: what a cycle diffs pulled items against, pseudonyms included. The store's id
 * file alone is none: a first cycle's bind makes it before that cycle fails, say, on a mistyped client id. Nor is a
 * write's temp file a crash left: never renamed into the store, which sweeps it.
 */
function holdsSnapshots(dir: string): boolean {
  try {
    return readdirSync(path.join(dir, STATE_DIRS.snapshots)).some((name) => name !== STORE_ID_FILE && !name.endsWith(TEMP_SUFFIX));
  } catch {
    return false;
  }
}

function readBinding(file: string): StateBinding | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalStateError("state directory binding cannot be read", { file }, { cause: error });
  }
  try {
    const value = JSON.parse(text) as Partial<Record<keyof StateBinding, unknown>>;
    if (typeof value.baseUrl !== "string" || typeof value.clientId !== "string") throw new Error("baseUrl or clientId missing");
    if (value.tenant !== undefined && typeof value.tenant !== "string") throw new Error("tenant is not a string");
    if (value.piiSaltFingerprint !== undefined && typeof value.piiSaltFingerprint !== "string") throw new Error("piiSaltFingerprint is not a string");
    if (value.snapshotStoreId !== undefined && typeof value.snapshotStoreId !== "string") throw new Error("snapshotStoreId is not a string");
    return {
      baseUrl: value.baseUrl,
      clientId: value.clientId,
      ...(value.tenant !== undefined ? { tenant: value.tenant } : {}),
      ...(value.piiSaltFingerprint !== undefined ? { piiSaltFingerprint: value.piiSaltFingerprint } : {}),
      ...(value.snapshotStoreId !== undefined ? { snapshotStoreId: value.snapshotStoreId } : {}),
    };
  } catch (cause) {
    throw new CorruptStateError("state directory binding is not valid JSON of a binding", { file }, { cause });
  }
}
