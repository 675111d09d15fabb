/**
 * The poll event: what an invocation of a poller asks for, read and checked before anything touches AWS or the
 * provider. The poller and tenant a schedule's input names, the card mode it passes, and the operator action (with its
 * cursor) invoked by hand; a field set to anything else fails the invocation with PollEventError naming the field,
 * never echoing its value, and so do a field that is none of these (a typo in a hand-made payload) and an event that
 * is no JSON object at all (a quoting slip), either of which would otherwise run a cycle.
 */
import type { CardCycleMode } from "../bridge/cards.js";
import type { CycleKind } from "./cycle.js";
import { nearest } from "../nearest.js";
import { PollEventError } from "./errors.js";

/**
 * The part of an event the pollers read: an optional card mode (EventBridge Scheduler input or rule detail), and an
 * optional action an operator invokes by hand (`redrive` or `conform-pii`, transaction poller only, the latter with
 * the `cursor` a pass stopped at its deadline reported; see docs/runbook.md).
 */
export interface PollEvent {
  /** The poller a schedule's input is for (the stack's PollSchedules set it, with `tenant` and `scheduledTime`). */
  readonly kind?: CycleKind;
  /** The tenant a schedule's input is for. */
  readonly tenant?: string;
  readonly mode?: CardCycleMode;
  readonly detail?: { readonly mode?: CardCycleMode } | null;
  readonly action?: PollAction;
  readonly cursor?: string;
}

/**
 * What an invocation does: a scheduled cycle, a re-drive of the quarantined transactions, or a pass re-masking
 * the stored snapshots to the current PII mode.
 */
export type PollAction = "cycle" | "redrive" | "conform-pii";

/** The fields a poll event is read for ({@link PollEvent}). */
const POLL_EVENT_FIELDS: readonly string[] = ["kind", "tenant", "mode", "detail", "action", "cursor"] satisfies readonly (keyof PollEvent)[];

/** What else a poller is sent and does not read: a schedule's time (PollSchedules), an EventBridge rule event's members. */
const UNREAD_FIELDS: readonly string[] = ["scheduledTime", "version", "id", "detail-type", "source", "account", "time", "region", "resources", "replay-name"];

/** A key quoted in an error: one shaped like a field name; another (`cursor:"…"`, a quoting slip) may hold a value. */
const FIELD_NAME = /^[A-Za-z_$][\w$-]{0,63}$/;

const KNOWN_FIELDS = `a poll event has ${POLL_EVENT_FIELDS.join(", ")} (and a schedule's scheduledTime)`;

/**
 * The event as an object, or undefined when there is none (no payload, or JSON `null`).
 * @throws PollEventError for a JSON string, number, boolean or array (`'"redrive"'`, `'["redrive"]'`): read as an
 *   object it has no field, so it would run a scheduled cycle and answer `completed` in place of what was asked; for a
 *   key that is none of the fields above (`Action`, `acton`, `cursr`), named with the field nearest to it; and for a
 *   `detail` that is no object (nor null).
 */
function eventObject(event: PollEvent | undefined): PollEvent | undefined {
  const value: unknown = event;
  if (value === undefined || value === null) return undefined;
  if (typeof value === "object" && !Array.isArray(value)) {
    for (const key of Object.keys(value)) {
      // An unknown key (`{"acton":"redrive"}`) would read as absent: a plain cycle answering `completed`.
      if (POLL_EVENT_FIELDS.includes(key) || UNREAD_FIELDS.includes(key)) continue;
      if (!FIELD_NAME.test(key)) throw new PollEventError(`Poll event has a field whose name is no field name; ${KNOWN_FIELDS}`, "(field)");
      // The poll event's own fields first: of equally near ones, nearest picks the first.
      const meant = nearest(key, [...POLL_EVENT_FIELDS, ...UNREAD_FIELDS]);
      throw new PollEventError(`Poll event field ${key} is no field; ${meant === undefined ? KNOWN_FIELDS : `did you mean ${meant}?`}`, key);
    }
    // A detail that is no object (`"suspended-only"`, a quoting slip) has no mode: a full walk would answer `completed`.
    const { detail } = value as { readonly detail?: unknown };
    if (detail !== undefined && detail !== null && (typeof detail !== "object" || Array.isArray(detail))) {
      throw new PollEventError('Poll event field detail must be a JSON object, such as {"mode":"suspended-only"}', "detail");
    }
    return value as PollEvent;
  }
  throw new PollEventError('Poll event must be a JSON object, such as {"action":"redrive"}', "(event)");
}

/** Actions of the transaction poller besides `cycle`. */
const OPERATOR_ACTIONS: readonly PollAction[] = ["redrive", "conform-pii"];

/**
 * The action an event asks `kind`'s poller for (`action`, else `cycle`).
 * @throws PollEventError when `action` is anything else, or an operator action on the card poller (the value is not
 *   echoed), or when the event is not a JSON object.
 * @example
 * pollActionOf({ action: "redrive" }, "transactions"); // "redrive"
 */
export function pollActionOf(event: PollEvent | undefined, kind: CycleKind): PollAction {
  const action: unknown = eventObject(event)?.action;
  if (action === undefined || action === "cycle") return "cycle";
  if (kind === "transactions" && OPERATOR_ACTIONS.includes(action as PollAction)) return action as PollAction;
  throw new PollEventError(
    kind === "transactions"
      ? 'Poll event field action must be "cycle", "redrive" or "conform-pii"'
      : 'Poll event field action must be "cycle" on the card poller',
    "action",
  );
}

/**
 * The cursor an event hands a `conform-pii` pass (from the result of one stopped at its deadline), if any.
 * @throws PollEventError when `cursor` is set with another action, or is not a non-empty string (not echoed).
 * @example
 * conformCursorOf({ action: "conform-pii", cursor: "eyJwayI6…" }, "conform-pii"); // "eyJwayI6…"
 */
export function conformCursorOf(event: PollEvent | undefined, action: PollAction): string | undefined {
  const cursor: unknown = eventObject(event)?.cursor;
  if (cursor === undefined) return undefined;
  if (action !== "conform-pii") throw new PollEventError('Poll event field cursor goes only with action "conform-pii"', "cursor");
  if (typeof cursor !== "string" || cursor === "") throw new PollEventError("Poll event field cursor must be the cursor a conform-pii result gave", "cursor");
  return cursor;
}

/** Every card mode: a record, so a mode added to CardCycleMode fails to compile until it is listed here. */
const CARD_CYCLE_MODES: Readonly<Record<CardCycleMode, true>> = { full: true, "suspended-only": true };

/**
 * The card mode an event asks for (`mode`, else `detail.mode`, else `full`).
 * @throws PollEventError naming the field when it is set to anything but a card mode (the value is not echoed).
 * @example
 * cardModeOf({ detail: { mode: "suspended-only" } }); // "suspended-only"
 */
export function cardModeOf(input: PollEvent | undefined): CardCycleMode {
  const event = eventObject(input);
  const [field, mode] = event?.mode !== undefined ? ["mode", event.mode] : ["detail.mode", event?.detail?.mode];
  if (mode === undefined) return "full";
  if (typeof mode === "string" && Object.hasOwn(CARD_CYCLE_MODES, mode)) return mode;
  const allowed = Object.keys(CARD_CYCLE_MODES).map((m) => `"${m}"`).join(" or ");
  throw new PollEventError(`Poll event field ${field} must be ${allowed}`, field);
}

/**
 * Refuses an event naming another poller or tenant than the one invoked: a schedule's input (`kind`, `tenant`) given to
 * the wrong function, by hand or by a schedule pointed at it, which would run this function's cycle and answer
 * `completed` while the one asked for never ran; likewise a card mode (`mode`, `detail.mode`) given to the transaction
 * poller. Fields left out are not checked (a hand-made `{}`, a rule event).
 * @throws PollEventError naming the field (neither tenant is echoed).
 * @example
 * checkPollTarget({ kind: "transactions", tenant: "falcon" }, "transactions", config.tenant);
 */
export function checkPollTarget(input: PollEvent | undefined, kind: CycleKind, tenant: string): void {
  const event = eventObject(input);
  if (event?.kind !== undefined && event.kind !== kind) {
    throw new PollEventError(`Poll event field kind must be "${kind}" on this poller (invoke the other poller's function for the other kind)`, "kind");
  }
  // A card mode given to the transaction poller (the wrong function invoked), in the input or a rule event's detail as
  // cardModeOf reads it, would run a transaction cycle instead.
  const modeField = event?.mode !== undefined ? "mode" : event?.detail?.mode !== undefined ? "detail.mode" : undefined;
  if (modeField !== undefined && kind !== "cards") {
    throw new PollEventError(`Poll event field ${modeField} goes only to the card poller (invoke the card poller's function for a card mode)`, modeField);
  }
  if (event?.tenant !== undefined && event.tenant !== tenant) {
    throw new PollEventError("Poll event field tenant must be this function's TENANT_ID (invoke the other tenant's function)", "tenant");
  }
}
