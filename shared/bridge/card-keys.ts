/** Snapshot keys of the card cycle: one per card, all under one prefix with the walk cursors (see card-cursor.ts). */
import type { SnapshotKey } from "./ports.js";

/** Start of every snapshot key the card cycle reads or writes (cards and its walk cursors): what the AWS card poller's role is scoped to. */
export const CARD_KEY_PREFIX = "card:";

/** Snapshot key of a card. */
export function cardKey(id: string): SnapshotKey {
  return `${CARD_KEY_PREFIX}${id}`;
}
