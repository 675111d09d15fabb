/** The pagination shapes of §8.1 and §4.9. */
import * as z from "zod";

/** `pagination` block of list responses (§8.1). */
export const PaginationSchema = z.looseObject({
  page: z.number().int(),
  page_size: z.number().int(),
  total_records: z.number().int(),
  total_pages: z.number().int(),
  has_next: z.boolean(),
  has_previous: z.boolean(),
});
export type Pagination = z.output<typeof PaginationSchema>;

/** `page_info` of the core card list (§4.9); next/previous are null at the ends. */
export const PageInfoSchema = z.looseObject({
  current_page: z.number().int(),
  per_page: z.number().int(),
  total_entries: z.number().int(),
  total_pages: z.number().int(),
  next_page: z.number().int().nullish(),
  previous_page: z.number().int().nullish(),
  offset: z.number().int().nullish(),
});
export type PageInfo = z.output<typeof PageInfoSchema>;
