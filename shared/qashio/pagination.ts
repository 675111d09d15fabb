/**
 * Async walkers over the three pagination shapes of spec §8.1: the `pagination.has_next` block,
 * the core card list's `page_info.next_page`, and the inner `page` / `total_pages` of statements-by-account.
 */
import type { Pagination, PageInfo } from "./schemas/index.js";
import { InvalidResponseError, type ResponseIssue } from "./errors.js";
import type { InvalidItem } from "./parse.js";

/** One page of a list answered with a `pagination` block. */
export interface Page<T> {
  readonly data: T[];
  readonly pagination: Pagination;
  readonly requestId?: string;
  /** Items that failed their schema, kept raw for quarantine; `data` holds the valid ones. */
  readonly invalid: readonly InvalidItem[];
}

/** One page of the core card list (`page_info`). */
export interface PageInfoPage<T> {
  readonly data: T[];
  readonly pageInfo: PageInfo;
  readonly requestId?: string;
  readonly invalid: readonly InvalidItem[];
}

/** One page of a response paginated inside `data` (`page`, `total_pages`, `total`). */
export interface InnerPage<T> {
  readonly data: T[];
  readonly page: number;
  readonly totalPages: number;
  readonly total: number;
  readonly requestId?: string;
  readonly invalid: readonly InvalidItem[];
}

/** The request a walk pages through, named in its errors: the walker sees only a `fetchPage` closure. */
export interface WalkedList {
  readonly method: string;
  /** Path only: never a query string. */
  readonly path: string;
}

export interface WalkOptions {
  /** First page to read. @default 1 */
  readonly startPage?: number;
  /** Safety stop against a provider that never says "last page". @default 10_000 */
  readonly maxPages?: number;
  /**
   * Receives items that failed their schema, with the number of their page (counted from `startPage`). Without it,
   * an invalid item ends the walk with `InvalidResponseError` rather than being dropped silently.
   */
  readonly onInvalid?: (item: InvalidItem, page: number) => void;
  /** Named in the walk's errors, which otherwise cannot say which list misbehaved. The client's iterators set it. */
  readonly list?: WalkedList;
}

export const DEFAULT_MAX_PAGES = 10_000;

/** An error of a walk over `list`: its message starts with the method and path, which it also carries. */
function walkError(list: WalkedList | undefined, message: string, context: { requestId?: string; issues?: readonly ResponseIssue[] } = {}): InvalidResponseError {
  if (list === undefined) return new InvalidResponseError(message, context);
  return new InvalidResponseError(`${list.method} ${list.path}: ${message}`, { ...context, method: list.method, path: list.path });
}

function tooManyPages(list: WalkedList | undefined, maxPages: number): InvalidResponseError {
  return walkError(list, `pagination did not end within ${maxPages} pages`);
}

/**
 * A page answered for another one asked for, while the answer says more follow: a provider that ignores `page` (or
 * repeats one) would otherwise be walked to `maxPages`, its one page over and over. At the end of a walk the answer may
 * lawfully be another page: a list that shrank under the walk, answered with its last page for one past it. Never a
 * page past the one asked for: no list that shrank answers so, and the pages between would go unread.
 *
 * Not the engine's `otherPageAnswered` (shared/bridge/provider.ts), on purpose: "more follow" here is the walker's own
 * next-page signal, as the walk ends where it says. The engine's walks go on past `has_next` false (a count saying
 * more) and take ports that leave it out, so they also read a `total_pages` past the page answered; that rule here
 * would throw on answers these walks take as their last page (`has_next` false while `total_pages` says more).
 */
function notThePageAsked(list: WalkedList | undefined, asked: number, answered: number, requestId: string | undefined): InvalidResponseError {
  const how = answered > asked ? ", past it" : " and says more follow";
  return walkError(list, `asked for page ${asked} of a list, the provider answered page ${answered}${how}: it is not paging`, { requestId });
}

/**
 * The loop every walker shares: `nextPage` reads the page number to request after `result`, or undefined at the end;
 * `answeredPage` the page number `result` says it is.
 */
async function* walkPages<P extends { readonly requestId?: string }>(
  fetchPage: (page: number) => Promise<P>,
  options: WalkOptions,
  nextPage: (result: P, page: number) => number | undefined,
  answeredPage: (result: P) => number,
): AsyncGenerator<P, void, undefined> {
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
  let page = options.startPage ?? 1;
  for (let read = 0; read < maxPages; read += 1) {
    const result = await fetchPage(page);
    // Checked before the page is yielded: its items are another page's, already yielded or still to come.
    const answered = answeredPage(result);
    if (answered > page || (answered !== page && nextPage(result, page) !== undefined)) throw notThePageAsked(options.list, page, answered, result.requestId);
    yield result;
    const next = nextPage(result, page);
    if (next === undefined) return;
    page = next;
  }
  throw tooManyPages(options.list, maxPages);
}

/**
 * Walks a `pagination` list: requests page 1, 2, ... while `has_next` is true. The pages are read by number, so a
 * list that changes under the walk shifts them (see {@link itemsOf}): acknowledging each page of a `client_sync_status`
 * list while walking it would skip the page after each one (its items move up into the page just read).
 *
 * @example
 * ```ts
 * const ids: string[] = [];
 * for await (const page of pagesByHasNext((page) => client.listTransactions({ client_sync_status: "not_synced", page }))) {
 *   await handle(page.data);
 *   ids.push(...page.data.map((tx) => tx.id));
 * }
 * await client.acknowledgeTransactions(ids); // after the walk, not page by page
 * ```
 */
export async function* pagesByHasNext<P extends { readonly pagination: Pagination; readonly requestId?: string }>(
  fetchPage: (page: number) => Promise<P>,
  options: WalkOptions = {},
): AsyncGenerator<P, void, undefined> {
  yield* walkPages(
    fetchPage,
    options,
    (result, page) => (result.pagination.has_next ? page + 1 : undefined),
    (result) => result.pagination.page,
  );
}

/**
 * Walks the core card list: follows `page_info.next_page` until it is null or absent; a `next_page` that is not the
 * page after the one read ends the walk with `InvalidResponseError`.
 *
 * @example
 * ```ts
 * for await (const page of pagesByNextPage((page) => client.listCoreCards({ page }))) console.log(page.data.length);
 * ```
 */
export async function* pagesByNextPage<P extends { readonly pageInfo: PageInfo; readonly requestId?: string }>(
  fetchPage: (page: number) => Promise<P>,
  options: WalkOptions = {},
): AsyncGenerator<P, void, undefined> {
  yield* walkPages(fetchPage, options, (result, page) => {
    const next = result.pageInfo.next_page;
    if (next === null || next === undefined) return undefined;
    // A pointer check, not the engine's `repeatsPage` (rows compared): the engine's pages carry no `next_page`.
    if (next <= page) throw walkError(options.list, `page_info.next_page ${next} does not advance past page ${page}`, { requestId: result.requestId });
    // Pages are 1-based and consecutive (§8.1): a pointer past the next one would leave a page's cards unread.
    if (next > page + 1) throw walkError(options.list, `page_info.next_page ${next} skips page ${page + 1}`, { requestId: result.requestId });
    return next;
  }, (result) => result.pageInfo.current_page);
}

/**
 * Walks a response paginated inside `data`: requests pages until the answer's `page >= total_pages`. Read from the
 * answer, as `has_next` is: asked for the last page, an answer of an earlier page saying more follow is no end.
 *
 * @example
 * ```ts
 * for await (const page of pagesByTotalPages((page) => client.getStatementsByAccount("AC1", { page }))) console.log(page.data);
 * ```
 */
export async function* pagesByTotalPages<P extends { readonly page: number; readonly totalPages: number; readonly requestId?: string }>(
  fetchPage: (page: number) => Promise<P>,
  options: WalkOptions = {},
): AsyncGenerator<P, void, undefined> {
  yield* walkPages(
    fetchPage,
    options,
    (result, page) => (result.page >= result.totalPages ? undefined : page + 1),
    (result) => result.page,
  );
}

/**
 * Flattens pages into their items, in order. Invalid items go to `options.onInvalid`, or end the walk.
 *
 * With `keyOf`, an item whose key was already yielded in this walk is skipped: pages are read by number, so items
 * arriving at the top of a newest-first list while it is walked push the last items of a page already read onto the
 * head of the next one. Items that leave the list above the page being read (acknowledged meanwhile) shift the other
 * way: the walk does not see the items that move up past it. The keys are kept for the whole walk (about 100 bytes
 * each): a walk over a million items holds about 100 MB of them.
 *
 * @example
 * ```ts
 * for await (const card of itemsOf(pagesByNextPage((page) => client.listCoreCards({ page })), {}, (card) => card.id)) console.log(card.id);
 * ```
 */
export async function* itemsOf<T>(
  pages: AsyncIterable<{ readonly data: T[]; readonly invalid: readonly InvalidItem[] }>,
  options: Pick<WalkOptions, "onInvalid" | "startPage" | "list"> = {},
  keyOf?: (item: T) => string,
): AsyncGenerator<T, void, undefined> {
  // The walkers read consecutive pages from startPage (a core card list's next_page is the next one too).
  let number = (options.startPage ?? 1) - 1;
  const yielded = new Set<string>();
  for await (const page of pages) {
    number += 1;
    for (const item of page.invalid) {
      if (!options.onInvalid) {
        throw walkError(options.list, `item ${item.index} of page ${number} does not match its schema`, { issues: item.issues });
      }
      options.onInvalid(item, number);
    }
    for (const item of page.data) {
      if (keyOf !== undefined) {
        const key = keyOf(item);
        if (yielded.has(key)) continue;
        yielded.add(key);
      }
      yield item;
    }
  }
}
