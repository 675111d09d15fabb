/** `Retry-After` (RFC 9110 §10.2.3) as the wait it asks for: delta seconds, or an HTTP date on the provider's clock. */

/**
 * The HTTP-date forms of RFC 9110 §5.6.7 all open with a day name and carry a time of day. Checked before Date.parse,
 * which reads far more (`-1`, `Sun 12`: a day of 2001, so a retry at once).
 */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? .*\b\d{2}:\d{2}:\d{2}\b/;

/** Epoch ms of an HTTP date (RFC 9110 §5.6.7, see {@link HTTP_DATE}); undefined for any other value. */
function httpDateMs(value: string | null): number | undefined {
  const trimmed = value?.trim();
  if (trimmed === undefined || !HTTP_DATE.test(trimmed)) return undefined;
  // The asctime form names no zone: it is GMT, which Date.parse would take for local time. A zone named (`GMT`, `UTC`,
  // `+0100`) is kept: a second one appended would override it.
  const zoned = /(?:[A-Za-z]+|[+-]\d{2}:?\d{2})$/.test(trimmed);
  const at = Date.parse(zoned ? trimmed : `${trimmed} GMT`);
  return Number.isNaN(at) ? undefined : at;
}

/**
 * Parses `Retry-After` (delta seconds or HTTP date) into milliseconds from `now`; undefined for any other value. A
 * date is on the provider's clock: with `served`, the answer's `Date` header, it is counted from that (RFC 9110
 * §6.6.1: an origin server with a clock sends one), so a skew between the two clocks neither stretches the wait past
 * the allowed one nor cuts it to nothing; without a readable one, from `now`.
 */
export function parseRetryAfter(value: string | null, now: number, served?: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = httpDateMs(trimmed);
  if (at === undefined) return undefined;
  return Math.max(0, at - (httpDateMs(served ?? null) ?? now));
}
