/**
 * Keeps a request's secrets (bearer tokens, token-endpoint credentials) out of what an answer puts on an error or a
 * log line: the provider's text redacted, its field names, codes and request ids dropped when they quote a secret.
 */
import { isJsonObject } from "../json-object.js";
import { isLogToken } from "../log-token.js";

/**
 * The forms a secret may take when a server quotes it back: as sent, URL-encoded (upper- or lowercase hex, `+` for a
 * space) and JSON-escaped.
 */
function secretForms(secret: string): string[] {
  const encoded = encodeURIComponent(secret);
  return [
    secret,
    encoded,
    encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    new URLSearchParams({ s: secret }).toString().slice(2),
    JSON.stringify(secret).slice(1, -1),
  ];
}

/**
 * Replaces every occurrence of each secret in `text`, in any form of {@link secretForms}, with `***`; longest first
 * so a secret inside another goes too.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = new Set(secrets.filter((s) => s.length > 0).flatMap(secretForms));
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) {
    out = out.split(form).join("***");
  }
  return out;
}

/**
 * The secrets one request carries: the bearer tokens sent (each attempt's: the one a 401 rejected stays a secret when
 * the replay's answer quotes it) and any token-endpoint credential in its body.
 */
export function secretsOf(request: { readonly body?: unknown }, tokens: readonly string[]): string[] {
  const secrets = [...tokens];
  if (isJsonObject(request.body)) {
    for (const key of ["client_secret", "refresh_token", "code", "access_token"]) {
      const value = request.body[key];
      if (typeof value === "string") secrets.push(value);
    }
  }
  return secrets;
}

/**
 * `value` when it is fit for a log line (`isLogToken`: an identifier, dotted or indexed, never free text) and neither
 * contains any secret the request sent nor shares a piece of 8+ characters with one, in any form of
 * {@link secretForms}; else `?`. A provider (or a gateway before it) that puts a token into `field` or `code` must not
 * get it onto the error.
 */
export function safeErrorToken(value: string, secrets: readonly string[]): string {
  return isLogToken(value) && !quotesSecret(value, secrets) ? value : "?";
}

/** Shortest run of a secret's characters taken for a piece of it: shorter runs (`page`, `card_id`) occur by chance. */
const SECRET_PIECE_LENGTH = 8;

/**
 * Whether `value` holds one of `secrets` in any of its {@link secretForms}, or a piece of one: a run of
 * {@link SECRET_PIECE_LENGTH}+ characters in common, alone or with other text around it.
 */
function quotesSecret(value: string, secrets: readonly string[]): boolean {
  const forms = secrets.filter((s) => s.length > 0).flatMap(secretForms);
  return forms.some((form) => value.includes(form) || sharesPiece(value, form));
}

/** Whether `value` and `form` have {@link SECRET_PIECE_LENGTH} consecutive characters in common. */
function sharesPiece(value: string, form: string): boolean {
  for (let start = 0; start + SECRET_PIECE_LENGTH <= value.length; start += 1) {
    if (form.includes(value.slice(start, start + SECRET_PIECE_LENGTH))) return true;
  }
  return false;
}

/** Longest request id kept on an error or a log line. */
const MAX_REQUEST_ID_LENGTH = 128;

/**
 * `requestId` when fit for an error and a log line: printable ASCII without spaces, at most
 * {@link MAX_REQUEST_ID_LENGTH} characters, and free of the request's secrets ({@link quotesSecret}, as for a field);
 * else undefined. The id comes from the answer (`meta.request_id` or `x-request-id`): a provider or a gateway that
 * echoes the request there must not get a token onto the error, the retry log line or the CLI's message.
 */
export function safeRequestId(requestId: string | undefined, secrets: readonly string[]): string | undefined {
  if (requestId === undefined) return undefined;
  // A header a proxy added a second id to reads `id1, id2`: the first id that passes.
  return requestId
    .split(",")
    .map((id) => id.trim())
    .find((id) => id.length <= MAX_REQUEST_ID_LENGTH && /^[\x21-\x7e]+$/.test(id) && !quotesSecret(id, secrets));
}
