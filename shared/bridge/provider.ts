/**
 * The slice of the provider API the engine needs, as structural interfaces.
 * `QashioClient` satisfies them; tests pass in-memory fakes. Items are handed over raw (`unknown`):
 * the engine validates each one itself so one bad record is quarantined and the rest of the page goes on.
 */

/** `client_sync_status` values the transaction cycle pulls (spec §2.2, §3.1). */
export type PullStatus = "not_synced" | "outdated";

/** Pagination block of a list response (spec §8.1); only `has_next` is relied on. */
export interface PageInfo {
  readonly page?: number;
  readonly page_size?: number;
  readonly total_records?: number;
  readonly total_pages?: number;
  readonly has_next?: boolean;
}

/** One page of a list endpoint, items not yet validated. */
export interface ProviderPage {
  readonly data: readonly unknown[];
  readonly pagination?: PageInfo;
  readonly requestId?: string;
}

/** Query of the transaction list the engine sends (snake_case as in spec §4.3). */
export interface TransactionListQuery {
  client_sync_status?: PullStatus;
  qashio_id?: string;
  page: number;
  page_size: number;
}

/** Query of the ERP card list the engine sends (spec §4.4; `status` lowercase). */
export interface CardListQuery {
  status?: "suspended";
  page: number;
  page_size: number;
}

/** What the transaction cycle needs from the provider. */
export interface TransactionProviderPort {
  listTransactions(query: TransactionListQuery): Promise<ProviderPage>;
  /** Moves the given transactions to `synced` (spec §3.1). One call per page. */
  acknowledgeTransactions(ids: string[]): Promise<unknown>;
}

/** What the card cycle needs from the provider. */
export interface CardProviderPort {
  listErpCards(query: CardListQuery): Promise<ProviderPage>;
}

/** Everything the engine needs from the provider. */
export interface ProviderPort extends TransactionProviderPort, CardProviderPort {}
