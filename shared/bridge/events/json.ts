/**
 * JSON text of an event's `detail`, built around the text of `data.object` that the engine made when it hashed the
 * object ({@link jsonOf}): a publisher then serialises each provider object once per event, not again in full.
 */
import { jsonOf, jsonString as quote } from "../hash.js";
import type { BridgeEventDetail } from "../ports.js";

/**
 * `detail` as JSON, in three pieces: the text before the object, the object's text, and the text after it (so a
 * writer can encode them into one buffer without joining them first). Same members and order as
 * `JSON.stringify(detail)` for a detail the engine built, `data`'s members object first; the object's own text is the
 * one it was hashed as (a transaction in the provider's key order, a card with its keys sorted).
 *
 * @example
 * ```ts
 * const [before, object, after] = detailJsonParts(event.detail);
 * ```
 */
export function detailJsonParts(detail: BridgeEventDetail): [before: string, object: string, after: string] {
  const { data } = detail;
  const before =
    `{"id":${quote(detail.id)},"type":${quote(detail.type)},"schema_version":${quote(detail.schema_version)},` +
    `"tenant":${quote(detail.tenant)},"occurred_at":${quote(detail.occurred_at)},"subject":${JSON.stringify(detail.subject)},` +
    `"data":{"object":`;
  let after = "";
  if (data.changes !== undefined) after += `,"changes":${JSON.stringify(data.changes)}`;
  if (data.parent !== undefined) after += `,"parent":${JSON.stringify(data.parent)}`;
  return [before, jsonOf(data.object), `${after}}}`];
}

/**
 * `detail` as JSON (see {@link detailJsonParts}): what an EventBridge entry's `Detail` holds.
 *
 * @example
 * ```ts
 * const entry = { Source: event.source, DetailType: event.detailType, Detail: detailJson(event.detail) };
 * ```
 */
export function detailJson(detail: BridgeEventDetail): string {
  const [before, object, after] = detailJsonParts(detail);
  return before + object + after;
}
