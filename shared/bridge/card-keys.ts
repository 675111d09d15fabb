/** Snapshot keys and ids of the card cycle: a key per card, all under one prefix with the walk cursors (see card-cursor.ts). */
import type { SnapshotKey } from "./ports.js";

/** Start of every snapshot key the card cycle reads or writes (cards and its walk cursors): what the AWS card poller's role is scoped to. */
export const CARD_KEY_PREFIX = "card:";

/** Snapshot key of a card. */
export function cardKey(id: string): SnapshotKey {
  return `${CARD_KEY_PREFIX}${id}`;
}

/** The id a listed or read card names, when it names one (a string); an invalid card may name none. */
export function cardIdOf(raw: unknown): string | undefined {
  const id = (raw as Record<string, unknown> | null)?.["id"];
  return typeof id === "string" ? id : undefined;
}
