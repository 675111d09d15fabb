/**
 * The cycle lease and the state directory's checks of local mode: cycles, re-drives and conform-pii passes of one
 * tenant never overlap, and run only on the state directory the bridge opened, bound to its provider, client and
 * tenant (conform-pii, which calls no provider, checks the tenant alone), and under `hash` to the salt its snapshots'
 * pseudonyms were made with. Kept apart from the wiring, since every command runner goes through the same lease and checks.
 */
import type { Stats } from "node:fs";
import { join } from "node:path";
import { piiSaltFingerprint, untilLaterSecond, type LockHandle } from "../bridge/index.js";
import { whileHolding } from "../lease-keep-alive.js";
import { errorLabel } from "../error-label.js";
import {
  HardLinksUnsupportedError,
  LeaseUnreadableError,
  LocalStateError,
  PiiSaltAlreadyRecordedError,
  PiiSaltMismatchError,
  SnapshotStoreMissingError,
  StateBindingMismatchError,
  StateBindingMissingError,
  STATE_DIRS,
  STATE_FILES,
  bindStateDir,
  snapshotStoreIdOf,
  type BindOptions,
  type StateBinding,
} from "../local/index.js";
import type { LocalSettings, StateSettings } from "./config.js";
import { shellQuoted } from "./access-advice.js";
import { statOf } from "./path-checks.js";
import { CliError, ConfigError, CycleFailedError, EXIT, PiiSaltChangedError, PiiSaltUnchangedError, StateDirTakenError } from "./errors.js";
import { leaseUnreadableProblem, noHardLinksProblem, stateErrorOf, stateFileProblem, stoppedBeforeRefresh, systemErrorCode, unwritableStateDirRemedy } from "./engine-errors.js";
import { recheckStateDirAccess } from "./state-access.js";
import type { LocalState } from "./local-bridge.js";

/** Name of the lease one cycle holds, so two local processes never run cycles of one tenant at once. */
export const CYCLE_LOCK = "cycle";
/** Lease length of a cycle: short, so a crashed run blocks the next one for at most this long. */
export const CYCLE_LEASE_MS = 30_000;

const CYCLE_LEASE_MESSAGES = {
  lost: "the cycle lease was lost; another process may start a cycle",
  failed: "renewing the cycle lease failed",
};

/**
 * Stops a cycle (exit 2) when the state directory at its path is no longer the one the bridge opened: moved, removed or
 * replaced while a loop ran. Its lease, binding and snapshots would otherwise start afresh in an empty directory, where
 * every change reads as new, until the missing token file stopped the loop at its next refresh. Returns its stats.
 */
function assertSameStateDir(bridge: LocalState): Stats {
  const dir = bridge.settings.stateDir;
  const now = statOf(dir);
  const known = bridge.stateDirIdentity;
  if (now?.isDirectory() && now.dev === known.dev && now.ino === known.ino) return now;
  // Some mounts renumber a directory that did not change (an NFS automount remounted, FUSE without stable inodes): one
  // that still holds its binding is a state directory, checked against the settings under the lease as every cycle's.
  if (now?.isDirectory() && statOf(join(dir, STATE_FILES.binding))?.isFile() === true) {
    known.dev = now.dev;
    known.ino = now.ino;
    return now;
  }
  throw new ConfigError(
    [
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `${dir} was ${now === undefined ? "moved or removed" : "replaced"} while the bridge ran; nothing was done in this cycle: put the directory back, or start the bridge again to use what is there now`,
      },
    ],
    { heading: "The state directory changed under the bridge" },
  );
}

/**
 * Binds the state directory to the provider, client and tenant on first use, and refuses its state to any other.
 * With `checkOnly`, `binding` may name the tenant alone (see `bindStateDir`). A binding naming the fingerprint of a
 * `hash` salt records it where none is, and refuses another one (`newPiiSalt` replaces it).
 *
 * @throws StateDirTakenError when the directory holds state of another provider, client or tenant.
 * @throws PiiSaltChangedError when its snapshots were hashed with another BRIDGE_PII_SALT.
 * @throws PiiSaltUnchangedError with `refuseRecordedPiiSalt`, when BRIDGE_PII_SALT is the recorded one already.
 * @throws ConfigError when its binding file is unreadable.
 * @example
 * await bindToSettings(settings.stateDir, { baseUrl, clientId: settings.clientId, tenant: settings.tenant });
 */
export async function bindToSettings(dir: string, binding: StateBinding, options?: BindOptions): Promise<void>;
export async function bindToSettings(dir: string, binding: Partial<StateBinding>, options: BindOptions & { readonly checkOnly: true }): Promise<void>;
export async function bindToSettings(dir: string, binding: Partial<StateBinding>, options: BindOptions = {}): Promise<void> {
  try {
    // The overloads above are bindStateDir's: a part of the owner comes only with checkOnly.
    await bindStateDir(dir, binding as StateBinding, options);
  } catch (error) {
    if (error instanceof PiiSaltMismatchError) throw new PiiSaltChangedError(dir, { cause: error });
    if (error instanceof PiiSaltAlreadyRecordedError) throw new PiiSaltUnchangedError(dir, { cause: error });
    if (error instanceof StateBindingMismatchError) throw new StateDirTakenError(error.fields, dir, error, { cause: error });
    if (error instanceof SnapshotStoreMissingError) throw snapshotStoreMissing(error, dir);
    if (error instanceof StateBindingMissingError) {
      // Settings without the provider's (conform-pii) cannot write the file. `run` says how only where a token is stored
      // (it asks for one first), `authorize` before its sign-in: conform-pii's case is often a directory whose token is gone.
      if (binding.baseUrl === undefined || binding.clientId === undefined) {
        const how = "`run` prints how with the tenant's settings, or `authorize` while the directory holds no token";
        throw stateFileProblem(error, dir, STATE_FILES.binding, `if it is this tenant's, restore the file (${how}); otherwise use another state directory`);
      }
      // Base URL, client id, tenant and the snapshot store's id are no secrets: the owner can restore the file as it was.
      const restore = writeBindingCommand({ ...binding, ...snapshotStoreBindingOf(dir) }, error.file ?? join(dir, STATE_FILES.binding));
      throw stateFileProblem(error, dir, STATE_FILES.binding, `if it is this tenant's, restore the file (in a POSIX shell: \`${restore}\`); otherwise use another state directory`);
    }
    // The snapshot store's id, made here, is created as a lease is: not a file to restore.
    if (error instanceof HardLinksUnsupportedError) throw noHardLinksProblem(error);
    if (error instanceof LocalStateError) throw stateFileProblem(error, dir, STATE_FILES.binding, "restore it or use another state directory");
    throw error;
  }
}

/**
 * A POSIX shell command that writes `binding` into `file`, for a message to show. Its umask makes a new file 0600: under
 * the shell's own (002 on many distributions) it would be 0664, which the next run refuses as writable by its group.
 */
function writeBindingCommand(binding: Partial<StateBinding>, file: string): string {
  return `(umask 077; printf '%s\\n' ${shellQuoted(JSON.stringify(binding))} > ${shellQuoted(file)})`;
}

/** The id of the directory's snapshot store as a binding records it, if it has a readable one. */
function snapshotStoreBindingOf(dir: string): Pick<StateBinding, "snapshotStoreId"> {
  try {
    const snapshotStoreId = snapshotStoreIdOf(dir);
    return snapshotStoreId === undefined ? {} : { snapshotStoreId };
  } catch {
    // A damaged id file: the restored binding records none, and the next cycle names the file.
    return {};
  }
}

/**
 * The state directory's snapshots are gone or replaced (see SnapshotStoreMissingError), as an error naming what is
 * missing, how to get it back, and how to start over on purpose: a binding without the store's id, which the next
 * cycle records anew (the binding holds no secret, so the command can show it).
 */
function snapshotStoreMissing(error: SnapshotStoreMissingError, dir: string): ConfigError {
  const snapshots = join(dir, STATE_DIRS.snapshots);
  const { snapshotStoreId: _lost, ...rest } = error.recorded;
  const file = error.file ?? join(dir, STATE_FILES.binding);
  const startOver = writeBindingCommand(rest, file);
  return new ConfigError(
    [
      {
        setting: "BRIDGE_STATE_DIR",
        problem:
          `${error.message} (recorded in ${file}): without the snapshots it was used with, every card and transaction the provider still lists ` +
          `would be published again as new, so nothing was done; restore ${snapshots} as it was, or, to start over on purpose ` +
          `(consumers then get those events again${error.found === undefined ? "" : `, diffed against the snapshots there now`}), ` +
          `let the next run record the store there now (in a POSIX shell: \`${startOver}\`)`,
      },
    ],
    { cause: error, heading: `The state directory (${dir}) lost its snapshots` },
  );
}

/** Who the settings say the state directory belongs to, with the fingerprint of the salt they hash with, if any. */
export function bindingOf(settings: LocalSettings, baseUrl: string): StateBinding {
  return { baseUrl, clientId: settings.clientId, tenant: settings.tenant, ...saltBindingOf(settings) };
}

/**
 * The part of a binding the settings' PII salt makes: its fingerprint under `hash`, nothing otherwise (other modes
 * hash nothing, and leave a recorded fingerprint as it is for a return to `hash`).
 */
export function saltBindingOf(settings: Pick<StateSettings, "piiMode" | "piiSalt">): Pick<StateBinding, "piiSaltFingerprint"> {
  return settings.piiMode === "hash" && settings.piiSalt !== undefined ? { piiSaltFingerprint: piiSaltFingerprint(settings.piiSalt) } : {};
}

/**
 * Runs `work` under the tenant's cycle lease (renewed while it runs), once the state directory's binding is checked
 * again under it: cycles and re-drives of one tenant never overlap.
 *
 * @throws CliError (exit 1) when another process holds the lease.
 * @example
 * const report = await withCycleLock(bridge, () => redriveQuarantined(bridge.transactions));
 */
export async function withCycleLock<T>(bridge: LocalState, work: () => Promise<T>): Promise<T> {
  recheckStateDirAccess(bridge.settings.stateDir, assertSameStateDir(bridge), (text) => bridge.transactions.logger.warn(text));
  const taken = await takeCycleLease(bridge);
  if (taken === undefined) {
    // Named, so a person knows what to wait for (or to stop): a cron job beside a loop, a second terminal.
    const holder = await bridge.lock.holderOf?.(CYCLE_LOCK).catch(() => undefined);
    throw new CliError(
      `another bridge process${holder ? ` (${holder})` : ""} is running a cycle, re-drive or conform-pii on this state directory ` +
        `(${bridge.settings.stateDir}): run this command again once it is done (a \`run --interval\` loop retries by itself). The lease of ` +
        `a run that has exited is taken over at once from the same Linux boot and pid namespace, else it expires within ${CYCLE_LEASE_MS / 1000} s of its last renewal`,
      EXIT.failed,
    );
  }
  const { handle } = taken;
  // A short lease kept alive (every third of it) while the cycle runs: a crash frees it soon, a long cycle keeps it.
  // The same keep-alive as the token save's, so no renewal lands after the release.
  const underLease = async (): Promise<T> => {
    // Taken from a run that crashed moments ago, maybe between publishing events and storing their snapshots: the same
    // subjects may be published again under the same `subject.sequence`, so this run starts in a later second, as a
    // run that stopped there itself would have left it (CycleRun's leaveSecond), and consumers can order the two.
    if (taken.tookOver) await bridge.clock.sleep(untilLaterSecond(bridge.clock.now()));
    // Checked again under the lock: two first uses of an empty directory both pass the check at open, and only the
    // first cycle's state may stay; the other one now finds it and stops before any provider call.
    await bridge.bind();
    // Another process may have written snapshots since this one last held the lease (a `run --once` beside a loop).
    await bridge.snapshots.reload().catch(async (error: unknown) => {
      throw stateErrorOf(error, bridge);
    });
    // Each write of the work checks the lease first: a process stopped past it must not write what it read before.
    return bridge.leaseGuard === undefined ? work() : bridge.leaseGuard.during(handle, work);
  };
  try {
    return await whileHolding(handle, CYCLE_LEASE_MS, bridge.clock, underLease, bridge.transactions.logger, CYCLE_LEASE_MESSAGES);
  } finally {
    // A release the state directory refuses (full, read-only) must not replace what the work did or why it failed
    // (such as the token probe's "no refresh was tried"): the lease is kept for the next cycle of this process, and
    // runs out by itself otherwise (taken over at once on this machine once the process has exited).
    await handle.release().catch((error: unknown) => {
      unreleasedLeases.set(bridge, handle);
      bridge.transactions.logger.warn("releasing the cycle lease failed; the next cycle of this process takes it again, another process once it runs out", {
        // Not `code`: the loggers hide an attribute of that name (an OAuth authorization code, secret-attributes.ts).
        error: systemErrorCode(error) ?? errorLabel(error),
      });
    });
  }
}

/** Cycle leases this process could not release (see {@link withCycleLock}), by bridge: its next cycle renews one. */
const unreleasedLeases = new WeakMap<LocalState, LockHandle>();

/**
 * Takes the cycle lease for `bridge` (undefined while another process holds it): renews the one an earlier cycle of
 * this process could not release, else takes it anew. `tookOver`: taken from a holder that crashed (see
 * `LockHandle.tookOver`), never so for a renewed lease, which was this process's own. A state directory that takes no
 * writes (full, read-only, gone) is a CycleFailedError naming it (exit 1, a loop tries again at its next interval),
 * before any provider call.
 */
async function takeCycleLease(bridge: LocalState): Promise<{ handle: LockHandle; tookOver: boolean } | undefined> {
  const kept = unreleasedLeases.get(bridge);
  try {
    if (kept !== undefined && (await kept.renew(CYCLE_LEASE_MS))) {
      unreleasedLeases.delete(bridge);
      return { handle: kept, tookOver: false };
    }
    unreleasedLeases.delete(bridge);
    const handle = await bridge.lock.tryAcquire(CYCLE_LOCK, CYCLE_LEASE_MS);
    return handle === undefined ? undefined : { handle, tookOver: handle.tookOver === true };
  } catch (error) {
    // Its own words: the directory may take writes, but a lease file (maybe another user's) could not be read.
    if (error instanceof LeaseUnreadableError) throw leaseUnreadableProblem(error, bridge.settings.stateDir);
    // Not a directory that takes no writes (its code, EPERM, would say so): one whose file system makes no hard links.
    if (error instanceof HardLinksUnsupportedError) throw noHardLinksProblem(error);
    const code = systemErrorCode(error);
    if (code === undefined) throw error;
    const { stateDir } = bridge.settings;
    throw new CycleFailedError(
      stoppedBeforeRefresh(
        `cannot take the cycle lease in ${join(stateDir, STATE_DIRS.locks)} (${code}): the state directory takes no writes now`,
        ", so nothing was sent to the provider",
        `: ${unwritableStateDirRemedy(stateDir)}`,
      ),
      { cause: error },
    );
  }
}
