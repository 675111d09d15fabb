/**
 * Writes of a local cycle checked against its lease. A bridge process stopped past its cycle lease (Ctrl-Z, SIGSTOP, a
 * debugger) resumes believing it holds it, while another run may have taken it meanwhile: the page it read before the
 * stop is older than what that run stored and published, and writing it would roll the snapshot back and publish the
 * old state as a change, which the provider, acknowledged, never lists again. So every write (events, snapshots and
 * each of their compaction batches, quarantine, and the provider's acknowledge, which is unversioned: sent late, it
 * would mark synced a change another run listed meanwhile and nobody published) first reads the lease, and one another
 * process took stops the cycle before anything is written.
 */
import type { EventPublisher, LockHandle, ProviderPort, Quarantine, SnapshotStore } from "../bridge/index.js";
import { LeaseUnreadableError } from "../local/index.js";
import { CliError, EXIT } from "./errors.js";

/** The cycle lease was lost under a live process: this cycle stops before its next write (exit 1). */
export class CycleLeaseLostError extends CliError {
  override name = "CycleLeaseLostError";

  constructor(stateDir: string) {
    super(
      `the cycle lease of this state directory (${stateDir}) was lost (this process was stopped or stalled past it, and ` +
        "another process took it over): the cycle stopped before its next write; nothing is lost, the next run resumes",
      EXIT.failed,
    );
  }
}

/**
 * The check before a write could not read the cycle's own lease file, or list the locks directory (LeaseUnreadableError): whether another process
 * took it is unknown, so the cycle stops there (exit 1). Not the words of a lease that could not be taken ("without
 * touching the token"): by then the cycle may have refreshed the token and published events.
 */
export class CycleLeaseUnreadableError extends CliError {
  override name = "CycleLeaseUnreadableError";

  constructor(error: LeaseUnreadableError, stateDir: string) {
    super(
      `whether this process still holds the cycle lease of this state directory (${stateDir}) is unknown: ${error.failure} (${error.code}), ` +
        "so the cycle stopped before its next write; what it did before stands, nothing is lost, the next run resumes",
      EXIT.failed,
      { cause: error },
    );
  }
}

/**
 * The lease the current cycle runs under, and the adapters whose writes check it.
 *
 * @example
 * const guard = new CycleLeaseGuard(stateDir, 30_000);
 * const guarded = { ...deps, publisher: guard.publisher(deps.publisher) };
 * await guard.during(handle, () => pollTransactions(guarded));
 */
export class CycleLeaseGuard {
  private handle: LockHandle | undefined;

  /** @param ttlMs - the cycle lease's length, for one taken again after it ran out. */
  constructor(
    private readonly stateDir: string,
    private readonly ttlMs: number,
  ) {}

  /** Runs `work` with its writes checked against `handle`. */
  async during<T>(handle: LockHandle, work: () => Promise<T>): Promise<T> {
    this.handle = handle;
    try {
      return await work();
    } finally {
      this.handle = undefined;
    }
  }

  /**
   * @throws CycleLeaseLostError when another process took the cycle's lease; nothing outside a cycle, or when the lock
   *   cannot tell. A lease that only ran out (nobody took it) is taken again (see `LockHandle.confirm`).
   * @throws CycleLeaseUnreadableError when the lease file could not be read.
   */
  async check(): Promise<void> {
    const handle = this.handle;
    if (handle?.confirm === undefined) return;
    const held = await handle.confirm(this.ttlMs).catch((error: unknown) => {
      throw error instanceof LeaseUnreadableError ? new CycleLeaseUnreadableError(error, this.stateDir) : error;
    });
    if (!held) throw new CycleLeaseLostError(this.stateDir);
  }

  publisher(inner: EventPublisher): EventPublisher {
    return {
      publish: async (events, options) => {
        await this.check();
        return inner.publish(events, options);
      },
    };
  }

  snapshots(inner: SnapshotStore): SnapshotStore {
    return {
      getMany: (keys, options) => inner.getMany(keys, options),
      scan: (options) => inner.scan(options),
      putMany: async (snapshots, options) => {
        await this.check();
        return inner.putMany(snapshots, options);
      },
      vacuum: async () => {
        await this.check();
        return inner.vacuum();
      },
    };
  }

  provider(inner: ProviderPort): ProviderPort {
    return {
      listTransactions: (query, options) => inner.listTransactions(query, options),
      listErpCards: (query, options) => inner.listErpCards(query, options),
      readErpCard: (cardId, options) => inner.readErpCard(cardId, options),
      acknowledgeTransactions: async (ids, options) => {
        await this.check();
        return inner.acknowledgeTransactions(ids, options);
      },
    };
  }

  quarantine(inner: Quarantine): Quarantine {
    return {
      list: () => inner.list(),
      pages: (options) => inner.pages(options),
      size: () => inner.size(),
      put: async (record) => {
        await this.check();
        return inner.put(record);
      },
      deleteMany: async (ids, options) => {
        await this.check();
        return inner.deleteMany(ids, options);
      },
    };
  }
}
