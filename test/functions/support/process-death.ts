/**
 * A Lambda container's process for crash injection: its calls, the call it dies at, and its clock. A process killed
 * "after" a call dies once that call's effect landed; `untilDeath` returns only once that effect and every call the
 * process had in flight have landed, and nothing the dead process sends afterwards reaches a service. A process that
 * lives serves other tests for its clock alone (the functions harness's `waitingClock`, test/local/token-safety).
 */
import type { Clock } from "../../../shared/clock.js";
import { within } from "../../within.js";

export type Mode = "before" | "after" | "partial";

export interface Plan {
  /** Index of the call (AWS or provider) the process dies at. */
  readonly at: number;
  readonly mode: Mode;
}

/** A time source a test moves on, in seconds (the provider sandbox's control). */
export interface MovableTime {
  now(): number;
  advanceClock(seconds: number): void;
}

/** A call that never answers: the process is gone. */
const gone = <T>(): Promise<T> => new Promise<T>(() => undefined);

/**
 * One Lambda container's calls, and the point at which its process dies (none: it lives; the harness runs all its
 * containers' calls through one such, for its `waitingClock`).
 */
export class Process {
  readonly calls: string[] = [];
  dead = false;
  /** Settles when the process dies (never, while it lives). */
  readonly died: Promise<void>;
  private die!: () => void;
  /**
   * Whether the call the process died at had applied (or partly applied) before it died; set before `untilDeath`
   * returns. Undefined if that call failed (whether it applied is unknown).
   */
  applied: boolean | undefined;
  /** Calls sent and not yet ended (the dying one among them), each as a promise that never rejects. */
  private readonly sending = new Set<Promise<void>>();
  /** Waits of {@link clock} not yet ended, by the time each ends. */
  private readonly waits = new Set<{ readonly endsAt: number }>();

  constructor(private readonly plan?: Plan) {
    this.died = new Promise<void>((resolve) => {
      this.die = resolve;
    });
  }

  /** Runs `send` as call `name`, unless the process is dead; `half` applies part of the call (partial mode). */
  async call<T>(name: string, send: () => Promise<T>, half?: () => Promise<unknown>): Promise<T> {
    if (this.dead) return gone();
    const index = this.calls.push(name) - 1;
    if (this.plan?.at !== index) {
      const result = await this.track(send());
      // An answer arriving after the process died reaches no one.
      return this.dead ? gone() : result;
    }
    this.dead = true;
    this.die();
    const { mode } = this.plan;
    const effect = mode === "before" ? undefined : mode === "partial" && half !== undefined ? half : send;
    if (effect === undefined) this.applied = false;
    else
      void this.track(
        effect().then(() => {
          this.applied = true;
        }),
      );
    return gone();
  }

  /**
   * `target`, each of its methods that answers with a promise made a call of the process (its clock then waits for
   * it), as are those of the handles such a call answers with (a lock's lease).
   */
  through<T extends object>(target: T): T {
    return new Proxy(target, {
      get: (object, property, receiver) => {
        const value = Reflect.get(object, property, receiver) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const answer = (value as (...args: unknown[]) => unknown).apply(object, args);
          if (!(answer instanceof Promise)) return answer;
          return this.call(String(property), async () => {
            const settled = (await answer) as unknown;
            const handle = typeof settled === "object" && settled !== null && Object.values(settled).some((v) => typeof v === "function");
            return handle ? this.through(settled) : settled;
          });
        };
      },
    });
  }

  /** Resolves once every call sent has ended: what a dead process sent has landed, and it sends nothing more. */
  async settled(): Promise<void> {
    while (this.sending.size > 0) await Promise.all([...this.sending]);
  }

  /**
   * The process's clock over `time`, which its waits move on, as a real clock behaves beside calls that take
   * milliseconds: a wait ends, moving `time` to its end, only once no call of the process is in flight. A wait beside a
   * call (the token lease's keep-alive beside the token save) so ends after that call, and waits that overlap do not
   * add up: the time the cycle reads, so its path (its deadline), does not turn on how fast the services answer. A wait
   * aborted before it ends moves no time; waits end in the order of their ends; a dead process's waits never end.
   */
  clock(time: MovableTime): Clock {
    return {
      now: () => time.now(),
      sleep: async (ms, signal) => {
        const wait = { endsAt: time.now() + ms };
        this.waits.add(wait);
        try {
          // Waits end in the order of their ends, as on a real clock: a long wait (a lease poll until its expiry) must
          // not carry time past a shorter one beside it (the holder's keep-alive, due to renew first).
          for (;;) {
            await this.quiet();
            if (this.dead) return await gone<void>();
            if (signal?.aborted === true) return;
            if ([...this.waits].every((other) => other.endsAt >= wait.endsAt)) break;
            await new Promise((resolve) => setImmediate(resolve));
          }
          const left = wait.endsAt - time.now();
          if (left > 0) time.advanceClock(left / 1_000);
        } finally {
          this.waits.delete(wait);
        }
      },
    };
  }

  /** Resolves once no call is in flight, an event-loop turn on: the code a landed call resumes has sent its next one. */
  private async quiet(): Promise<void> {
    do {
      await this.settled();
      await new Promise((resolve) => setImmediate(resolve));
    } while (this.sending.size > 0);
  }

  private track<T>(sent: Promise<T>): Promise<T> {
    const ended: Promise<void> = sent.then(
      () => void this.sending.delete(ended),
      () => void this.sending.delete(ended),
    );
    this.sending.add(ended);
    return sent;
  }
}

/**
 * How long {@link untilDeath} waits: far beyond an invocation's length on a loaded machine (well under a second), far
 * below the crash-injection tests' own timeout (600 s), which a hang would otherwise use up without naming the plan.
 */
export const UNTIL_DEATH_LIMIT_MS = 60_000;

/**
 * Settles once the process died or `invocation` ended, and then only once the calls it sent have landed: the dying
 * call's effect (an "after" or "partial" crash) and the calls it had in flight. The state the caller then checks is
 * the one the killed process left, with no write of it landing among the next invocation's. Rejects after `limitMs`
 * (an invocation that hangs, or a call that never lands), naming the calls made.
 */
export async function untilDeath(life: Process, invocation: Promise<unknown>, limitMs: number = UNTIL_DEATH_LIMIT_MS): Promise<void> {
  // Bound in time, not in event-loop turns: an invocation slow to reach its death call (a loaded machine) is waited
  // for, not taken for one that lived.
  const landed = (async () => {
    await Promise.race([invocation.then(noop, noop), life.died]);
    await life.settled();
  })();
  await within(landed, limitMs, () => {
    const at = life.calls.length - 1;
    const state = life.dead ? `died at its call #${at} (${life.calls[at]}), but a call it sent had not landed` : "neither died nor ended";
    return `the invocation ${state} within ${limitMs} ms (calls: ${life.calls.join(", ")})`;
  });
}

function noop(): void {}
