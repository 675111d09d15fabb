/**
 * Injected faults: the next `count` requests matching method and path prefix fail
 * as told (a status with the error envelope, or an HTML page on the authorization
 * screen, and `Retry-After`; the status alone; a delay; a body cut short), before their handler runs or, `applied`, after it:
 * the write done, its answer lost. The control surface itself is never faulted.
 */

export interface FaultSpec {
  readonly method?: string;
  readonly pathPrefix?: string;
  readonly status?: number;
  readonly count: number;
  /** Seconds, sent as `Retry-After`. */
  readonly retryAfter?: number;
  /** Real-time delay before answering (for client timeouts). */
  readonly delayMs?: number;
  readonly malformed?: boolean;
  /**
   * Answer `status` with no body: no error envelope, no OAuth code. Spec §4.2 gives the token endpoint's 401 to a
   * refused refresh token and to wrong client credentials alike, its body not shown (§7); this is that 401 naming neither.
   */
  readonly bare?: boolean;
  /**
   * Serve the request first (a write is applied), then delay and answer as told: the answer a gateway timeout or
   * a dropped connection loses after the provider did the work.
   */
  readonly applied?: boolean;
}

interface ActiveFault extends FaultSpec {
  remaining: number;
}

export class FaultQueue {
  private faults: ActiveFault[] = [];

  add(spec: FaultSpec): void {
    // The control surface's schema already asks for count >= 1; in-process callers (tests) come here directly.
    if (!Number.isInteger(spec.count) || spec.count < 1) throw new RangeError(`fault count must be a whole number of 1 or more, got ${spec.count}`);
    this.faults.push({ ...spec, method: spec.method?.toUpperCase(), remaining: spec.count });
  }

  clear(): void {
    this.faults = [];
  }

  /** Faults still armed (for the control surface). */
  list(): FaultSpec[] {
    return this.faults.map(({ remaining, ...spec }) => ({ ...spec, count: remaining }));
  }

  /** Consumes and returns the first armed fault matching the request, if any. */
  take(method: string, path: string): FaultSpec | undefined {
    const index = this.faults.findIndex(
      (f) => (f.method === undefined || f.method === method.toUpperCase()) && (f.pathPrefix === undefined || path.startsWith(f.pathPrefix)),
    );
    if (index < 0) return undefined;
    const fault = this.faults[index] as ActiveFault;
    fault.remaining--;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }
}
