/** Schemas of the success responses QashioClient (client.ts) parses, each built once per process. */
import * as z from "zod";
import { CoreCardSchema, StatementsByAccountSchema, coreCardListData, listEnvelope, successEnvelope } from "./schemas/index.js";

/**
 * One success envelope per `data` schema, built on first use: a schema built per call is compiled per call too (its
 * conformance predicate, schemas/conform.ts), about 120 us of CPU each time.
 */
const envelopes = new WeakMap<z.ZodType, z.ZodType>();

export function envelopeOf<S extends z.ZodType>(data: S): ReturnType<typeof successEnvelope<S>> {
  let envelope = envelopes.get(data);
  if (envelope === undefined) envelopes.set(data, (envelope = successEnvelope(data)));
  return envelope as ReturnType<typeof successEnvelope<S>>;
}

export const UnknownEnvelope = successEnvelope(z.unknown());
export const UnknownListEnvelope = listEnvelope(z.unknown());
export const CoreCardListEnvelope = successEnvelope(coreCardListData(z.unknown()));
export const IssueCardDataSchema = z.looseObject({ card: CoreCardSchema });
/** `data` of one account's statements, its periods parsed one by one (see getStatementsByAccount). */
export const StatementsByAccountDataSchema = StatementsByAccountSchema.extend({ data: z.array(z.unknown()) });
