/**
 * Typed client of the provider API: one method per operation of spec §4, queries checked before sending,
 * responses parsed with the shared schemas (drift reported, never fatal), async iterators over every page.
 */
import * as z from "zod";
import {
  AcknowledgeBodySchema,
  BankAccountSchema,
  CardBalanceQuerySchema,
  CardBalanceSchema,
  CardIdParamSchema,
  ChangeStatusDataSchema,
  ChartOfAccountSchema,
  ChartOfAccountsQuerySchema,
  CompanySummarySchema,
  CoreCardSchema,
  CoreCardWriteDataSchema,
  CoreCardsQuerySchema,
  ErpCardDetailSchema,
  ErpCardSchema,
  ErpCardsQuerySchema,
  InvitationResultSchema,
  InviteBodySchema,
  MasterDataQuerySchema,
  PoolAccountSchema,
  PoolAccountsQuerySchema,
  StatementPeriodBalanceSchema,
  StatementSummarySchema,
  StatementsByAccountQuerySchema,
  StatementsQuerySchema,
  SupplierSchema,
  TaxRateSchema,
  TransactionDetailSchema,
  TransactionIdParamSchema,
  TransactionSchema,
  TransactionsQuerySchema,
  UpdateCardBodySchema,
  UpdateVelocityLimitBodySchema,
  ChangeStatusBodySchema,
  SUSPEND_STATUS,
  checkBody,
  checkQuery,
  type BankAccount,
  type BankAccountsQuery,
  type CardBalance,
  type CardBalanceQuery,
  type ChartOfAccount,
  type ChartOfAccountsQuery,
  type CompanySummary,
  type CoreCard,
  type CoreCardsQuery,
  type DriftReport,
  type ErpCard,
  type ErpCardDetail,
  type ErpCardsQuery,
  type FieldError,
  type InvitationResult,
  type PoolAccount,
  type PoolAccountsQuery,
  type StatementPeriodBalance,
  type StatementSummary,
  type StatementsByAccountQuery,
  type StatementsQuery,
  type Supplier,
  type SuppliersQuery,
  type TaxRate,
  type TaxRatesQuery,
  type Transaction,
  type TransactionDetail,
  type TransactionsQuery,
  type UpdateCardBody,
  type UpdateVelocityLimitBody,
} from "./schemas/index.js";
import { InvalidRequestError } from "./errors.js";
import { logToken } from "../log-token.js";
import { HttpCore, type HttpResponse, type RetryMode } from "./http.js";
import { validate as validateToken } from "./auth/oauth.js";
import { parseItems, parseOrThrow, type InvalidItem, type ParseContext } from "./parse.js";
import {
  itemsOf,
  pagesByHasNext,
  pagesByNextPage,
  pagesByTotalPages,
  type Page,
  type PageInfoPage,
  type WalkOptions,
} from "./pagination.js";
import type {
  AcknowledgeResult,
  CallOptions,
  CardWriteResult,
  IssueCardResult,
  QashioClientOptions,
  StatementsByAccountPage,
  SuspendCardResult,
} from "./client-types.js";
import {
  CoreCardListEnvelope,
  IssueCardDataSchema,
  StatementsByAccountDataSchema,
  UnknownEnvelope,
  UnknownListEnvelope,
  envelopeOf,
} from "./response-schemas.js";

/** Paths of spec §4, relative to the base URL. */
export const PATHS = {
  transactions: "/public/v1/erp/transactions",
  acknowledge: "/public/v1/erp/transactions/acknowledge",
  erpCards: "/public/v1/erp/cards",
  poolAccounts: "/public/v1/erp/pool_accounts",
  bankAccounts: "/public/v1/erp/bank_accounts",
  chartOfAccounts: "/public/v1/erp/chart_of_accounts",
  taxRates: "/public/v1/erp/tax_rates",
  suppliers: "/public/v1/erp/suppliers",
  statements: "/public/v1/erp/statements",
  companySummary: "/public/v1/erp/company/summary",
  coreCards: "/public/v1/core/cards",
  cardBalance: "/public/v1/core/cards/balance",
  invite: "/public/v1/core/user_profiles/invite",
} as const;

const AccountIdSchema = z.string().trim().min(1);

/** Keys the iterators yield an item once by (see `itemsOf`). */
const byId = (item: { readonly id: string }): string => item.id;

/** The iterators' walk options, naming the list read (`GET` of `path`) in the walk's errors. */
const walkOf = (path: string, options: WalkOptions = {}): WalkOptions => ({ ...options, list: { method: "GET", path } });

/**
 * Client of the provider API for one tenant (the token is the company context).
 *
 * @example
 * ```ts
 * const client = new QashioClient({ baseUrl: resolveBaseUrl("sandbox"), tokenProvider });
 * for await (const tx of client.iterateTransactions({ client_sync_status: "not_synced" })) console.log(tx.qashio_id);
 * ```
 */
export class QashioClient {
  private readonly http: HttpCore;
  private readonly options: QashioClientOptions;

  constructor(options: QashioClientOptions) {
    this.options = options;
    this.http = new HttpCore(options);
  }

  // ---- transactions (§4.3) ----

  /** `GET /public/v1/erp/transactions`: one page, newest first. */
  listTransactions(query: TransactionsQuery = {}, options?: CallOptions): Promise<Page<Transaction>> {
    return this.listPage(PATHS.transactions, TransactionsQuerySchema, query, TransactionSchema, options);
  }

  /** `GET /public/v1/erp/transactions/{id}`: `id` is the UUID (`CT…` references are refused). */
  async getTransaction(id: string): Promise<TransactionDetail> {
    const path = `${PATHS.transactions}/${this.pathId(TransactionIdParamSchema, id, "transactionId", "GET", PATHS.transactions)}`;
    return this.getData(path, TransactionDetailSchema);
  }

  /**
   * `POST /public/v1/erp/transactions/acknowledge` with `{"transaction_ids": [...]}`. Idempotent, so retried
   * like a read. The response shape is not in the spec: any 2xx counts as success, a body that is not JSON included.
   */
  async acknowledgeTransactions(ids: readonly string[], options: CallOptions = {}): Promise<AcknowledgeResult> {
    const body = this.checkedBody(AcknowledgeBodySchema, { transaction_ids: [...ids] }, "POST", PATHS.acknowledge);
    const { deadline, stop, callerRetries } = options;
    const response = await this.http.request({ method: "POST", path: PATHS.acknowledge, body, auth: "bearer", retry: "idempotent", deadline, stop, callerRetries, anyBody: true });
    if (!UnknownEnvelope.safeParse(response.body).success) {
      this.options.logger?.warn("acknowledge answered 2xx without the standard envelope", {
        path: PATHS.acknowledge,
        status: response.status,
        requestId: response.requestId,
      });
    }
    return { acknowledged: body.transaction_ids.length, requestId: response.requestId };
  }

  // ---- ERP cards, pool accounts, master data, statements, company (§4.4-§4.8) ----

  /** `GET /public/v1/erp/cards`: one page of cards (accounting view). */
  listErpCards(query: ErpCardsQuery = {}, options?: CallOptions): Promise<Page<ErpCard>> {
    return this.listPage(PATHS.erpCards, ErpCardsQuerySchema, query, ErpCardSchema, options);
  }

  /**
   * `GET /public/v1/erp/cards/{cardId}`: one card with its configuration objects; the committed card state. Async so a
   * malformed id rejects the promise, as every other call's does, rather than throwing before one exists.
   */
  async getErpCard(cardId: string): Promise<ErpCardDetail> {
    return this.getData(this.erpCardPath(cardId), ErpCardDetailSchema);
  }

  /**
   * `GET /public/v1/erp/cards/{cardId}` as the card cycle reads it: the card as a page of one, in `data` when it passes
   * its schema and raw in `invalid` when not, so a malformed card is quarantined like a listed one rather than failing
   * the walk.
   */
  async readErpCard(cardId: string, options?: CallOptions): Promise<{ data: ErpCardDetail[]; invalid: readonly InvalidItem[]; requestId?: string }> {
    const path = this.erpCardPath(cardId);
    const response = await this.get(path, {}, options);
    const context = this.context("GET", path, response);
    // The module's envelope, not one built here (see `envelopes`): a fifth of what a card costs on a walk with details.
    const envelope = parseOrThrow(UnknownEnvelope, response.body, context);
    const { valid, invalid } = parseItems(ErpCardDetailSchema, [envelope.data], context);
    return { data: valid, invalid, requestId: response.requestId };
  }

  private erpCardPath(cardId: string): string {
    return `${PATHS.erpCards}/${this.pathId(CardIdParamSchema, cardId, "cardId", "GET", PATHS.erpCards)}`;
  }

  /** `GET /public/v1/erp/pool_accounts`. */
  listPoolAccounts(query: PoolAccountsQuery = {}): Promise<Page<PoolAccount>> {
    return this.listPage(PATHS.poolAccounts, PoolAccountsQuerySchema, query, PoolAccountSchema);
  }

  /** `GET /public/v1/erp/bank_accounts`. */
  listBankAccounts(query: BankAccountsQuery = {}): Promise<Page<BankAccount>> {
    return this.listPage(PATHS.bankAccounts, MasterDataQuerySchema, query, BankAccountSchema);
  }

  /** `GET /public/v1/erp/chart_of_accounts`. */
  listChartOfAccounts(query: ChartOfAccountsQuery = {}): Promise<Page<ChartOfAccount>> {
    return this.listPage(PATHS.chartOfAccounts, ChartOfAccountsQuerySchema, query, ChartOfAccountSchema);
  }

  /** `GET /public/v1/erp/tax_rates`. */
  listTaxRates(query: TaxRatesQuery = {}): Promise<Page<TaxRate>> {
    return this.listPage(PATHS.taxRates, MasterDataQuerySchema, query, TaxRateSchema);
  }

  /** `GET /public/v1/erp/suppliers`. */
  listSuppliers(query: SuppliersQuery = {}): Promise<Page<Supplier>> {
    return this.listPage(PATHS.suppliers, MasterDataQuerySchema, query, SupplierSchema);
  }

  /** `GET /public/v1/erp/statements`: monthly summaries, most recent first. */
  listStatements(query: StatementsQuery = {}): Promise<Page<StatementSummary>> {
    return this.listPage(PATHS.statements, StatementsQuerySchema, query, StatementSummarySchema);
  }

  /** `GET /public/v1/erp/statements/{statementAccountId}`: one account's periods (pagination inside `data`). */
  async getStatementsByAccount(accountId: string, query: StatementsByAccountQuery = {}): Promise<StatementsByAccountPage> {
    const checked = this.checkedQuery(StatementsByAccountQuerySchema, query, "GET", PATHS.statements);
    const path = `${PATHS.statements}/${this.pathId(AccountIdSchema, accountId, "statementAccountId", "GET", PATHS.statements)}`;
    const response = await this.get(path, checked);
    const context = this.context("GET", path, response);
    const { data } = parseOrThrow(envelopeOf(StatementsByAccountDataSchema), response.body, context);
    const { valid, invalid } = parseItems(StatementPeriodBalanceSchema, data.data, context);
    const { data: _periods, page, total_pages: totalPages, total, ...account } = data;
    return { account, data: valid, invalid, page, totalPages, total, requestId: response.requestId };
  }

  /** `GET /public/v1/erp/company/summary`: shape not shown in the spec, returned as received. */
  getCompanySummary(): Promise<CompanySummary> {
    return this.getData(PATHS.companySummary, CompanySummarySchema);
  }

  // ---- core cards and writes (§4.9) ----

  /** `GET /public/v1/core/cards`: cards visible to the token's user (`page_info` pagination). */
  async listCoreCards(query: CoreCardsQuery = {}): Promise<PageInfoPage<CoreCard>> {
    const checked = this.checkedQuery(CoreCardsQuerySchema, query, "GET", PATHS.coreCards);
    const response = await this.get(PATHS.coreCards, checked);
    const context = this.context("GET", PATHS.coreCards, response);
    const { data } = parseOrThrow(CoreCardListEnvelope, response.body, context);
    const { valid, invalid } = parseItems(CoreCardSchema, data.cards, context);
    return { data: valid, invalid, pageInfo: data.page_info, requestId: response.requestId };
  }

  /** `GET /public/v1/core/cards/balance`: needs `nickname` or `last_four`. */
  async getCardBalance(query: CardBalanceQuery): Promise<CardBalance> {
    const checked = this.checkedQuery(CardBalanceQuerySchema, query, "GET", PATHS.cardBalance);
    const response = await this.get(PATHS.cardBalance, checked);
    return parseOrThrow(envelopeOf(CardBalanceSchema), response.body, this.context("GET", PATHS.cardBalance, response)).data;
  }

  /**
   * `POST /public/v1/core/cards`: issues a card. Never retried automatically (spec §7 rule 3): after a
   * TimeoutError, NetworkError or ServerError, re-list the user's cards before issuing again.
   * The request shape is not in the spec, so `body` is sent as given.
   */
  async issueCard(body: Readonly<Record<string, unknown>>): Promise<IssueCardResult> {
    const response = await this.write("POST", PATHS.coreCards, body, "never");
    const envelope = parseOrThrow(UnknownEnvelope, response.body, this.context("POST", PATHS.coreCards, response));
    const card = IssueCardDataSchema.safeParse(envelope.data);
    return {
      ...(card.success ? { card: card.data.card } : {}),
      data: envelope.data,
      message: envelope.message,
      requestId: response.requestId,
    };
  }

  /** `PUT /public/v1/core/cards/{cardId}`: changes only the fields sent; cardholders are emailed. */
  async updateCard(cardId: string, body: UpdateCardBody): Promise<CardWriteResult> {
    const path = this.cardPath("PUT", cardId);
    const checked = this.checkedBody(UpdateCardBodySchema, body, "PUT", path);
    return this.cardWrite("PUT", path, checked, "idempotent");
  }

  /**
   * `PUT /public/v1/core/cards/{cardId}/change_status` with status `suspended` (the only status allowed).
   * Success means accepted: processing is asynchronous; read the committed state with `getErpCard`.
   */
  async suspendCard(cardId: string, options: { reason?: string } = {}): Promise<SuspendCardResult> {
    const path = this.cardPath("PUT", cardId, "/change_status");
    // Checked like every write body, before any call: a plain-JS caller's non-string reason is refused here.
    const body = this.checkedBody(ChangeStatusBodySchema, { status: SUSPEND_STATUS, ...(options.reason === undefined ? {} : { reason: options.reason }) }, "PUT", path);
    const response = await this.write("PUT", path, body, "idempotent");
    const envelope = parseOrThrow(envelopeOf(ChangeStatusDataSchema), response.body, this.context("PUT", path, response));
    return { message: envelope.data.message ?? envelope.message, requestId: response.requestId };
  }

  /**
   * `POST /public/v1/core/cards/{cardId}/update_velocity_limit`. Every call writes an audit record and may
   * email the cardholder, so only a 429 is retried.
   */
  async updateVelocityLimit(cardId: string, body: UpdateVelocityLimitBody): Promise<CardWriteResult> {
    const path = this.cardPath("POST", cardId, "/update_velocity_limit");
    const checked = this.checkedBody(UpdateVelocityLimitBodySchema, body, "POST", path);
    return this.cardWrite("POST", path, checked, "unambiguous-only");
  }

  // ---- users (§4.10) ----

  /**
   * `POST /public/v1/core/user_profiles/invite` as end users. Delivery is told by `summary`
   * (absent when queued), not by the status code. Only a 429 is retried (a replay would re-send emails).
   */
  async inviteUsers(emails: readonly string[]): Promise<InvitationResult> {
    const body = this.checkedBody(InviteBodySchema, { end_user: [...emails] }, "POST", PATHS.invite);
    const response = await this.write("POST", PATHS.invite, body, "unambiguous-only");
    return parseOrThrow(envelopeOf(InvitationResultSchema), response.body, this.context("POST", PATHS.invite, response)).data;
  }

  // ---- OAuth (§4.2) ----

  /** `GET /oauth2/validate` with the provider's current token: valid, and API access enabled. */
  async validate(): Promise<{ active: boolean }> {
    const { baseUrl, fetch, clock, timeoutMs, retry, logger, onRetry } = this.options;
    const token = await this.options.tokenProvider.getAccessToken();
    return validateToken({ baseUrl, fetch, clock, timeoutMs, retry, logger, onRetry }, token);
  }

  // ---- iterators (§8.1) ----

  /**
   * Every transaction matching `query`, walking `pagination.has_next`; each id once, though arrivals during the walk
   * shift the pages (see `itemsOf`). Acknowledge after the walk: an acknowledgement during it shrinks a
   * `client_sync_status` list under the walk, which then misses the items moving up past it.
   */
  iterateTransactions(query: Omit<TransactionsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<Transaction> {
    const walk = walkOf(PATHS.transactions, options);
    return itemsOf(pagesByHasNext((page) => this.listTransactions({ ...query, page }), walk), walk, byId);
  }

  /** Every ERP card matching `query`. */
  iterateErpCards(query: Omit<ErpCardsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<ErpCard> {
    const walk = walkOf(PATHS.erpCards, options);
    return itemsOf(pagesByHasNext((page) => this.listErpCards({ ...query, page }), walk), walk, byId);
  }

  /** Every pool account matching `query`. */
  iteratePoolAccounts(query: Omit<PoolAccountsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<PoolAccount> {
    const walk = walkOf(PATHS.poolAccounts, options);
    return itemsOf(pagesByHasNext((page) => this.listPoolAccounts({ ...query, page }), walk), walk, byId);
  }

  /** Every bank account matching `query`. */
  iterateBankAccounts(query: Omit<BankAccountsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<BankAccount> {
    const walk = walkOf(PATHS.bankAccounts, options);
    return itemsOf(pagesByHasNext((page) => this.listBankAccounts({ ...query, page }), walk), walk, byId);
  }

  /** Every ledger account matching `query`. */
  iterateChartOfAccounts(query: Omit<ChartOfAccountsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<ChartOfAccount> {
    const walk = walkOf(PATHS.chartOfAccounts, options);
    return itemsOf(pagesByHasNext((page) => this.listChartOfAccounts({ ...query, page }), walk), walk, byId);
  }

  /** Every tax rate matching `query`. */
  iterateTaxRates(query: Omit<TaxRatesQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<TaxRate> {
    const walk = walkOf(PATHS.taxRates, options);
    return itemsOf(pagesByHasNext((page) => this.listTaxRates({ ...query, page }), walk), walk, byId);
  }

  /** Every supplier matching `query`. */
  iterateSuppliers(query: Omit<SuppliersQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<Supplier> {
    const walk = walkOf(PATHS.suppliers, options);
    return itemsOf(pagesByHasNext((page) => this.listSuppliers({ ...query, page }), walk), walk, byId);
  }

  /** Every statement summary matching `query`. */
  iterateStatements(query: Omit<StatementsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<StatementSummary> {
    const walk = walkOf(PATHS.statements, options);
    return itemsOf(pagesByHasNext((page) => this.listStatements({ ...query, page }), walk), walk);
  }

  /** Every period of one account's statements, walking the inner `page` / `total_pages`. */
  iterateStatementsByAccount(
    accountId: string,
    query: Omit<StatementsByAccountQuery, "page"> = {},
    options?: WalkOptions,
  ): AsyncGenerator<StatementPeriodBalance> {
    const walk = walkOf(`${PATHS.statements}/{statementAccountId}`, options);
    return itemsOf(pagesByTotalPages((page) => this.getStatementsByAccount(accountId, { ...query, page }), walk), walk);
  }

  /** Every core card visible to the token's user, walking `page_info.next_page`. */
  iterateCoreCards(query: Omit<CoreCardsQuery, "page"> = {}, options?: WalkOptions): AsyncGenerator<CoreCard> {
    const walk = walkOf(PATHS.coreCards, options);
    return itemsOf(pagesByNextPage((page) => this.listCoreCards({ ...query, page }), walk), walk, byId);
  }

  // ---- internals ----

  private onDrift = (warning: DriftReport): void => {
    // The value is logged only when it is a plain identifier: a provider could put free text (a name, an email) in an
    // enum field. `onDrift` gets it whole.
    this.options.logger?.warn("provider sent an enum value the spec does not list", { ...warning, value: logToken(warning.value) });
    this.options.onDrift?.(warning);
  };

  private context(method: string, path: string, response: HttpResponse): ParseContext {
    return { method, path, status: response.status, requestId: response.requestId, onDrift: this.onDrift };
  }

  private get(path: string, query: Readonly<Record<string, unknown>> = {}, options: CallOptions = {}): Promise<HttpResponse> {
    return this.http.request({
      method: "GET",
      path,
      query: query as Readonly<Record<string, string | number | boolean | undefined>>,
      auth: "bearer",
      retry: "idempotent",
      deadline: options.deadline,
      stop: options.stop,
    });
  }

  private write(method: "POST" | "PUT", path: string, body: unknown, retry: RetryMode): Promise<HttpResponse> {
    return this.http.request({ method, path, body, auth: "bearer", retry });
  }

  private async getData<S extends z.ZodType>(path: string, schema: S): Promise<z.output<S>> {
    const response = await this.get(path);
    return parseOrThrow(envelopeOf(schema), response.body, this.context("GET", path, response)).data as z.output<S>;
  }

  private async listPage<Q extends z.ZodType, S extends z.ZodType>(
    path: string,
    querySchema: Q,
    query: Readonly<Record<string, unknown>>,
    itemSchema: S,
    options?: CallOptions,
  ): Promise<Page<z.output<S>>> {
    const checked = this.checkedQuery(querySchema, query, "GET", path);
    const response = await this.get(path, checked, options);
    const context = this.context("GET", path, response);
    const envelope = parseOrThrow(UnknownListEnvelope, response.body, context);
    const { valid, invalid } = parseItems(itemSchema, envelope.data, context);
    return { data: valid, invalid, pagination: envelope.pagination, requestId: response.requestId };
  }

  private async cardWrite(method: "POST" | "PUT", path: string, body: unknown, retry: RetryMode): Promise<CardWriteResult> {
    const response = await this.write(method, path, body, retry);
    const envelope = parseOrThrow(envelopeOf(CoreCardWriteDataSchema), response.body, this.context(method, path, response));
    return { card: envelope.data.card, message: envelope.message, requestId: response.requestId };
  }

  private checkedQuery<S extends z.ZodType>(
    schema: S,
    query: Readonly<Record<string, unknown>>,
    method: string,
    path: string,
  ): Readonly<Record<string, unknown>> {
    // Refused, not dropped: a mistyped filter of a plain-JS caller would otherwise list everything unfiltered.
    const result = checkQuery(schema, query, "refuse");
    if (!result.ok) throw invalidRequest("query", result.errors, method, path);
    return result.value as Readonly<Record<string, unknown>>;
  }

  private checkedBody<S extends z.ZodType>(schema: S, body: unknown, method: string, path: string): z.output<S> {
    const result = checkBody(schema, body);
    if (!result.ok) throw invalidRequest("body", result.errors, method, path);
    return result.value;
  }

  /** Checks a path parameter and encodes it; errors name the path without the bad id. */
  private pathId(schema: z.ZodType, value: string, name: string, method: string, where: string): string {
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      throw invalidRequest("path", [{ field: name, code: "INVALID_FORMAT", message: `${name} is malformed` }], method, where);
    }
    // What the schema made of it: an account id is checked trimmed, so it is sent trimmed.
    return encodeURIComponent(String(parsed.data));
  }

  private cardPath(method: string, cardId: string, suffix = ""): string {
    return `${PATHS.coreCards}/${this.pathId(CardIdParamSchema, cardId, "cardId", method, PATHS.coreCards)}${suffix}`;
  }
}

function invalidRequest(part: string, errors: readonly FieldError[], method: string, path: string): InvalidRequestError {
  const list = errors.map((e) => e.message).join("; ");
  return new InvalidRequestError(`invalid ${part} for ${method} ${path}, not sent: ${list}`, {
    errors: errors.map(({ field, code, message }) => ({ field, code, message })),
    method,
    path,
  });
}
