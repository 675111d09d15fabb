/** How the card cycle compares card statuses: case and surrounding blanks aside, as its events and fast path do. */
import type { EventType } from "./events/schemas.js";

/**
 * A status compared without case (the spec shows both `Active`, §2.3, and `active`, §4.4, §2.5) or blanks around it:
 * a `"Suspended "` is still a suspension, which fraud review subscribes to, not some other status move.
 */
function statusKey(status: unknown): unknown {
  return typeof status === "string" ? status.trim().toLowerCase() : status;
}

/** True when two statuses differ in more than letter case and surrounding blanks. */
export function isStatusMove(beforeStatus: unknown, afterStatus: unknown): boolean {
  return statusKey(beforeStatus) !== statusKey(afterStatus);
}

/** Event type of a card change: status moves win over other changes; a case or blank difference is no move. */
export function cardEventType(beforeStatus: unknown, afterStatus: unknown): EventType {
  if (!isStatusMove(beforeStatus, afterStatus)) return "card.updated";
  return statusKey(afterStatus) === "suspended" ? "card.suspended" : "card.status_changed";
}
