/**
 * Fault injection for crash-safety tests: wraps the effectful ports so that the n-th effect "crashes"
 * (throws) either before it takes effect or after it took effect but before the caller learns so.
 */
import type { EventPublisher, Quarantine, SnapshotStore } from "../../shared/bridge/ports.js";
import type { TransactionProviderPort } from "../../shared/bridge/provider.js";

/** Thrown at the planned crash point. */
export class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

/** Where the cycle should crash: the n-th effect (0-based), before or after it applies. */
export interface CrashPlan {
  readonly at: number;
  readonly after: boolean;
}

/** Counts effects and throws at the planned one. */
export class CrashPoint {
  effects: string[] = [];
  crashed = false;
  constructor(private readonly plan: CrashPlan | undefined) {}

  async around<T>(name: string, effect: () => Promise<T>): Promise<T> {
    const index = this.effects.length;
    this.effects.push(name);
    const hit = !this.crashed && this.plan !== undefined && this.plan.at === index;
    if (hit && !this.plan.after) {
      this.crashed = true;
      throw new SimulatedCrash(`crash before ${name}`);
    }
    const result = await effect();
    if (hit) {
      this.crashed = true;
      throw new SimulatedCrash(`crash after ${name}`);
    }
    return result;
  }
}

/**
 * Wraps the ports, passing each call's options on (an acknowledge's `callerRetries` among them); every call of
 * publish / putMany / quarantine.put / quarantine.deleteMany / list / acknowledge is an effect point.
 */
export function crashingPorts(
  ports: { snapshots: SnapshotStore; publisher: EventPublisher; quarantine: Quarantine; provider: TransactionProviderPort },
  crash: CrashPoint,
): { snapshots: SnapshotStore; publisher: EventPublisher; quarantine: Quarantine; provider: TransactionProviderPort } {
  return {
    snapshots: {
      getMany: (keys, options) => ports.snapshots.getMany(keys, options),
      putMany: (snapshots, options) => crash.around("snapshots.putMany", () => ports.snapshots.putMany(snapshots, options)),
      scan: (options) => ports.snapshots.scan(options),
      vacuum: () => ports.snapshots.vacuum(),
    },
    publisher: { publish: (events, options) => crash.around("publisher.publish", () => ports.publisher.publish(events, options)) },
    quarantine: {
      put: (record) => crash.around("quarantine.put", () => ports.quarantine.put(record)),
      list: () => ports.quarantine.list(),
      pages: (options) => ports.quarantine.pages(options),
      deleteMany: (ids, options) => crash.around("quarantine.deleteMany", () => ports.quarantine.deleteMany(ids, options)),
      size: () => ports.quarantine.size(),
    },
    provider: {
      listTransactions: (query, options) => crash.around("provider.listTransactions", () => ports.provider.listTransactions(query, options)),
      acknowledgeTransactions: (ids, options) => crash.around("provider.acknowledgeTransactions", () => ports.provider.acknowledgeTransactions(ids, options)),
    },
  };
}
