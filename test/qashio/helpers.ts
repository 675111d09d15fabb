/** Test doubles for the provider client: fake clock, scripted fetch, capturing logger, JWT maker, envelopes. */
import { Logger } from "@aws-lambda-powertools/logger";
import { vi } from "vitest";
import type { Clock, ClientLogger, FetchLike } from "../../shared/qashio/http.js";

/** More sleeps than any test needs: a retry loop without end (its cap broken) then fails the test instead of hanging it. */
const MAX_FAKE_SLEEPS = 10_000;

/** A clock whose sleeps return at once and move time forward; every sleep is recorded. */
export function fakeClock(start = Date.UTC(2025, 0, 15, 12, 0, 0)): Clock & { sleeps: number[]; advance(ms: number): void } {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    sleep: async (ms) => {
      // Sleeps that return at once never yield to timers, so vitest's test timeout could not end such a loop.
      if (sleeps.length >= MAX_FAKE_SLEEPS) throw new Error(`fakeClock: over ${MAX_FAKE_SLEEPS} sleeps, a retry loop without end?`);
      sleeps.push(ms);
      now += ms;
    },
  };
}

/**
 * A wall clock (a {@link fakeClock}) and a monotonic reading (`elapsed`) that both move with every sleep; only the
 * wall clock is stepped (NTP, a person): by `stepBack.byMs` back once the sleeps reach `stepBack.atMs`, or by hand.
 */
export function wallAndMonotonic(stepBack?: { readonly atMs: number; readonly byMs: number }): {
  clock: Clock;
  wall: ReturnType<typeof fakeClock>;
  elapsed: () => number;
} {
  const wall = fakeClock();
  let realMs = 0;
  const clock: Clock = {
    now: () => wall.now(),
    sleep: async (ms) => {
      realMs += ms;
      await wall.sleep(ms);
      if (stepBack !== undefined && realMs === stepBack.atMs) wall.advance(-stepBack.byMs);
    },
  };
  return { clock, wall, elapsed: () => realMs };
}

export interface RecordedCall {
  readonly url: URL;
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

type Reply = Response | Error | ((call: RecordedCall, signal: AbortSignal | undefined) => Response | Promise<Response>);

/**
 * A fetch that answers from a script, in order (the last entry repeats), recording every call.
 * An Error entry makes the call reject like a network failure.
 */
export function scriptedFetch(...replies: Reply[]): FetchLike & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  const fn = async (input: string, init: RequestInit): Promise<Response> => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, key) => {
      headers[key] = value;
    });
    const call: RecordedCall = {
      url: new URL(input),
      method: init.method ?? "GET",
      headers,
      body: typeof init.body === "string" ? (JSON.parse(init.body) as unknown) : undefined,
    };
    calls.push(call);
    const reply = replies[Math.min(calls.length - 1, replies.length - 1)];
    if (reply === undefined) throw new Error("scriptedFetch: no reply scripted");
    if (reply instanceof Error) throw reply;
    if (typeof reply === "function") return reply(call, init.signal ?? undefined);
    return reply.clone();
  };
  return Object.assign(fn, { calls });
}

/** A fetch that answers by path with a handler (for pagination and routing tests). */
export function routedFetch(
  handler: (call: RecordedCall) => Response | Promise<Response>,
): FetchLike & { calls: RecordedCall[] } {
  return scriptedFetch((call) => handler(call));
}

/** Never answers until the request is aborted, then rejects like fetch does. */
export function hangingReply(): (call: RecordedCall, signal: AbortSignal | undefined) => Promise<Response> {
  return (_call, signal) =>
    new Promise<Response>((_resolve, reject) => {
      signal?.addEventListener("abort", () => reject(new DOMException("This operation was aborted", "AbortError")));
    });
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

export const REQUEST_ID = "req-0001";

/** A success envelope of spec §4.1. */
export function ok(data: unknown, extra: Record<string, unknown> = {}): Response {
  return json(200, {
    status_code: 200,
    success: true,
    data,
    meta: { request_id: REQUEST_ID, timestamp: "2025-01-15T12:00:00Z" },
    ...extra,
  });
}

/** An error envelope of spec §7. */
export function fail(
  status: number,
  errors: { field: string | null; code: string; message: string }[] = [],
  headers: Record<string, string> = {},
  requestId: string | null = REQUEST_ID,
): Response {
  return json(
    status,
    {
      status_code: status,
      message: `failure ${status}`,
      errors,
      ...(requestId ? { meta: { request_id: requestId, timestamp: "2025-01-15T12:00:00Z" } } : {}),
    },
    headers,
  );
}

/** A `pagination` block for page `page` of `totalPages`. */
export function pagination(page: number, totalPages: number, pageSize = 2): Record<string, unknown> {
  return {
    page,
    page_size: pageSize,
    total_records: totalPages * pageSize,
    total_pages: totalPages,
    has_next: page < totalPages,
    has_previous: page > 1,
  };
}

/** An unsigned JWT with the given claims (the client never verifies signatures). */
export function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}.signature-not-checked`;
}

export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly attributes?: Readonly<Record<string, unknown>>;
}

/** A logger that keeps every line. */
export function captureLogger(): ClientLogger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  const at = (level: string) => (message: string, attributes?: Readonly<Record<string, unknown>>) => {
    lines.push({ level, message, attributes });
  };
  return {
    lines,
    debug: at("debug"),
    warn: at("warn"),
    text: () => JSON.stringify(lines),
  };
}

/**
 * A clock that moves only through `advance` (and `step`): a sleep resolves once time reaches its end (or its signal
 * aborts), so code that sleeps waits as it would in real time. `advance` wakes the sleepers in time order and lets each
 * run (event-loop turns, no real waiting) before the next.
 */
export function manualClock(start = Date.UTC(2025, 0, 15, 12, 0, 0)): Clock & {
  readonly sleeping: number;
  /** The end of the earliest sleep under way, if any. */
  readonly nextWake: number | undefined;
  advance(ms: number): Promise<void>;
  /**
   * Moves time on at once, as a real clock moves while code runs between two readings of it: the sleeps it passes end
   * on a later event-loop turn, as a timer's callback runs once the code reading the clock has yielded.
   */
  step(ms: number): void;
} {
  let now = start;
  const sleepers = new Set<{ until: number; wake(): void }>();
  const wakeDue = () => {
    for (const sleeper of [...sleepers].filter((s) => s.until <= now).sort((a, b) => a.until - b.until)) sleeper.wake();
  };
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise((resolve) => {
        if (signal?.aborted) return resolve();
        const sleeper = {
          until: now + ms,
          wake() {
            sleepers.delete(sleeper);
            signal?.removeEventListener("abort", sleeper.wake);
            resolve();
          },
        };
        sleepers.add(sleeper);
        signal?.addEventListener("abort", sleeper.wake, { once: true });
      }),
    get sleeping() {
      return sleepers.size;
    },
    get nextWake() {
      return [...sleepers].reduce<number | undefined>((earliest, s) => (earliest === undefined || s.until < earliest ? s.until : earliest), undefined);
    },
    async advance(ms) {
      const target = now + ms;
      for (;;) {
        await turns();
        const next = [...sleepers].filter((s) => s.until <= target).sort((a, b) => a.until - b.until)[0];
        if (next === undefined) break;
        now = Math.max(now, next.until);
        next.wake();
      }
      // A `step` meanwhile may have moved time past the target: it never goes back.
      now = Math.max(now, target);
      await turns();
    },
    step(ms) {
      now += ms;
      setImmediate(wakeDue);
    },
  };
}

/** Lets pending continuations run for `count` event-loop turns (no timer waits). */
export async function turns(count = 5): Promise<void> {
  for (let i = 0; i < count; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** Resolves every pending promise continuation (no timers involved). */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i += 1) await Promise.resolve();
}

/**
 * What Powertools Logger writes when `log` logs through it, one string per line it writes: a real Logger in dev mode,
 * whose output goes to the global console (captured here). Its error formatting is the one CloudWatch would get.
 */
export function powertoolsLines(log: (logger: Logger) => void): string[] {
  vi.stubEnv("POWERTOOLS_DEV", "true");
  const output: string[] = [];
  const capture = (...args: unknown[]) => void output.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  const spies = (["log", "info", "warn", "error", "debug"] as const).map((method) => vi.spyOn(console, method).mockImplementation(capture));
  try {
    log(new Logger({ serviceName: "qashio-bridge", logLevel: "DEBUG" }));
  } finally {
    for (const spy of spies) spy.mockRestore();
    vi.unstubAllEnvs();
  }
  return output;
}

/** {@link powertoolsLines} as one text, its lines joined by newlines. */
export function powertoolsOutput(log: (logger: Logger) => void): string {
  return powertoolsLines(log).join("\n");
}

/**
 * Records the length of every string `Buffer#toString` makes until `restore()`: shows whether a body was ever decoded as
 * one string (json-body.ts).
 */
export function recordBufferDecodes(): { readonly lengths: number[]; restore(): void } {
  const lengths: number[] = [];
  const toString = Buffer.prototype.toString;
  const spy = vi.spyOn(Buffer.prototype, "toString").mockImplementation(function (this: Buffer, encoding?: BufferEncoding, start?: number, end?: number) {
    const text = toString.call(this, encoding, start, end);
    lengths.push(text.length);
    return text;
  } as (...args: unknown[]) => string);
  return { lengths, restore: () => spy.mockRestore() };
}

/** A request {@link heldFetch} holds until the test answers it. */
export interface HeldRequest {
  /** Its `qashio_id` query parameter ("" without one). */
  readonly qid: string;
  answer(reply: Response | Error): void;
}

/**
 * A fetch whose requests wait for the test to answer them (or for their attempt's timeout, which aborts them as it
 * does fetch), so a test sees which are in flight at once. `onSend` sees each request as it is sent, with `held`
 * holding the ones sent before it and not answered, and what it returns is added to the request's entry.
 */
export function heldFetch<Extra extends object = object>(onSend?: (call: RecordedCall) => Extra) {
  const held: (HeldRequest & Extra)[] = [];
  const fetch = scriptedFetch(
    (call, signal) =>
      new Promise<Response>((resolve, reject) => {
        const entry: HeldRequest & Extra = {
          ...(onSend?.(call) ?? ({} as Extra)),
          qid: call.url.searchParams.get("qashio_id") ?? "",
          answer(reply: Response | Error) {
            const at = held.indexOf(entry);
            if (at < 0) return;
            held.splice(at, 1);
            if (reply instanceof Error) reject(reply);
            else resolve(reply);
          },
        };
        held.push(entry);
        signal?.addEventListener("abort", () => entry.answer(new DOMException("This operation was aborted", "AbortError")));
      }),
  );
  /** The requests sent and not answered yet, by qashio id. */
  const inFlight = () => held.map((entry) => entry.qid);
  /** Answers the request in flight for `qid`. */
  const answer = (qid: string, reply: Response | Error) => held.find((entry) => entry.qid === qid)?.answer(reply);
  return { fetch, held, inFlight, answer };
}
