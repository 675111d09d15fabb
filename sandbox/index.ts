/**
 * Provider sandbox: a stateful, faithful simulator of the provider API
 * (../shared/spec/provider-api.md), in-process or on a loopback port.
 */
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { buildApp } from "./app.js";
import { LATEST_SANDBOX_TIME_MS } from "./clock.js";
import type { CompanyData } from "./data/model.js";
import type { SandboxEnv } from "./http.js";
import { ACCESS_TOKEN_TTL_SECONDS, SANDBOX_CLIENT } from "./oauth.js";
import { DEFAULT_SEED, SandboxState, type ResetOptions } from "./state.js";

export { LEGACY_PREFIX } from "./app.js";
export { LEGACY_API_KEY_CHALLENGE } from "./auth.js";
export { ACCESS_TOKEN_TTL_SECONDS, AUTHORIZATION_CODE_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, SANDBOX_CLIENT, SANDBOX_SCOPES } from "./oauth.js";
export { DEFAULT_SEED, MAX_ACKNOWLEDGE_BATCH, MAX_PAGE_SIZE, SUSPENSION_PROCESSING_SECONDS } from "./state.js";
export { COMPANY_DEFINITIONS } from "./data/seed.js";
export type { FaultSpec } from "./faults.js";
export * from "./errors.js";

/**
 * Base URL to use with the in-process {@link Sandbox.fetch}. No request leaves the process; it is https so that the
 * bridge's settings checks (https unless a loopback host) accept it.
 */
export const SANDBOX_IN_PROCESS_URL = "https://sandbox.local";

export interface SandboxOptions {
  /** Seed of the deterministic data. @default 1 */
  readonly seed?: number;
  /** Fixed real-time delay before every provider API answer (benchmarks). @default 0 */
  readonly latencyMs?: number;
  /** Sandbox time at start, epoch ms or ISO 8601. @default the current time, to the second */
  readonly startTime?: number | string | Date;
  /** Whether sandbox time also follows real time (the standalone server). @default false */
  readonly realTime?: boolean;
  /** Lifetime of the access tokens it issues, seconds (the spec shows none, §5 rule 11). @default 900 */
  readonly accessTokenTtlSeconds?: number;
  /**
   * Transactions each company keeps: older ones are forgotten once acknowledged (`synced`), unless a held one names
   * them as parent, so a sandbox that runs for days (the demo) holds constant memory. A provider forgets nothing:
   * leave it unset anywhere else. @default every transaction
   */
  readonly retainTransactions?: number;
}

/** A fetch-compatible function. */
export type SandboxFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Direct handles on sandbox state, for tests and the demo (same effects as the `/_sandbox` routes). */
export interface SandboxControl {
  readonly state: SandboxState;
  /** Seeded companies: id, name, legacy API key. */
  companies(): { id: string; name: string; apiKey: string; apiAccessEnabled: boolean }[];
  company(companyId: string): CompanyData | undefined;
  /** Moves sandbox time and commits what became due (suspensions). */
  advanceClock(seconds: number): void;
  /** Sandbox time (epoch ms). */
  now(): number;
  setLatency(ms: number): void;
  reset(options?: ResetOptions): void;
  /** An authorization code as if the user approved (same rules as any code). */
  issueAuthorizationCode(params: { companyId: string; redirectUri: string; scope?: string; clientId?: string }): string;
}

export interface Sandbox {
  readonly app: Hono<SandboxEnv>;
  /** In-process fetch (Hono `app.request`); use with base URL {@link SANDBOX_IN_PROCESS_URL}. Honours `init.signal`. */
  readonly fetch: SandboxFetch;
  /** Listens on 127.0.0.1 (`port` 0 or absent: an ephemeral port). */
  listen(port?: number): Promise<{ url: string; port: number; close(): Promise<void> }>;
  readonly control: SandboxControl;
}

function toEpochMs(value: number | string | Date | undefined): number {
  if (value === undefined) return Math.floor(Date.now() / 1000) * 1000;
  const ms = value instanceof Date ? value.getTime() : typeof value === "string" ? Date.parse(value) : value;
  if (!Number.isFinite(ms) || ms > LATEST_SANDBOX_TIME_MS) throw new RangeError("startTime is not a valid time");
  return ms;
}

/**
 * Creates a sandbox with seeded data.
 *
 * @example
 * ```ts
 * const sandbox = createSandbox({ seed: 7, startTime: "2025-03-15T12:00:00Z" });
 * const [company] = sandbox.control.companies();
 * const code = sandbox.control.issueAuthorizationCode({ companyId: company.id, redirectUri: "http://127.0.0.1:8765/callback" });
 * const res = await sandbox.fetch("https://sandbox.local/oauth2/token", {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ grant_type: "authorization_code", client_id: "sandbox-client", client_secret: "sandbox-secret", code, redirect_uri: "http://127.0.0.1:8765/callback" }),
 * });
 * ```
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const latencyMs = options.latencyMs ?? 0;
  if (!Number.isInteger(latencyMs) || latencyMs < 0) throw new RangeError("latencyMs must be a non-negative integer");
  const accessTokenTtlSeconds = options.accessTokenTtlSeconds ?? ACCESS_TOKEN_TTL_SECONDS;
  if (!Number.isInteger(accessTokenTtlSeconds) || accessTokenTtlSeconds < 1) throw new RangeError("accessTokenTtlSeconds must be a positive integer");
  const { retainTransactions } = options;
  if (retainTransactions !== undefined && (!Number.isInteger(retainTransactions) || retainTransactions < 1)) {
    throw new RangeError(`retainTransactions must be a positive integer, got ${String(retainTransactions)}`);
  }
  const state = new SandboxState({
    seed: options.seed ?? DEFAULT_SEED,
    startTime: toEpochMs(options.startTime),
    latencyMs,
    realTime: options.realTime ?? false,
    accessTokenTtlSeconds,
    retainTransactions,
  });
  const app = buildApp(state);

  const fetch: SandboxFetch = (input, init) => {
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
    // Like a real fetch, nothing is sent for a signal aborted already: a write would be served, its answer never read.
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    const request = input instanceof Request ? new Request(input, init) : new Request(input.toString(), init);
    const answer = Promise.resolve(app.request(request));
    if (!signal) return answer;
    // Like a real fetch, an abort rejects at once even while the sandbox still works.
    return new Promise<Response>((resolve, reject) => {
      const onAbort = () => reject(signal.reason as Error);
      signal.addEventListener("abort", onAbort, { once: true });
      answer.then(
        (response) => {
          signal.removeEventListener("abort", onAbort);
          resolve(response);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error as Error);
        },
      );
    });
  };

  const listen = (port = 0) =>
    new Promise<{ url: string; port: number; close(): Promise<void> }>((resolve, reject) => {
      const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, (info) => {
        const url = `http://127.0.0.1:${info.port}`;
        resolve({
          url,
          port: info.port,
          close: () =>
            new Promise<void>((done, fail) => {
              if ("closeAllConnections" in server && typeof server.closeAllConnections === "function") server.closeAllConnections();
              server.close((error) => (error ? fail(error) : done()));
            }),
        });
      });
      server.once("error", reject);
    });

  const control: SandboxControl = {
    state,
    companies: () =>
      state.listCompanies().map((d) => ({ id: d.company.id, name: d.company.name, apiKey: d.company.apiKey, apiAccessEnabled: d.company.apiAccessEnabled })),
    company: (companyId) => state.company(companyId),
    advanceClock: (seconds) => state.advanceClock(seconds),
    now: () => state.clock.nowMs(),
    setLatency: (ms) => {
      if (!Number.isInteger(ms) || ms < 0) throw new RangeError("latency must be a non-negative integer");
      state.latencyMs = ms;
    },
    reset: (resetOptions) => state.reset(resetOptions),
    issueAuthorizationCode: (params) =>
      state.oauth.issueCode({
        clientId: params.clientId ?? SANDBOX_CLIENT.clientId,
        redirectUri: params.redirectUri,
        scope: params.scope,
        companyId: state.requireCompany(params.companyId).company.id,
      }),
  };

  return { app, fetch, listen, control };
}
