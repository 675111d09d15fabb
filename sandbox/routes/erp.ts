/**
 * Accounting reads of spec §4.3-§4.8 and the acknowledge write. The read handlers
 * are registered twice: at `/public/v1/erp` and at the legacy prefix (§9).
 */
import type { Hono } from "hono";
import {
  AcknowledgeBodySchema,
  BankAccountsQuerySchema,
  ChartOfAccountsQuerySchema,
  DEFAULT_PAGE_SIZES,
  ErpCardsQuerySchema,
  PoolAccountsQuerySchema,
  StatementsByAccountQuerySchema,
  StatementsQuerySchema,
  SuppliersQuerySchema,
  TaxRatesQuerySchema,
  TransactionIdParamSchema,
  TransactionsQuerySchema,
  type MasterDataQuery,
  type ChartOfAccountsQuery,
} from "../../shared/qashio/schemas/index.js";
import type { CompanyData, MasterRecord, TransactionRecord } from "../data/model.js";
import { calendarWindow } from "../data/periods.js";
import { NotFoundError, ValidationError } from "../errors.js";
import {
  contains,
  inDateRange,
  ok,
  pagination,
  parseBody,
  parseQuery,
  sameCurrency,
  slicePage,
  type SandboxContext,
  type SandboxEnv,
} from "../http.js";
import { requireScope } from "../auth.js";
import { MAX_ACKNOWLEDGE_BATCH } from "../state.js";
import {
  erpCardDetailView,
  erpCardView,
  masterRecordView,
  poolAccountView,
  statementAccountName,
  statementPeriodView,
  statementView,
  transactionDetailView,
  transactionListView,
} from "../views.js";

/** Paths of the read handlers, relative to the router they are mounted on. */
export interface ErpReadPaths {
  readonly transactions: string;
  readonly cards: string;
  readonly poolAccounts: string;
  readonly bankAccounts: string;
  readonly chartOfAccounts: string;
  readonly taxRates: string;
  readonly suppliers: string;
  readonly statements: string;
  readonly companySummary: string;
}

/** Current paths (§4). */
export const CURRENT_ERP_PATHS: ErpReadPaths = {
  transactions: "/transactions",
  cards: "/cards",
  poolAccounts: "/pool_accounts",
  bankAccounts: "/bank_accounts",
  chartOfAccounts: "/chart_of_accounts",
  taxRates: "/tax_rates",
  suppliers: "/suppliers",
  statements: "/statements",
  companySummary: "/company/summary",
};

/** Earlier generation's hyphenated paths (§9 rule 4). */
export const LEGACY_ERP_PATHS: ErpReadPaths = {
  transactions: "/erp-transactions",
  cards: "/cards",
  poolAccounts: "/pool-accounts",
  bankAccounts: "/erp-bank-accounts",
  chartOfAccounts: "/erp-chart-of-accounts",
  taxRates: "/erp-tax-rates",
  suppliers: "/erp-suppliers",
  statements: "/statements",
  companySummary: "/company/summary",
};

/** What a generation's reads take beyond their paths. */
export interface ErpReadOptions {
  /** Transaction list filters the generation does not have: ignored like any unknown query key. */
  readonly transactionFiltersNotTaken?: readonly string[];
}

/** Earlier generation: refund and reversal mapping through `parent_qashio_id` came with 2.0 (§9 rule 5). */
export const LEGACY_ERP_OPTIONS: ErpReadOptions = { transactionFiltersNotTaken: ["parent_qashio_id"] };

/** Registers every accounting read on `router` at `paths`. */
export function registerErpReads(router: Hono<SandboxEnv>, paths: ErpReadPaths, options: ErpReadOptions = {}): void {
  const transactionFiltersNotTaken = options.transactionFiltersNotTaken ?? [];
  router.get(paths.transactions, (c) => listTransactions(c, transactionFiltersNotTaken));
  router.get(`${paths.transactions}/:transactionId`, getTransaction);
  router.get(paths.cards, listCards);
  router.get(`${paths.cards}/:cardId`, getCard);
  router.get(paths.poolAccounts, listPoolAccounts);
  router.get(paths.bankAccounts, (c) => listMasterData(c, "bankAccounts", BankAccountsQuerySchema, DEFAULT_PAGE_SIZES.bank_accounts));
  router.get(paths.chartOfAccounts, (c) => listMasterData(c, "chartOfAccounts", ChartOfAccountsQuerySchema, DEFAULT_PAGE_SIZES.chart_of_accounts));
  router.get(paths.taxRates, (c) => listMasterData(c, "taxRates", TaxRatesQuerySchema, DEFAULT_PAGE_SIZES.tax_rates));
  router.get(paths.suppliers, (c) => listMasterData(c, "suppliers", SuppliersQuerySchema, DEFAULT_PAGE_SIZES.suppliers));
  router.get(paths.statements, listStatements);
  router.get(`${paths.statements}/:accountId`, statementsByAccount);
  router.get(paths.companySummary, companySummary);
}

/** Registers the acknowledge write (current generation only). */
export function registerAcknowledge(router: Hono<SandboxEnv>): void {
  router.post("/transactions/acknowledge", acknowledge);
}

function listTransactions(c: SandboxContext, filtersNotTaken: readonly string[]): Response {
  requireScope(c, "transactions:read");
  const q = parseQuery(c, TransactionsQuerySchema, { keysNotTaken: filtersNotTaken });
  const data = c.get("data");
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZES.transactions;
  const conditions: ((tx: TransactionRecord) => boolean)[] = [];
  if (q.transaction_status !== undefined) conditions.push((tx) => tx.transaction_status === q.transaction_status);
  if (q.transaction_category !== undefined) conditions.push((tx) => tx.transaction_category === q.transaction_category);
  if (q.erp_sync_status !== undefined) conditions.push((tx) => tx.erp_sync_status === q.erp_sync_status);
  if (q.approval_status !== undefined) conditions.push((tx) => tx.approval_status === q.approval_status);
  if (q.card_last_four !== undefined) conditions.push((tx) => tx.card_last_four === q.card_last_four);
  // A text filter, not one of §8.2 rule 5's exact identifier filters.
  if (q.employee_id !== undefined) conditions.push((tx) => contains(tx.employee_id, q.employee_id));
  if (q.transaction_currency !== undefined) conditions.push((tx) => sameCurrency(tx.transaction_currency, q.transaction_currency));
  if (q.billing_currency !== undefined) conditions.push((tx) => sameCurrency(tx.billing_currency, q.billing_currency));
  if (q.transaction_time_from !== undefined || q.transaction_time_to !== undefined) {
    conditions.push((tx) => inDateRange(tx.transaction_time, q.transaction_time_from, q.transaction_time_to));
  }
  if (q.exclude_from_sync !== undefined) conditions.push((tx) => tx.exclude_from_sync === q.exclude_from_sync);
  const result = data.transactions.page(
    {
      clientSyncStatus: q.client_sync_status,
      qashioId: q.qashio_id,
      parentQashioId: q.parent_qashio_id,
      predicate: conditions.length === 0 ? undefined : (tx) => conditions.every((f) => f(tx)),
    },
    (page - 1) * pageSize,
    pageSize,
  );
  return ok(c, result.items.map(transactionListView), { pagination: pagination(page, pageSize, result.total) });
}

function getTransaction(c: SandboxContext): Response {
  requireScope(c, "transactions:read");
  const id = c.req.param("transactionId") ?? "";
  if (!TransactionIdParamSchema.safeParse(id).success) {
    throw new ValidationError([{ field: "transactionId", code: "INVALID_FORMAT", message: "transactionId must be a transaction UUID (the CT reference is not accepted)" }]);
  }
  const data = c.get("data");
  const tx = data.transactions.get(id);
  if (!tx) throw new NotFoundError("Transaction not found", "transactionId");
  return ok(c, transactionDetailView(tx, data.company));
}

async function acknowledge(c: SandboxContext): Promise<Response> {
  requireScope(c, "transactions:write");
  const body = await parseBody(c, AcknowledgeBodySchema, undefined, [{ field: "transaction_ids", max: MAX_ACKNOWLEDGE_BATCH, items: "ids" }]);
  const ids = c.get("state").acknowledge(c.get("data"), body.transaction_ids);
  return ok(c, { acknowledged: ids.length, transaction_ids: ids, client_sync_status: "synced" }, { message: "Transactions acknowledged successfully" });
}

function newestFirst<T extends { createdAt: string }>(items: readonly T[]): T[] {
  // Records are kept oldest first (seeded and appended in creation order).
  return [...items].reverse();
}

function listCards(c: SandboxContext): Response {
  requireScope(c, "cards:read");
  const q = parseQuery(c, ErpCardsQuerySchema);
  const data = c.get("data");
  if (q.pool_account_id !== undefined && !data.pools.some((p) => p.id === q.pool_account_id)) {
    throw new NotFoundError("Pool account not found", "pool_account_id");
  }
  if (q.user_id !== undefined && !data.users.some((u) => u.userId === q.user_id)) {
    throw new NotFoundError("User profile not found", "user_id");
  }
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZES.erp_cards;
  const matches = newestFirst(data.cards).filter(
    (card) =>
      (q.status === undefined || card.status.toLowerCase() === q.status) &&
      (q.card_type === undefined || card.cardType.toLowerCase() === q.card_type) &&
      (q.account_type === undefined || card.accountType === q.account_type) &&
      (q.pool_account_id === undefined || card.poolAccountId === q.pool_account_id) &&
      (q.user_id === undefined || card.holder.userId === q.user_id) &&
      (q.last4 === undefined || card.lastFour === q.last4) &&
      inDateRange(card.issuedAt, q.issued_time_from, q.issued_time_to) &&
      inDateRange(card.createdAt, q.created_time_from, q.created_time_to),
  );
  return ok(c, slicePage(matches, page, pageSize).map((card) => erpCardView(card, data.company)), {
    pagination: pagination(page, pageSize, matches.length),
  });
}

function getCard(c: SandboxContext): Response {
  requireScope(c, "cards:read");
  const data = c.get("data");
  const card = data.cards.find((x) => x.id === c.req.param("cardId"));
  if (!card) throw new NotFoundError("Card not found", "cardId");
  return ok(c, erpCardDetailView(card, data));
}

function listPoolAccounts(c: SandboxContext): Response {
  requireScope(c, "cards:read");
  const q = parseQuery(c, PoolAccountsQuerySchema);
  const data = c.get("data");
  if (q.manager_id !== undefined && !data.users.some((u) => u.userId === q.manager_id)) {
    throw new NotFoundError("User profile not found", "manager_id");
  }
  if (q.created_by !== undefined && !data.users.some((u) => u.userId === q.created_by)) {
    throw new NotFoundError("User profile not found", "created_by");
  }
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZES.pool_accounts;
  const matches = [...data.pools].reverse().filter(
    (pool) =>
      (q.status === undefined || q.status === "all" || pool.status.toLowerCase() === q.status) &&
      (q.manager_id === undefined || pool.managers.some((m) => m.userId === q.manager_id)) &&
      (q.created_by === undefined || pool.createdBy.userId === q.created_by) &&
      inDateRange(pool.createdAt, q.created_time_from, q.created_time_to),
  );
  return ok(c, slicePage(matches, page, pageSize).map((pool) => poolAccountView(pool, data.company)), {
    pagination: pagination(page, pageSize, matches.length),
  });
}

type MasterKind = "bankAccounts" | "chartOfAccounts" | "taxRates" | "suppliers";

function listMasterData(
  c: SandboxContext,
  kind: MasterKind,
  schema: typeof BankAccountsQuerySchema | typeof ChartOfAccountsQuerySchema,
  defaultPageSize: number,
): Response {
  requireScope(c, "transactions:read");
  const q = parseQuery(c, schema) as MasterDataQuery & Partial<ChartOfAccountsQuery>;
  const data = c.get("data");
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? defaultPageSize;
  const records: readonly MasterRecord[] = data[kind];
  const matches = [...records].reverse().filter(
    (r) =>
      contains(r.remote_id, q.remote_id) &&
      contains(r.remote_name, q.remote_name) &&
      (q.status === undefined || r.status === q.status) &&
      (q.is_deleted === undefined || r.is_deleted === q.is_deleted) &&
      inDateRange(r.created_at, q.created_at_from, q.created_at_to) &&
      inDateRange(r.updated_at, q.updated_at_from, q.updated_at_to) &&
      contains(r.extra.account_number, q.account_number) &&
      contains(r.extra.account_type, q.account_type) &&
      sameCurrency(r.extra.account_currency, q.account_currency),
  );
  return ok(c, slicePage(matches, page, pageSize).map(masterRecordView), { pagination: pagination(page, pageSize, matches.length) });
}

function listStatements(c: SandboxContext): Response {
  requireScope(c, "wallet:read");
  const q = parseQuery(c, StatementsQuerySchema);
  const data = c.get("data");
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZES.statements;
  const matches = data.statements.filter(
    (s) =>
      (q.month === undefined || s.month === q.month) &&
      (q.account_type === undefined || s.account.accountType === q.account_type) &&
      (q.account_id === undefined || s.account.accountExternalId === q.account_id),
  );
  return ok(c, slicePage(matches, page, pageSize).map((s) => statementView(s, data.company.id)), {
    pagination: pagination(page, pageSize, matches.length),
  });
}

function statementsByAccount(c: SandboxContext): Response {
  requireScope(c, "wallet:read");
  const q = parseQuery(c, StatementsByAccountQuerySchema);
  const data = c.get("data");
  const accountId = c.req.param("accountId") ?? "";
  const account = data.statementAccounts.find((a) => a.accountExternalId === accountId);
  if (!account) throw new NotFoundError("Statement account not found", "statementAccountId");
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZES.statements_by_account;
  const periods = data.statements.filter(
    (s) =>
      s.account === account &&
      (q.from_month === undefined || s.month >= q.from_month) &&
      (q.to_month === undefined || s.month <= q.to_month),
  );
  const hasStatements = data.statements.some((s) => s.account === account);
  return ok(c, {
    account_external_id: account.accountExternalId,
    account_name: statementAccountName(account),
    account_type: hasStatements ? account.accountType : null,
    page,
    total_pages: Math.ceil(periods.length / pageSize),
    total: periods.length,
    data: slicePage(periods, page, pageSize).map(statementPeriodView),
  });
}

function companySummary(c: SandboxContext): Response {
  requireScope(c, "wallet:read");
  const data = c.get("data");
  return ok(c, companySummaryView(data, c.get("state").clock.nowIso()));
}

/** Company summary (§4.8: shape not shown; this one is the sandbox's choice). */
export function companySummaryView(data: CompanyData, asOf: string): Record<string, unknown> {
  const { company } = data;
  const round = (n: number) => Math.round(n * 100) / 100;
  const cardsByStatus: Record<string, number> = { active: 0, inactive: 0, suspended: 0, terminated: 0, draft: 0, cancelled: 0 };
  let cardsBalance = 0;
  let pending = 0;
  for (const card of data.cards) {
    const key = card.status.toLowerCase();
    cardsByStatus[key] = (cardsByStatus[key] ?? 0) + 1;
    if (card.accountType === "reloadable") cardsBalance += card.balance;
    pending += card.pendingAuthorisations;
  }
  const poolsBalance = data.pools.reduce((sum, p) => sum + p.balance, 0);
  const month = asOf.slice(0, 7);
  // This calendar month (UTC) by transaction_time as it is now, from the store's daily totals: no walk.
  const { start, next } = calendarWindow("MONTHLY", Date.parse(asOf))!;
  const monthSpend = data.transactions.netSpend.between(start, next);
  return {
    company_id: company.id,
    company_name: company.name,
    currency: company.currency,
    funding_account: { account_external_id: company.fundingAccountId, balance: company.fundingBalance },
    cards_balance: round(cardsBalance),
    pool_accounts_balance: round(poolsBalance),
    pending_authorisations: round(pending),
    total_balance: round(company.fundingBalance + cardsBalance + poolsBalance),
    available_balance: round(company.fundingBalance + cardsBalance + poolsBalance - pending),
    month_to_date_spend: { month, amount: round(monthSpend), currency: company.currency },
    cards: { total: data.cards.length, by_status: cardsByStatus },
    pool_accounts: { total: data.pools.length, active: data.pools.filter((p) => p.status === "Active").length },
    as_of: asOf,
  };
}
