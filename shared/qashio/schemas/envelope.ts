/** Response envelopes: success (§4.1), lists (§8.1), core card list (§4.9), error (§7). */
import * as z from "zod";
import { CoreCardSchema } from "./core-card.js";
import { PageInfoSchema, PaginationSchema } from "./pagination.js";

/** `meta` of every envelope; `request_id` is also sent as `x-request-id`. */
export const MetaSchema = z.looseObject({
  request_id: z.string().nullish(),
  timestamp: z.string().nullish(),
});
export type Meta = z.output<typeof MetaSchema>;

/**
 * Success envelope around `data`. `meta` is optional so a missing block does not
 * make a page unreadable.
 *
 * @example
 * ```ts
 * const TransactionResponse = successEnvelope(TransactionDetailSchema);
 * const { data } = TransactionResponse.parse(await res.json());
 * ```
 */
export function successEnvelope<T extends z.ZodType>(data: T) {
  return z.looseObject({
    status_code: z.number().int().optional(),
    success: z.literal(true),
    message: z.string().nullish(),
    data,
    meta: MetaSchema.optional(),
  });
}
/** A parsed success envelope whose `data` has type `T`. */
export type SuccessEnvelope<T> = { status_code?: number; success: true; message?: string | null; data: T; meta?: Meta };

/**
 * List envelope: `data` is an array of `item`, plus the `pagination` block (§8.1).
 * Pass `z.unknown()` as `item` to validate items one by one (see `parseEach`).
 *
 * @example
 * ```ts
 * const page = listEnvelope(z.unknown()).parse(json);
 * const { valid, invalid } = parseEach(TransactionSchema, page.data);
 * ```
 */
export function listEnvelope<T extends z.ZodType>(item: T) {
  return successEnvelope(z.array(item)).extend({ pagination: PaginationSchema });
}

/** `data` of the core card list: `{ cards, page_info }` (§4.9). */
export function coreCardListData<T extends z.ZodType>(card: T) {
  return z.looseObject({ cards: z.array(card), page_info: PageInfoSchema });
}

/** `data` of the core card list with every card parsed as {@link CoreCardSchema}. */
export const CoreCardListDataSchema = coreCardListData(CoreCardSchema);
export type CoreCardListData = z.output<typeof CoreCardListDataSchema>;

/** Envelope of `GET /public/v1/core/cards`. */
export const CoreCardListEnvelopeSchema = successEnvelope(CoreCardListDataSchema);
export type CoreCardListEnvelope = z.output<typeof CoreCardListEnvelopeSchema>;

/** `data` of the card writes: `{ card }` (update card, update velocity limit). */
export const CoreCardWriteDataSchema = z.looseObject({ card: CoreCardSchema });
export type CoreCardWriteData = z.output<typeof CoreCardWriteDataSchema>;

/** `data` of `change_status`: `{ message }` (processing is asynchronous). */
export const ChangeStatusDataSchema = z.looseObject({ message: z.string().nullish() });
export type ChangeStatusData = z.output<typeof ChangeStatusDataSchema>;

/** One entry of the error envelope's `errors`; `field` is null when not tied to one input. */
export const ErrorDetailSchema = z.looseObject({
  field: z.string().nullable(),
  code: z.string(),
  message: z.string(),
});
export type ErrorDetail = z.output<typeof ErrorDetailSchema>;

/** Error envelope (§7). It has no `success` field; `errors` defaults to `[]` when absent. */
export const ErrorEnvelopeSchema = z.looseObject({
  status_code: z.number().int(),
  message: z.string(),
  errors: z.array(ErrorDetailSchema).default([]),
  meta: MetaSchema.optional(),
});
export type ErrorEnvelope = z.output<typeof ErrorEnvelopeSchema>;
