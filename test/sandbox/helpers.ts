/**
 * Shared set-up of the sandbox tests: a sandbox at a fixed time, tokens through the
 * real token endpoint, a raw fetch helper and the provider client wired in-process.
 */
import { QashioClient } from "../../shared/qashio/client.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import type { Clock } from "../../shared/qashio/http.js";
import { createSandbox, SANDBOX_IN_PROCESS_URL, type Sandbox, type SandboxOptions } from "../../sandbox/index.js";
import type { CompanyData, TransactionRecord } from "../../sandbox/data/model.js";

/** A JSON object navigated freely in assertions (its shape is asserted with the shared schemas separately). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are read loosely in tests
export type Row = Record<string, any>;

/**
 * Fills every card and pool account of a company to the most it may hold, and stops enforcing every card's spend
 * limit: new spend is authorised against what an account holds and what an enforced limit still allows in its period
 * (spec-gaps, Balances and Spend limits), so a test making much of it, or spending on a card the seed left empty or
 * limited, gives the cards room first.
 */
export function fillAccounts(data: Pick<CompanyData, "cards" | "pools">): void {
  for (const card of data.cards) {
    if (card.poolAccountId === null) card.balance = card.allowedMaxBalance;
    card.spendLimit.active = false;
  }
  for (const pool of data.pools) pool.balance = pool.allowedMaxBalance;
}

export const START = "2025-03-15T12:00:00.000Z";

/**
 * The company summary's month spend (spec-gaps, Company summary) worked out by walking `transactions`: purchases and
 * cash withdrawals with their fee, less refunds and reversals, whose `transaction_time` lies in [fromMs, toMs).
 */
export function netSpendIn(transactions: readonly TransactionRecord[], fromMs: number, toMs: number): number {
  let cents = 0;
  for (const tx of transactions) {
    const time = Date.parse(tx.transaction_time);
    if (time < fromMs || time >= toMs) continue;
    if (tx.transaction_category === "purchase" || tx.transaction_category === "cash_withdrawal") cents += Math.round((tx.billing_amount + tx.transaction_fee_amount) * 100);
    if (tx.transaction_category === "refund" || tx.transaction_category === "reversal") cents -= Math.round(tx.billing_amount * 100);
  }
  return cents / 100;
}

/** [start, end) of START's month (UTC). */
export const START_MONTH = [Date.UTC(2025, 2, 1), Date.UTC(2025, 3, 1)] as const;

export const REDIRECT_URI = "http://127.0.0.1:8765/callback";
export const BASE = SANDBOX_IN_PROCESS_URL;
export const CLIENT = { client_id: "sandbox-client", client_secret: "sandbox-secret" } as const;

export interface TokenSet {
  access_token: string;
  refresh_token: string;
  token_type: string;
  scope: string;
  expires_in: number;
}

export interface Harness {
  sandbox: Sandbox;
  /** First seeded company (API access enabled). */
  companyId: string;
  /** Second seeded company (API access enabled). */
  otherCompanyId: string;
  /** Third seeded company (API access disabled). */
  disabledCompanyId: string;
  tokens: TokenSet;
  /** Raw call with the first company's bearer token unless `token` is given (null: none). */
  call(path: string, init?: CallInit): Promise<Response>;
  /** Raw call returning status, headers and parsed JSON body. */
  json(path: string, init?: CallInit): Promise<{ status: number; headers: Headers; body: Row }>;
  client: QashioClient;
  clientFor(token: string): QashioClient;
}

export interface CallInit {
  method?: string;
  body?: unknown;
  token?: string | null;
  headers?: Record<string, string>;
}

/** A clock whose sleeps return at once (the client's retries must not really wait). */
export function instantClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return { sleeps, now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) };
}

/** Exchanges a control-surface code for tokens through the token endpoint. */
export async function tokensFor(sandbox: Sandbox, companyId: string, scope?: string): Promise<TokenSet> {
  const code = sandbox.control.issueAuthorizationCode({ companyId, redirectUri: REDIRECT_URI, scope });
  const res = await sandbox.fetch(`${BASE}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "authorization_code", ...CLIENT, code, redirect_uri: REDIRECT_URI }),
  });
  if (res.status !== 200) throw new Error(`token exchange failed: ${res.status}`);
  return (await res.json()) as TokenSet;
}

export async function harness(options: SandboxOptions = {}): Promise<Harness> {
  const sandbox = createSandbox({ seed: 7, startTime: START, ...options });
  const [first, second, third] = sandbox.control.companies();
  if (!first || !second || !third) throw new Error("expected three seeded companies");
  const tokens = await tokensFor(sandbox, first.id);
  const call = (path: string, init: CallInit = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    const token = init.token === undefined ? tokens.access_token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers["content-type"] = "application/json";
    return sandbox.fetch(`${BASE}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers,
      body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
    });
  };
  const clientFor = (token: string) =>
    new QashioClient({ baseUrl: BASE, tokenProvider: new StaticTokenProvider(token), fetch: sandbox.fetch, clock: instantClock(), retry: { maxAttempts: 1 } });
  return {
    sandbox,
    companyId: first.id,
    otherCompanyId: second.id,
    disabledCompanyId: third.id,
    tokens,
    call,
    async json(path, init) {
      const res = await call(path, init);
      return { status: res.status, headers: res.headers, body: (await res.json()) as Row };
    },
    client: clientFor(tokens.access_token),
    clientFor,
  };
}

/** Asserts the §7 error envelope and returns its `errors` as `field:code` strings. */
export function errorCodes(body: Row): string[] {
  return (body.errors as { field: string | null; code: string }[]).map((e) => `${e.field}:${e.code}`);
}
