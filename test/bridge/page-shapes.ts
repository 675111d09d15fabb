/**
 * How a provider serving fewer items a page than asked may answer (spec §8.3 shows no maximum page size): each shape
 * takes the query and the list's own answer, served in the smaller size, and tells it as that provider would.
 */
import type { ProviderPage } from "../../shared/bridge/provider.js";

/** What a list query pages by. */
interface PageQuery {
  readonly page: number;
  readonly page_size: number;
}

/** An answer shape: the answer to `query`, given the list's own `page` served in the smaller size. */
export type PageShape = (query: PageQuery, page: ProviderPage) => ProviderPage;

export const pageShapes = {
  // page_size echoes the size asked, and total_pages / has_next are counted in it: only total_records is true.
  countedInSizeAsked: (query, page) => {
    const total = page.pagination?.total_records ?? 0;
    const pages = Math.ceil(total / query.page_size);
    return { ...page, pagination: { page: query.page, page_size: query.page_size, total_records: total, total_pages: pages, has_next: query.page < pages } };
  },
  // Optional in the provider port (QashioClient refuses such an answer).
  withoutPagination: (_query, { pagination: _dropped, ...page }) => page,
  // What it served, in page_size, total_pages and has_next alike.
  sayingSo: (_query, page) => page,
  // page_size echoes the size asked; has_next is true to what it served, and there is no count to weigh it against.
  echoingSizeAskedWithoutCount: (query, page) => ({ ...page, pagination: { page: query.page, page_size: query.page_size, has_next: page.pagination?.has_next ?? false } }),
} satisfies Record<string, PageShape>;

/** Pagination of `page` kept to `keys`: what a provider telling less than the whole block sends. */
function keeping(page: ProviderPage, keys: readonly (keyof NonNullable<ProviderPage["pagination"]>)[]): ProviderPage {
  const pagination = Object.fromEntries(Object.entries(page.pagination ?? {}).filter(([key]) => (keys as readonly string[]).includes(key)));
  return { ...page, pagination };
}

/** Shapes saying the size served in `page_size` without a `total_pages` to count the list in it. */
export const statedSizeShapes = {
  // page, page_size, total_records and has_next true to what it served.
  withoutTotalPages: (_query, page) => keeping(page, ["page", "page_size", "total_records", "has_next"]),
  withCountOnly: (_query, page) => keeping(page, ["page_size", "total_records"]),
  withHasNextOnly: (_query, page) => keeping(page, ["page_size", "has_next"]),
} satisfies Record<string, PageShape>;

/**
 * A provider answering page 1 to every page asked, naming the page asked and saying more follow, in pages it counts
 * ever more of (`total_pages` growing every call); `list` is the list's own answer to a page. One per walk: it counts
 * its calls.
 */
export function repeatingFirstPage(): (query: PageQuery, list: (page: number) => Promise<ProviderPage>) => Promise<ProviderPage> {
  let calls = 0;
  return async (query, list) => {
    const first = await list(1);
    return { ...first, pagination: { ...first.pagination, page: query.page, total_pages: query.page + ++calls, has_next: true } };
  };
}

/**
 * `answer` without its `has_next`: a provider port saying more follow by `total_pages` alone (QashioClient refuses
 * such an answer; the engine's walks must not).
 */
export function withoutHasNext(answer: ProviderPage): ProviderPage {
  const { has_next: _dropped, ...pagination } = answer.pagination ?? {};
  return { ...answer, pagination };
}
