/**
 * What a control-surface `PATCH` of a transaction may change: never identity, sync
 * status or the company's record, and only to values every read can serve (the provider's §2.2 shape, plus the
 * fields the sandbox computes with).
 */
import * as z from "zod";
import { checkBody, TransactionDetailSchema } from "../../shared/qashio/schemas/index.js";
import type { FieldError } from "../errors.js";
import type { TransactionRecord } from "./model.js";

/**
 * Fields a patch may not change. `erp_company` is the company's record, which the single read adds (§2.2 rules 2-3):
 * stored, it was listed, a member the list never has.
 */
const IMMUTABLE_FIELDS = new Set(["id", "qashio_id", "company_id", "parent_id", "parent_qashio_id", "created_at", "client_sync_status", "erp_company"]);

/** Fields every patch leaves alone: the write itself stamps them. */
export const STAMPED_FIELDS = new Set(["updated_at", "modified_date"]);

/**
 * A stored transaction: the single-read schema, with the fields lists, filters, views and the company
 * summary compute with made required and strictly typed (the schema itself is lenient for clients).
 */
const StoredTransactionSchema = TransactionDetailSchema.extend({
  transaction_category: z.string(),
  transaction_time: z.iso.datetime(),
  billing_amount: z.number(),
  clearing_amount: z.number(),
  transaction_fee_amount: z.number(),
  clearing_fee: z.number(),
  // Compared as stored by the list filters: a flag sent as text or an id sent as a number would read as one value
  // (the client normalises it) and never match the filter for it. The flag is a boolean (§2.2), never null: a null
  // one would be listed by neither `exclude_from_sync` filter.
  exclude_from_sync: z.boolean(),
  // The other fields §2.2 types (a boolean, a listed value) that every generated transaction fills: never null, nor
  // text for the flag. Unlisted values stay allowed (the client takes them as drift); cleared_at and
  // approved_date_time are null until cleared or approved.
  visible: z.boolean(),
  transaction_status: z.string(),
  erp_sync_status: z.string(),
  approval_status: z.string(),
  card_last_four: z.string().nullable(),
  employee_id: z.string().nullable(),
});

/** A member of the stored shape: its own, so `constructor` or `toString` is none. */
function isTransactionField(field: string): boolean {
  return Object.hasOwn(StoredTransactionSchema.shape, field);
}

/** One entry per offending field of `fields` applied to `tx`; empty when the patch can be stored. */
export function checkTransactionPatch(tx: TransactionRecord, fields: Readonly<Record<string, unknown>>): FieldError[] {
  const errors: FieldError[] = Object.keys(fields).flatMap((f): FieldError[] => {
    if (IMMUTABLE_FIELDS.has(f)) return [{ field: f, code: "INVALID_FORMAT", message: `${f} cannot be changed` }];
    // The schema is loose: a misspelt name would be stored and listed as a member, the intended change unmade.
    if (!isTransactionField(f)) return [{ field: f, code: "INVALID_FORMAT", message: `${f} is not a transaction field` }];
    return [];
  });
  const patched = Object.fromEntries(Object.entries(fields).filter(([f]) => isTransactionField(f) && !IMMUTABLE_FIELDS.has(f) && !STAMPED_FIELDS.has(f)));
  const result = checkBody(StoredTransactionSchema, { ...tx, ...patched });
  if (!result.ok) errors.push(...result.errors);
  return errors;
}
