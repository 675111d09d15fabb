/**
 * Zod schemas of the bridge's event details, one per event type; the JSON Schema files under
 * docs/events/ are generated from these (see ./json-schema.ts). They are consumer schemas: every object is open,
 * since a 1.x minor version may add optional members anywhere (docs/events.md, Versioning).
 */
import * as z from "zod";

/** Version of the event detail shape; minor bumps only add optional members (docs/events.md). */
export const SCHEMA_VERSION = "1.1";

/** Every event type the bridge publishes; also the EventBridge `DetailType`. */
export const EVENT_TYPES = [
  "transaction.created",
  "transaction.changed",
  "card.created",
  "card.updated",
  "card.suspended",
  "card.status_changed",
] as const;

/** One of {@link EVENT_TYPES}. */
export type EventType = (typeof EVENT_TYPES)[number];

const SchemaVersion = z
  .string()
  .regex(/^1\.\d+$/)
  .describe("Version of the detail shape, major.minor; consumers accept any 1.x");

const ChangeSchema = z
  .looseObject({
    path: z.string().describe("JSON Pointer into data.object; elements of arrays with ids are addressed by id"),
    before: z.unknown().describe("Value before the change; null when the member was absent or null (the two count as equal)"),
    after: z.unknown().describe("Value after the change; null when the member was removed or set to null"),
  })
  .describe("One changed member");

const Changes = z.array(ChangeSchema).min(1).describe("What changed since the last recorded snapshot of the subject");

const ParentSchema = z
  .looseObject({
    id: z.string().describe("UUID of the parent transaction (the one parent_qashio_id names)"),
    qashio_id: z.string().describe("CT… reference of the parent transaction"),
  })
  .describe(
    "The transaction a refund or reversal names as its parent (parent_qashio_id): the purchase for a refund of one; a reversal of a refund names that refund, not the purchase (the chain is not walked)",
  );

const Personal = z
  .string()
  .nullable()
  .optional()
  .describe('Personal data: as sent (pii full), "[redacted]" (pii redact) or "hmac-sha256:<hex>" (pii hash)');

// The reducer's marker (shared/aws/event-size.ts): a member of the object, as the engine emits only the declared
// members of `detail` and `data`; declared here so a consumer validating with the schema knows its shape. The engine
// leaves a provider member of that name out (./truncation-marker.ts), so only the reducer sets it.
const Truncated = z
  .array(
    z
      .looseObject({
        path: z.string().describe("JSON Pointer into detail of the array cut, e.g. /data/object/line_items"),
        total: z.number().int().min(1).describe("Elements the array had"),
        kept: z.number().int().min(0).describe("Elements kept: its first ones, in order"),
      })
      .describe("One array cut to its first elements"),
  )
  .optional()
  .describe(
    "Set by the bridge, not the provider, on an event over EventBridge's 256 KB entry limit: the arrays it cut to fit. " +
      "The event is partial; re-read the object (docs/events.md)",
  );

const TransactionObject = z
  .looseObject({
    id: z.string().describe("Transaction UUID"),
    qashio_id: z.string().optional().describe("CT… reference"),
    parent_id: z.string().nullable().optional(),
    parent_qashio_id: z.string().nullable().optional().describe("Set on refunds and reversals"),
    transaction_category: z.string().nullable().optional(),
    transaction_amount: z.number().nullable().optional(),
    transaction_currency: z.string().nullable().optional(),
    billing_amount: z.number().nullable().optional(),
    billing_currency: z.string().nullable().optional(),
    updated_at: z.string().nullable().optional(),
    card_holder_name: Personal,
    card_holder_email: Personal,
    employee_id: Personal,
    approved_by: z
      .looseObject({ user_external_id: z.string().nullable().optional(), name: Personal, employee_id: Personal, email: Personal })
      .nullable()
      .optional()
      .describe("The approver"),
    _truncated: Truncated,
  })
  .describe("The provider transaction (spec §2.2) without client_sync_status, PII per tenant setting");

const CardObject = z
  .looseObject({
    id: z.string().describe("CA… card id"),
    status: z.string().describe("Active, Inactive, Suspended, Terminated, Draft, Cancelled (or a new provider value)"),
    card_nickname: z.string().nullable().optional(),
    cardholder: z
      .looseObject({ name: Personal, email: Personal, employee_id: Personal })
      .nullable()
      .optional(),
    _truncated: Truncated,
  })
  .describe("The provider ERP card (spec §2.3), PII per tenant setting");

function detail<T extends EventType, D extends z.ZodType>(
  type: T,
  subjectType: "transaction" | "card",
  data: D,
  description: string,
) {
  return z
    .looseObject({
      id: z.uuid().describe("Deterministic event id: a re-send of a change carries the id it was first sent with (exceptions: docs/events.md); deduplicate on it, keep state per subject.id"),
      type: z.literal(type),
      schema_version: SchemaVersion,
      tenant: z.string().min(1).describe("Tenant (company) the bridge runs for"),
      occurred_at: z.iso.datetime({ offset: true }).describe("When the change happened (provider updated_at) or was detected"),
      subject: z.looseObject({
        type: z.literal(subjectType),
        id: z.string().describe(subjectType === "transaction" ? "Transaction UUID" : "CA… card id"),
        qashio_id: z.string().optional().describe("CT… reference (transactions)"),
        sequence: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe(
            "Per subject, one more than the previous change the bridge recorded; a re-send keeps it. Orders a subject's " +
              "events of equal envelope time (since schema 1.1; starts over if the bridge's snapshots are lost or restored)",
          ),
      }),
      data,
    })
    .describe(description);
}

/** `transaction.created`: first time the bridge sees a transaction. */
export const TransactionCreatedDetail = detail(
  "transaction.created",
  "transaction",
  z.looseObject({ object: TransactionObject, parent: ParentSchema.optional() }),
  "A transaction the bridge had not seen before",
);

/** `transaction.changed`: a transaction differs from its last recorded snapshot. */
export const TransactionChangedDetail = detail(
  "transaction.changed",
  "transaction",
  z.looseObject({ object: TransactionObject, changes: Changes, parent: ParentSchema.optional() }),
  "A transaction changed since the bridge last published it",
);

/** `card.created`: first sighting of a card (only when the tenant enables it). */
export const CardCreatedDetail = detail(
  "card.created",
  "card",
  z.looseObject({ object: CardObject }),
  "A card the bridge had not seen before (opt-in per tenant)",
);

/** `card.updated`: limits, nickname or another non-status field changed. */
export const CardUpdatedDetail = detail(
  "card.updated",
  "card",
  z.looseObject({ object: CardObject, changes: Changes }),
  "A card's limits, nickname or other settings changed; its status did not",
);

/** `card.suspended`: the card's status moved to Suspended. */
export const CardSuspendedDetail = detail(
  "card.suspended",
  "card",
  z.looseObject({ object: CardObject, changes: Changes }),
  "A card's status moved to Suspended (changes include /status)",
);

/** `card.status_changed`: any other status move. */
export const CardStatusChangedDetail = detail(
  "card.status_changed",
  "card",
  z.looseObject({ object: CardObject, changes: Changes }),
  "A card's status moved to anything other than Suspended (changes include /status)",
);

/** Detail schema per event type. */
export const EVENT_DETAIL_SCHEMAS: { readonly [K in EventType]: z.ZodType } = {
  "transaction.created": TransactionCreatedDetail,
  "transaction.changed": TransactionChangedDetail,
  "card.created": CardCreatedDetail,
  "card.updated": CardUpdatedDetail,
  "card.suspended": CardSuspendedDetail,
  "card.status_changed": CardStatusChangedDetail,
};

/**
 * Validates an event detail against the schema of its `type`.
 *
 * @example
 * ```ts
 * const result = parseEventDetail(event.detail);
 * if (!result.success) console.error(result.error.issues);
 * ```
 */
export function parseEventDetail(detail: unknown): z.ZodSafeParseResult<unknown> {
  const type = (detail as { type?: unknown } | null)?.type;
  // Own members only: `type` comes from the event, and "constructor" or "toString" would find Object's.
  const schema = typeof type === "string" && Object.hasOwn(EVENT_DETAIL_SCHEMAS, type) ? EVENT_DETAIL_SCHEMAS[type as EventType] : undefined;
  if (!schema) return z.never().safeParse(detail);
  return schema.safeParse(detail);
}
