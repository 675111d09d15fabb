/**
 * Control surface under `/_sandbox` (issue 3 item 6): companies, authorization codes,
 * activity generation, deposits into the funding account, dashboard card changes (status, spend limit, load on approval), clock, faults,
 * reset, latency.
 * Never faulted, never delayed.
 */
import type { Hono } from "hono";
import * as z from "zod";
import { isJsonObject } from "../../shared/json-object.js";
import { checkBody } from "../../shared/qashio/schemas/index.js";
import { deposit } from "../data/balances.js";
import type { CardRecord, ErpCardStatus } from "../data/model.js";
import { BUILDABLE_CATEGORIES } from "../data/transactions.js";
import { MAX_RESET_TRANSACTIONS } from "../limits.js";
import { OAuthError, ValidationError, type FieldError } from "../errors.js";
import type { FaultSpec } from "../faults.js";
import { readJson, type SandboxContext, type SandboxEnv } from "../http.js";
import type { SandboxState } from "../state.js";
import { erpCardDetailView, transactionListView } from "../views.js";
import { ISSUER_MAX_SPEND_LIMIT } from "./core.js";

/** Most transactions one control call creates. */
export const MAX_CREATED_PER_CALL = 1000;
export { MAX_RESET_TRANSACTIONS } from "../limits.js";

const ERP_CARD_STATUSES: readonly ErpCardStatus[] = ["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"];

const nonNegativeInt = z.number().int().nonnegative();

const AuthorizationCodeBody = z.object({
  client_id: z.string().min(1),
  redirect_uri: z.string().min(1),
  scope: z.string().optional(),
});

/** Only money back names a parent purchase (§1 Refund matching): a child without a category is a refund. */
const CreateTransactionsBody = z
  .object({
    count: z.number().int().min(1).max(MAX_CREATED_PER_CALL).optional(),
    transaction_category: z.enum(BUILDABLE_CATEGORIES).optional(),
    parent_qashio_id: z.string().min(1).optional(),
  })
  .refine((b) => b.parent_qashio_id === undefined || b.transaction_category === undefined || b.transaction_category === "refund" || b.transaction_category === "reversal", {
    path: ["transaction_category"],
    message: "a transaction naming parent_qashio_id is a refund or a reversal",
  });

const CardStatusBody = z.object({ status: z.string().min(1) });

/** Whether the card's auto top-up loads on the approval of its spend (§2.4; §4.9's update does not take it). */
const AutoLoadBody = z.object({ on_transaction_approval: z.boolean() });

/** A spend limit as the dashboard sets it: what the body leaves out stays as it is (its period stays too). */
const SpendLimitBody = z
  .object({
    active: z.boolean().optional(),
    max_amount: z.number().nonnegative().max(ISSUER_MAX_SPEND_LIMIT).multipleOf(0.01).optional(),
    frequency: nonNegativeInt.optional(),
  })
  .refine((b) => b.active !== undefined || b.max_amount !== undefined || b.frequency !== undefined, { message: "one of active, max_amount or frequency is required" });

/** Most one deposit pays in: far above any seeded balance, so a typo of many digits is refused. */
export const MAX_DEPOSIT = 10_000_000;

const DepositBody = z.object({ amount: z.number().positive().max(MAX_DEPOSIT).multipleOf(0.01) });

const ClockBody = z.object({ advance_seconds: z.number().nonnegative() });

/**
 * The control surface's name of each FaultSpec member, in the order it shows them. `POST /_sandbox/faults` reads its
 * body and `GET` shows armed faults through this one table, so the two directions cannot drift apart; the compiler
 * holds it, FaultBody's members and FaultSpec to the same members.
 */
const FAULT_WIRE_NAMES = {
  method: "method",
  pathPrefix: "path_prefix",
  status: "status",
  count: "count",
  retryAfter: "retry_after",
  delayMs: "delay_ms",
  malformed: "malformed",
  bare: "bare",
  applied: "applied",
} as const satisfies { readonly [M in keyof FaultSpec]-?: string };

const FAULT_MEMBERS = Object.keys(FAULT_WIRE_NAMES) as (keyof FaultSpec)[];

/** A FaultSpec under its control-surface names, members optional as in FaultSpec. */
type FaultWire = { [M in keyof FaultSpec as (typeof FAULT_WIRE_NAMES)[M]]: FaultSpec[M] };

/** The FaultSpec a checked body describes; a member the body leaves out stays absent. */
function faultFromWire(wire: FaultWire): FaultSpec {
  const spec: Partial<Record<keyof FaultSpec, unknown>> = {};
  for (const member of FAULT_MEMBERS) {
    const value = wire[FAULT_WIRE_NAMES[member]];
    if (value !== undefined) spec[member] = value;
  }
  // Sound: FaultWire gives each member its FaultSpec type, and `count`, required there, is required here.
  return spec as FaultSpec;
}

/** An armed fault as the control surface shows it: the members `POST /_sandbox/faults` takes, `count` what is left. */
function faultView(spec: FaultSpec): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  for (const member of FAULT_MEMBERS) {
    if (spec[member] !== undefined) view[FAULT_WIRE_NAMES[member]] = spec[member];
  }
  return view;
}

const FaultBody = z
  .object({
    method: z.string().min(1).optional(),
    path_prefix: z.string().startsWith("/").optional(),
    status: z.number().int().min(400).max(599).optional(),
    count: z.number().int().min(1),
    retry_after: nonNegativeInt.optional(),
    delay_ms: nonNegativeInt.max(120_000).optional(),
    malformed: z.boolean().optional(),
    bare: z.boolean().optional(),
    applied: z.boolean().optional(),
  } satisfies Record<keyof FaultWire, z.ZodType>)
  .refine((f) => f.status !== undefined || f.delay_ms !== undefined || f.malformed === true, {
    message: "one of status, delay_ms or malformed is required",
  })
  .refine((f) => f.bare !== true || (f.status !== undefined && f.malformed !== true), {
    message: "bare takes a status and no malformed body",
  })
  .transform(faultFromWire);

const ResetBody = z.object({
  seed: z.number().int().nonnegative().optional(),
  transactions: z.number().int().min(0).max(MAX_RESET_TRANSACTIONS).optional(),
  company_id: z.string().min(1).optional(),
});

const LatencyBody = z.object({ latency_ms: nonNegativeInt.max(60_000) });

const ApiAccessBody = z.object({ enabled: z.boolean() });

/**
 * Reads and checks a control body, one 400 entry per offending field: a member the body's schema does not take is one
 * (zod drops it unseen, so a misspelt `category` made spend of any category).
 */
async function body<S extends z.ZodType>(c: SandboxContext, schema: S): Promise<z.output<S>> {
  const raw = await readJson(c);
  const result = checkBody(schema, raw);
  const errors = [...(result.ok ? [] : result.errors), ...unknownMembers(schema, raw)];
  if (errors.length > 0 || !result.ok) throw new ValidationError(errors);
  return result.value;
}

/** The members of `raw` the object `schema` (or the one a transform reads) does not take. */
function unknownMembers(schema: z.ZodType, raw: unknown): FieldError[] {
  const object = schema instanceof z.ZodPipe ? schema.in : schema;
  if (!(object instanceof z.ZodObject) || !isJsonObject(raw)) return [];
  return Object.keys(raw)
    .filter((key) => !Object.hasOwn(object.shape, key))
    .map((key) => ({ field: key, code: "INVALID_FORMAT", message: `${key} is not a member of this body` }));
}

function company(c: SandboxContext) {
  return c.get("state").requireCompany(c.req.param("companyId") ?? "");
}

/**
 * A dashboard change to one card, `POST /_sandbox/companies/{id}/cards/{cardId}/<change>`: `apply` gets the card and
 * the checked body; the answer is the card's ERP detail as it is then.
 */
function dashboardCardChange<S extends z.ZodType>(
  app: Hono<SandboxEnv>,
  change: string,
  schema: S,
  apply: (state: SandboxState, card: CardRecord, body: z.output<S>) => void,
): void {
  app.post(`/_sandbox/companies/:companyId/cards/:cardId/${change}`, async (c) => {
    const data = company(c);
    const state = c.get("state");
    const card = state.requireCard(data, c.req.param("cardId") ?? "");
    apply(state, card, await body(c, schema));
    return c.json({ data: erpCardDetailView(card, data) }, 200);
  });
}

export function registerControl(app: Hono<SandboxEnv>): void {
  app.get("/_sandbox/companies", (c) =>
    c.json({
      data: c
        .get("state")
        .listCompanies()
        .map((d) => ({
          id: d.company.id,
          name: d.company.name,
          legal_name: d.company.legalName,
          currency: d.company.currency,
          api_access_enabled: d.company.apiAccessEnabled,
          legacy_api_key: d.company.apiKey,
          transactions: d.transactions.size,
        })),
    }),
  );

  app.post("/_sandbox/companies/:companyId/authorization_codes", async (c) => {
    const data = company(c);
    const b = await body(c, AuthorizationCodeBody);
    try {
      const code = c.get("state").oauth.issueCode({ clientId: b.client_id, redirectUri: b.redirect_uri, scope: b.scope, companyId: data.company.id });
      return c.json({ code }, 201);
    } catch (error) {
      if (error instanceof OAuthError) throw new ValidationError([{ field: error.error === "invalid_client" ? "client_id" : error.error === "invalid_scope" ? "scope" : "redirect_uri", code: "INVALID_FORMAT", message: error.description }]);
      throw error;
    }
  });

  app.post("/_sandbox/companies/:companyId/transactions", async (c) => {
    const data = company(c);
    const b = await body(c, CreateTransactionsBody);
    const created = c.get("state").createTransactions(data, {
      count: b.count ?? 1,
      category: b.transaction_category,
      parentQashioId: b.parent_qashio_id,
    });
    return c.json({ data: created.map(transactionListView) }, 201);
  });

  app.patch("/_sandbox/companies/:companyId/transactions/:id", async (c) => {
    const data = company(c);
    const raw = await readJson(c);
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new ValidationError([{ field: null, code: "INVALID_FORMAT", message: "body must be an object of fields" }]);
    }
    const tx = c.get("state").patchTransaction(data, c.req.param("id") ?? "", raw as Record<string, unknown>);
    return c.json({ data: transactionListView(tx) }, 200);
  });

  dashboardCardChange(app, "status", CardStatusBody, (state, card, b) => {
    const status = ERP_CARD_STATUSES.find((s) => s.toLowerCase() === b.status.toLowerCase());
    if (!status) throw new ValidationError([{ field: "status", code: "INVALID_ENUM", message: `status must be one of: ${ERP_CARD_STATUSES.join(", ")}` }]);
    state.setCardStatus(card, status);
  });

  dashboardCardChange(app, "spend_limit", SpendLimitBody, (state, card, b) => {
    state.setSpendLimit(card, { active: b.active, maxAmount: b.max_amount, frequency: b.frequency });
  });

  dashboardCardChange(app, "auto_load", AutoLoadBody, (state, card, b) => {
    // Refused rather than shown on and never acted on: a pool card's account is its pool's, which no approval loads.
    if (b.on_transaction_approval && card.poolAccountId !== null) {
      throw new ValidationError([{ field: "on_transaction_approval", code: "INVALID_STATE", message: "a pool card's account is its pool's, which loads on no transaction approval" }]);
    }
    card.autoLoadOnTransactionApproval = b.on_transaction_approval;
    card.updatedAt = state.clock.stampIso();
  });

  app.post("/_sandbox/companies/:companyId/deposits", async (c) => {
    const data = company(c);
    const b = await body(c, DepositBody);
    deposit(data, b.amount);
    return c.json({ data: { funding_account: { account_external_id: data.company.fundingAccountId, balance: data.company.fundingBalance } } }, 201);
  });

  app.post("/_sandbox/companies/:companyId/api_access", async (c) => {
    const data = company(c);
    const b = await body(c, ApiAccessBody);
    data.company.apiAccessEnabled = b.enabled;
    return c.json({ data: { id: data.company.id, api_access_enabled: b.enabled } }, 200);
  });

  app.get("/_sandbox/companies/:companyId/audit", (c) => c.json({ data: company(c).audit }, 200));

  app.get("/_sandbox/clock", (c) => c.json({ data: { now: c.get("state").clock.nowIso() } }, 200));
  app.post("/_sandbox/clock", async (c) => {
    const b = await body(c, ClockBody);
    const state = c.get("state");
    state.advanceClock(b.advance_seconds);
    return c.json({ data: { now: state.clock.nowIso() } }, 200);
  });

  app.get("/_sandbox/faults", (c) => c.json({ data: c.get("state").faults.list().map(faultView) }, 200));
  app.post("/_sandbox/faults", async (c) => {
    const faults = c.get("state").faults;
    faults.add(await body(c, FaultBody));
    return c.json({ data: faults.list().map(faultView) }, 201);
  });
  app.delete("/_sandbox/faults", (c) => {
    c.get("state").faults.clear();
    return c.json({ data: [] }, 200);
  });

  app.post("/_sandbox/reset", async (c) => {
    const b = await body(c, ResetBody);
    const state = c.get("state");
    state.reset({ seed: b.seed, transactions: b.transactions, companyId: b.company_id });
    return c.json(
      { data: { seed: state.seed, companies: state.listCompanies().map((d) => ({ id: d.company.id, name: d.company.name, transactions: d.transactions.size })) } },
      200,
    );
  });

  app.get("/_sandbox/latency", (c) => c.json({ data: { latency_ms: c.get("state").latencyMs } }, 200));
  app.post("/_sandbox/latency", async (c) => {
    const b = await body(c, LatencyBody);
    c.get("state").latencyMs = b.latency_ms;
    return c.json({ data: { latency_ms: b.latency_ms } }, 200);
  });
}
