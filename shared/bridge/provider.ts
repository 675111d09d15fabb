/**
 * The slice of the provider API the engine needs, as structural interfaces.
 * `QashioClient` satisfies them; tests pass in-memory fakes. Items are handed over raw (`unknown`):
 * the engine validates each one itself so one bad record is quarantined and the rest of the page goes on.
 */
import { cutToDepth, MAX_RECORD_DEPTH, nestedDeeperThan } from "./validate.js";

/** `client_sync_status` values the transaction cycle pulls (spec §2.2, §3.1). */
export type PullStatus = "not_synced" | "outdated";

/**
 * Pagination block of a list response (spec §8.1): `has_next` ends a walk; the card walk and the transactions' backlog
 * gauge also read `total_records` (see {@link listedTotal}).
 */
export interface PageInfo {
  readonly page?: number;
  readonly page_size?: number;
  readonly total_records?: number;
  readonly total_pages?: number;
  readonly has_next?: boolean;
}

/**
 * `pagination.total_records` of a page when it is a count (a non-negative safe integer); undefined when the page does
 * not say, or says something else: its length is no count of what the list holds.
 */
export function listedTotal(page: ProviderPage): number | undefined {
  const total = page.pagination?.total_records;
  return typeof total === "number" && Number.isSafeInteger(total) && total >= 0 ? total : undefined;
}

/**
 * `pagination.page_size` of a page when the provider served fewer items a page than `asked` (a positive safe integer
 * below it): its pages are then numbered in that size. Undefined when it served the size asked, or does not say.
 */
export function servedPageSize(page: ProviderPage, asked: number): number | undefined {
  const served = page.pagination?.page_size;
  return typeof served === "number" && Number.isSafeInteger(served) && served > 0 && served < asked ? served : undefined;
}

/** Items a list answer holds, rejected ones included: as many as its {@link pageEntries}, without building them. */
export function heldBy(answer: ProviderPage): number {
  return answer.data.length + (answer.invalid?.length ?? 0);
}

/**
 * True when a list answer's `total_pages` is its `total_records` counted in pages of `size`: pages the provider
 * numbers in that size, rather than a `page_size` that only counts the items of a short page.
 */
export function countsPagesIn(page: ProviderPage, size: number): boolean {
  const total = listedTotal(page);
  return total !== undefined && page.pagination?.total_pages === Math.ceil(total / size);
}

/**
 * True when a list answer holding `held` items (rejected ones included) says the list goes on past it: its `has_next`
 * is true, or its `total_records` counts more than `above` (the items the walk counts above this page) and these.
 * `above` undefined: the count is not weighed (a read that may show the list before a change the walk made).
 */
export function listsMore(page: ProviderPage, held: number, above: number | undefined): boolean {
  if (page.pagination?.has_next === true) return true;
  const total = listedTotal(page);
  return above !== undefined && total !== undefined && total > above + held;
}

/**
 * True when a list answer holding `held` items is the last page of a walk: it holds none, or its `has_next` is false
 * while its count does not say the list holds more (see {@link listsMore}): a provider serving fewer a page than asked
 * may count `has_next` in the size asked, saying "last" with items still listed. Without `has_next` (a provider port
 * may leave out the pagination block) only an empty page is the last: one short of the size asked may be the
 * provider's own maximum.
 */
export function endsList(page: ProviderPage, held: number, above: number | undefined): boolean {
  return held === 0 || (!(page.pagination?.has_next ?? true) && !listsMore(page, held, above));
}

/**
 * The page a list answer names in `pagination.page` when it is another than `asked` while the answer says pages follow
 * it (`has_next`, or a `total_pages` past it), or when it is past `asked` (even the last page: no list that shrank
 * answers so): a provider ignoring `page` (answering page 1 to every call) or skipping one. A walk cannot go on past
 * such an answer: read on by page number, it meets that page again up to its page bound (card details read anew each
 * time), or ends on pages it never saw. Undefined when the answer names no page, the page asked, or a last page before
 * it (a list that shrank under a walk may answer its last page for one past it).
 *
 * Not the client walkers' rule (shared/qashio/pagination.ts), on purpose: they end where their own next-page signal
 * does, so only it says more follow. These walks go on past `has_next` false (see {@link endsList}) and take ports that
 * leave it out, so a `total_pages` past the page answered says more follow too.
 */
export function otherPageAnswered(answer: ProviderPage, asked: number): number | undefined {
  const pagination = answer.pagination;
  const named = pagination?.page;
  if (typeof named !== "number" || named === asked) return undefined;
  if (named > asked) return named;
  const totalPages = pagination?.total_pages;
  return pagination?.has_next === true || (typeof totalPages === "number" && totalPages > named) ? named : undefined;
}

/** A page a walk read as asked: its number, the size asked, the list's `total_records` then, its rows' keys in order. */
export interface WalkedPage {
  readonly page: number;
  readonly size: number;
  readonly total: number | undefined;
  /** Undefined for a row naming no item: such rows are alike on any page, and tell nothing. */
  readonly keys: readonly (string | undefined)[];
}

/**
 * True when `read` holds the rows of `before`, the page before it, at the same size and count: a provider answering one
 * page whatever page is asked, naming the page asked, so {@link otherPageAnswered} cannot tell. Judged by the caller on
 * an answer that says more follow only. A page asked again in another size, a walk moved back, or a list whose count
 * changed (a whole page's worth issued between the two calls shifts it so) is no evidence. The client's check that
 * `page_info.next_page` advances is another rule (a pointer, not rows): the `pagination` block has no such pointer.
 */
export function repeatsPage(read: WalkedPage, before: WalkedPage | undefined): boolean {
  if (before === undefined || read.page !== before.page + 1 || read.size !== before.size || read.total !== before.total) return false;
  const { keys } = read;
  return keys.length > 0 && keys.length === before.keys.length && keys.every((key, i) => key !== undefined && key === before.keys[i]);
}

/**
 * What a walk logs when it stops at an {@link otherPageAnswered} answer (with the list, the page asked and the one
 * answered) or a {@link repeatsPage} one (the page whose rows it repeats).
 */
export const NOT_PAGING = "provider answered another page than asked, past it or saying more follow: it is not paging; the walk stops there";

/** A list item the client's own schema check rejected, handed over raw (QashioClient's `invalid`). */
export interface RejectedItem {
  /** Position in the page's `data` as the provider sent it. */
  readonly index: number;
  readonly raw: unknown;
  /** Schema issues (paths and messages, never input values). */
  readonly issues?: readonly { readonly path: string; readonly message: string }[];
}

/**
 * One page of a list endpoint. `data` holds items the client accepted (or all items, raw, for a client that
 * does not validate); `invalid` holds the rejected ones raw, so the engine can quarantine and acknowledge them.
 */
export interface ProviderPage {
  readonly data: readonly unknown[];
  readonly invalid?: readonly RejectedItem[];
  readonly pagination?: PageInfo;
  readonly requestId?: string;
}

/** A page item with the client's rejection reason, if it rejected it. */
export interface PageEntry {
  readonly raw: unknown;
  readonly rejected?: string;
}

/**
 * Puts a page back in provider order: accepted items and rejected ones (at their original index). An item nested
 * deeper than {@link MAX_RECORD_DEPTH} is rejected whatever the client said, its body cut at that depth, so nothing
 * after this walks it recursively (hashing, diffing, quarantine ids).
 *
 * @example
 * ```ts
 * pageEntries({ data: [a, c], invalid: [{ index: 1, raw: b, issues: [] }] }); // [{raw:a}, {raw:b, rejected:"…"}, {raw:c}]
 * ```
 */
export function pageEntries(page: ProviderPage): PageEntry[] {
  const entries: PageEntry[] = page.data.map((raw) => ({ raw }));
  const invalid = [...(page.invalid ?? [])].sort((a, b) => a.index - b.index);
  for (const item of invalid) {
    const reason = (item.issues ?? []).map((i) => `${i.path}: ${i.message}`).join("; ") || "rejected by the client schema";
    entries.splice(Math.min(Math.max(item.index, 0), entries.length), 0, { raw: item.raw, rejected: reason });
  }
  for (let i = 0; i < entries.length; i++) {
    const { raw } = entries[i] as PageEntry;
    if (nestedDeeperThan(raw)) entries[i] = { raw: cutToDepth(raw), rejected: `(root): nested deeper than ${MAX_RECORD_DEPTH} levels` };
  }
  return entries;
}

/**
 * Single provider reads a cycle keeps in flight at once (card details, refund parents, a re-drive's reads by
 * qashio_id): a page's reads overlap, without a burst the provider would rate-limit.
 */
export const SINGLE_READ_CONCURRENCY = 4;

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

/** Settings the engine sends with every provider call. */
export interface ProviderCallOptions {
  /**
   * Epoch ms by which the call, retries included, must be over. A call that cannot finish by then is not sent (or
   * not sent again) and rejects with an error named `DeadlineExceededError` carrying this `deadline`, as
   * `QashioClient` does; the cycle then stops with outcome `deadline`.
   */
  readonly deadline?: number;
  /** A stop request: once it aborts, the call starts no further attempt and rejects as out of time (see `deadline`). */
  readonly stop?: AbortSignal;
  /**
   * Sent with an acknowledge: a failed attempt that would be retried is not sent again but rejects with an error named
   * `RetryDeferredError` carrying `delayMs` and `attempt` (failed attempts so far), as `QashioClient` does, so the
   * engine reads the page again before it acknowledges again (a re-drive leaves that to the next cycle).
   * `failedBefore`: the engine's failed attempts so far. A port without retries of its own may ignore it.
   */
  readonly callerRetries?: { readonly failedBefore: number };
}

/** What the transaction cycle needs from the provider. */
export interface TransactionProviderPort {
  listTransactions(query: TransactionListQuery, options?: ProviderCallOptions): Promise<ProviderPage>;
  /** Moves the given transactions to `synced` (spec §3.1). One call per page. */
  acknowledgeTransactions(ids: string[], options?: ProviderCallOptions): Promise<unknown>;
}

/** What the card cycle needs from the provider. */
export interface CardProviderPort {
  listErpCards(query: CardListQuery, options?: ProviderCallOptions): Promise<ProviderPage>;
  /**
   * One card as its single read shows it (spec §4.4: the list's fields plus the configuration objects), as a page of
   * one: in `data` when it passes the client's schema, in `invalid` when not. A card that is gone rejects with a 404.
   * Called only when the tenant asks for card details (`CardCycleDeps.cardDetails`).
   */
  readErpCard(cardId: string, options?: ProviderCallOptions): Promise<ProviderPage>;
}

/** Everything the engine needs from the provider. */
export interface ProviderPort extends TransactionProviderPort, CardProviderPort {}
