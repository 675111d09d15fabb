/**
 * Errors of the sandbox. Route handlers throw them; the app turns them into the
 * provider's error envelope (§7) or, on the OAuth operations, an OAuth error body.
 */

/** One entry of the §7 `errors` array. */
export interface FieldError {
  readonly field: string | null;
  readonly code: string;
  readonly message: string;
}

/** Base class of every sandbox error. */
export class SandboxError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SandboxError";
  }
}

/** An API error answered with the §7 envelope. */
export class ApiError extends SandboxError {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: readonly FieldError[] = [],
    readonly headers: Readonly<Record<string, string>> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ApiError";
  }
}

/** `400`: one entry per offending field. */
export class ValidationError extends ApiError {
  constructor(errors: readonly FieldError[], message = "Validation failed", options?: ErrorOptions) {
    super(400, message, errors, {}, options);
    this.name = "ValidationError";
  }
}

/** The challenge of a `401` of the bearer-protected API (RFC 6750 §3). */
export const BEARER_CHALLENGE = 'Bearer realm="sandbox"';

/** `401`: token missing, malformed, expired or revoked; `challenge` is what the resource takes instead (RFC 7235 §4.1). */
export class UnauthorizedError extends ApiError {
  constructor(message = "Unauthorized", options?: ErrorOptions, challenge = BEARER_CHALLENGE) {
    super(401, message, [{ field: null, code: "UNAUTHORIZED", message }], { "www-authenticate": challenge }, options);
    this.name = "UnauthorizedError";
  }
}

/** `403`: valid token, action not permitted. */
export class ForbiddenError extends ApiError {
  constructor(message = "Forbidden", field: string | null = null, options?: ErrorOptions) {
    super(403, message, [{ field, code: "FORBIDDEN", message }], {}, options);
    this.name = "ForbiddenError";
  }
}

/** `404`: unknown resource, or a resource of another company (§7 rule 1). */
export class NotFoundError extends ApiError {
  constructor(message = "Resource not found", field: string | null = null, options?: ErrorOptions) {
    super(404, message, [{ field, code: "NOT_FOUND", message }], {}, options);
    this.name = "NotFoundError";
  }
}

/** An OAuth operation error, answered as `{ error, error_description }` with `headers`. */
export class OAuthError extends SandboxError {
  constructor(
    readonly status: 400 | 401 | 403,
    readonly error: string,
    readonly description: string,
    options?: ErrorOptions,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(description, options);
    this.name = "OAuthError";
  }
}

/** Bad command-line arguments of `npm run sandbox`. */
export class SandboxUsageError extends SandboxError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SandboxUsageError";
  }
}
