/**
 * The FileSnapshotStore's scan cursor, as a walk hands it out and takes it back: which store, which segment and which
 * entry of its header the last page ended at. Whether a cursor is one of this store's is the store's to check.
 */
import { SnapshotCursorError } from "../bridge/errors.js";

/**
 * A scan cursor: the store's id, then the segment's name without `seg-` and `.log` and the header position of the last
 * entry returned (`<id>.<sequence>-<tag>:<position>`).
 */
const CURSOR_PATTERN = /^([0-9a-f]{16})\.(\d{12}-[0-9a-f]{8}):(\d{1,9})$/;

/** A cursor's parts, before they are checked against the store. */
export interface ParsedCursor {
  readonly storeId: string;
  readonly seq: number;
  readonly name: string;
  readonly position: number;
}

/** @throws SnapshotCursorError when `cursor` is not of the form a scan hands out. */
export function parseCursor(cursor: string): ParsedCursor {
  const match = CURSOR_PATTERN.exec(cursor);
  if (!match) throw new SnapshotCursorError();
  const tag = match[2] as string;
  return { storeId: match[1] as string, seq: Number(tag.slice(0, 12)), name: `seg-${tag}.log`, position: Number(match[3]) };
}

/** The cursor of the entry at header `position` of segment `segmentName` (`seg-<tag>.log`) of store `storeId`. */
export function formatCursor(storeId: string, segmentName: string, position: number): string {
  return `${storeId}.${segmentName.slice(4, -4)}:${position}`;
}
