/**
 * Errors of the AWS runtime. One base class; subclasses set `name`, take `ErrorOptions` so `cause` survives, and
 * carry the context a caller needs (table, key, attempts, offending variable), never a secret or a token.
 */

/** Base of every error raised by shared/aws. */
export class AwsRuntimeError extends Error {
  override name = "AwsRuntimeError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The Lambda environment is missing or has invalid variables; `issues` names each one. */
export class LambdaConfigurationError extends AwsRuntimeError {
  override name = "LambdaConfigurationError";
  constructor(
    message: string,
    readonly issues: readonly { readonly variable: string; readonly problem: string }[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A poller's Lambda timeout is too short for its work (lowered by hand, which the environment does not show): for a
 * cycle or re-drive to refresh an expired access token (once the token expired, every cycle would end at its deadline
 * with nothing pulled and no error), or for a `conform-pii` pass to read anything at all (`action`). Thrown at the
 * start of an invocation, before any provider call or write. `timeoutMs` is the timeout as the invocation could tell
 * it (the timeout, or more); `cycleMinimumMs` the work's least time past the deadline's margin; `stackTimeoutMs` the
 * timeout the stack sets, when CYCLE_BUDGET_MS tells it; `pollerMinimumMs` (option) the least to set back without it.
 */
export class FunctionTimeoutTooShortError extends AwsRuntimeError {
  override name = "FunctionTimeoutTooShortError";
  /** The work refused: a cycle (or re-drive), or a `conform-pii` pass. */
  readonly action: "cycle" | "conform-pii";
  constructor(
    readonly timeoutMs: number,
    readonly minimumMs: number,
    readonly cycleMinimumMs: number,
    readonly stackTimeoutMs?: number,
    options: ErrorOptions & { readonly action?: "cycle" | "conform-pii"; readonly pollerMinimumMs?: number } = {},
  ) {
    const seconds = (ms: number) => `${ms / 1000} s`;
    const margin = seconds(minimumMs - cycleMinimumMs);
    const { action = "cycle", pollerMinimumMs = minimumMs, ...errorOptions } = options;
    // The function is a poller whatever it was asked: set back to a conform-pii pass's minimum, its cycles are refused.
    const leastMs = Math.max(minimumMs, pollerMinimumMs);
    const least = `at least ${seconds(leastMs)}${leastMs > minimumMs ? " (its cycles' minimum)" : ""}`;
    const need =
      action === "conform-pii"
        ? `where a conform-pii pass needs at least ${seconds(minimumMs)}, the ${margin} kept back after the pass's deadline plus ` +
          `${seconds(cycleMinimumMs)} to reach its first page. With less, a pass may end at its deadline before that page (with ` +
          `${margin} or less, every pass does): it reads no snapshot and gives no cursor to go on from.`
        : `where a poller needs at least ${seconds(minimumMs)}, a cycle of ${seconds(cycleMinimumMs)} (MIN_CYCLE_BUDGET_MS, so that it ` +
          `can refresh an expired access token) plus the ${margin} kept back after the cycle's deadline. With less, once the ` +
          "access token expires every cycle ends at its deadline with nothing pulled.";
    super(
      `The function's timeout is too short: ${seconds(timeoutMs)} or less, ${need} Set the function's timeout back to ` +
        (stackTimeoutMs === undefined ? least : `the stack's value: the stack sets ${seconds(stackTimeoutMs)} (CYCLE_BUDGET_MS + ${margin})`) +
        "; a redeploy does not restore a timeout changed by hand. Nothing was sent or written (docs/runbook.md, Function errors)",
      errorOptions,
    );
    this.action = action;
  }
}

/** A DynamoDB batch kept returning unprocessed keys or items after every retry. */
export class DynamoBatchIncompleteError extends AwsRuntimeError {
  override name = "DynamoBatchIncompleteError";
  constructor(
    message: string,
    readonly tableName: string,
    readonly operation: "BatchGetItem" | "BatchWriteItem",
    readonly remaining: number,
    readonly attempts: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The provider client (client_id, client_secret) in the secret is not the one this container's runtime refreshes with:
 * the tenant was moved to another client since the runtime was built. Thrown before a refresh token is presented: one
 * presented with the old client would be refused (`invalid_grant`) and the new, valid family taken for revoked. The
 * next invocation rebuilds the runtime with the new client.
 */
export class ProviderClientChangedError extends AwsRuntimeError {
  override name = "ProviderClientChangedError";
  constructor(readonly secretId: string, options?: ErrorOptions) {
    super(`The provider client in secret ${secretId} changed since this container started; the next invocation uses the new one`, options);
  }
}

/**
 * The provider's token endpoint refused the client credentials of the provider secret (OAuth `invalid_client`): its
 * `client_id` or `client_secret` is wrong. The grant was not judged, so no refresh token was spent and the token family
 * is intact; unlike a provider outage, every invocation fails the same way until the secret holds the right ones.
 */
export class ProviderClientRejectedError extends AwsRuntimeError {
  override name = "ProviderClientRejectedError";
  constructor(readonly secretId: string, options?: ErrorOptions) {
    super(
      `The provider refused the client credentials in secret ${secretId} (invalid_client): its client_id or client_secret ` +
        "is wrong. Put the right ones into the secret, keeping refresh_token and pii_salt (docs/runbook.md, Function errors); " +
        "no token was spent or revoked, and every invocation fails this way until then",
      options,
    );
  }
}

/**
 * What to do about a token family marked revoked (`SecretsManagerTokenStore.revokedFamily`), `subject` naming whose
 * (`for tenant "acme"`): re-authorize; or, when the refusal may have been of the client credentials (a 401 naming no
 * OAuth code, see `RevokedFamily.clientMayBeRefused`), check the secret's first, since re-authorizing with wrong ones
 * fails too and putting them right (a new secret version) clears the mark. Names the secret, never a value.
 *
 * @example
 * throw new ReauthorizationRequiredError(revokedFamilyMessage(revoked, `for tenant "acme"`, secretId));
 */
export function revokedFamilyMessage(family: { readonly clientMayBeRefused: boolean }, subject: string, secretId: string): string {
  const reauthorize = `re-authorize the integration (npm run bridge -- authorize --secret-id ${secretId})`;
  if (!family.clientMayBeRefused) return `The provider revoked the bridge's token family ${subject}: ${reauthorize}`;
  return (
    `The provider refused the bridge's refresh token or its client credentials ${subject} (a 401 without an OAuth error ` +
    `code, spec §4.2's answer to both): check the secret's client_id and client_secret first (changed by hand, or the ` +
    "client secret rotated at the provider); putting the right ones in, refresh_token and pii_salt kept, writes a new " +
    `secret version, which clears this mark (docs/runbook.md, TokenFamilyRevoked); else ${reauthorize}`
  );
}

/**
 * The secret's `pii_salt` is not the salt the pseudonyms in the tenant's table were made with (the table records its
 * fingerprint): a jq slip, or a secret restored from another tenant. Hashing with it would publish every hashed item
 * pulled again as a change of its pseudonyms and store it under that salt, so the invocation stops before any provider
 * call or write. Names the secret, the field and the table's item; never a salt or a fingerprint.
 */
export class PiiSaltChangedError extends AwsRuntimeError {
  override name = "PiiSaltChangedError";
  /** The secret's field at fault. */
  readonly field = "pii_salt";
  constructor(
    readonly secretId: string,
    readonly tableName: string,
    readonly key: { readonly pk: string; readonly sk: string },
    options?: ErrorOptions,
  ) {
    super(
      `The pii_salt in secret ${secretId} is not the salt the pseudonyms in table ${tableName} were made with (the item ` +
        `pk=${key.pk} sk=${key.sk} records its fingerprint, never the salt): put the tenant's salt back into the secret, ` +
        "keeping the other fields; nothing was sent or written. To switch salts on purpose, put the new salt in, then " +
        "delete that item (docs/runbook.md, Switching the PII mode)",
      options,
    );
  }
}

/**
 * A token refresh was not started: the provider secret already has `recentVersions` versions created in the last 24
 * hours, and Secrets Manager refuses new versions past about 100 of those. The refresh token is not spent, so no
 * family is lost for want of a place to store its successor; the refresh goes ahead once older versions age out.
 */
export class SecretVersionQuotaError extends AwsRuntimeError {
  override name = "SecretVersionQuotaError";
  constructor(
    readonly secretId: string,
    readonly recentVersions: number,
    readonly limit: number,
    /** A refresh ahead of the access token's expiry, refused at the lower limit (the token in hand is used meanwhile). */
    readonly early = false,
    options?: ErrorOptions,
  ) {
    super(
      `Token refresh postponed: the provider secret has ${recentVersions} versions created in the last 24 hours ` +
        `(the bridge refreshes ${early ? "ahead of the access token's expiry " : ""}only below ${limit}, Secrets Manager keeps ` +
        `at most about 100 such versions); the refresh token is kept unspent and the refresh goes ahead ` +
        `${early ? "once the access token expires" : "once older versions are a day old"} (docs/runbook.md)`,
      options,
    );
  }
}

/** A stored item does not have the shape this code writes (corrupted or written by another version). */
export class CorruptItemError extends AwsRuntimeError {
  override name = "CorruptItemError";
  constructor(
    message: string,
    readonly tableName: string,
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * `error` fit to be the cause of a CorruptItemError: a JSON.parse SyntaxError quotes the text it failed on (V8:
 * `Unexpected token 'J', ..."holder": Jane H"...`), a stored object's or raw body's personal data, so it is replaced
 * by one that names the failure only. Other decode failures (gzip, a missing attribute) quote nothing and are kept.
 *
 * @example
 * throw new CorruptItemError(`Snapshot item ${pk} cannot be decoded`, table, pk, { cause: decodeCause(error) });
 */
export function decodeCause(error: unknown): unknown {
  return error instanceof SyntaxError ? new SyntaxError("the stored text is not valid JSON (the parser's message is left out: it quotes the text)") : error;
}

/** PutEvents failed as a whole (not per entry) after every retry: nothing of that call is known to be published. */
export class PublishError extends AwsRuntimeError {
  override name = "PublishError";
  constructor(
    message: string,
    readonly attempts: number,
    readonly requestId?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The provider secret is missing, unreadable, or not the JSON this bridge expects. */
export class SecretFormatError extends AwsRuntimeError {
  override name = "SecretFormatError";
  constructor(
    message: string,
    readonly secretId: string,
    /** Names of the missing or invalid fields, never their values. */
    readonly fields: readonly string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A Secrets Manager call kept failing (throttled or unavailable) after every retry. */
export class SecretStoreError extends AwsRuntimeError {
  override name = "SecretStoreError";
  constructor(
    message: string,
    readonly secretId: string,
    readonly operation: string,
    readonly attempts: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A rotation step was called in a state it cannot handle (e.g. a token that is not a pending version). */
export class RotationError extends AwsRuntimeError {
  override name = "RotationError";
  constructor(
    message: string,
    readonly secretId: string,
    readonly step: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A poll invocation's event is malformed; `field` names the offending member (its value is never echoed). */
export class PollEventError extends AwsRuntimeError {
  override name = "PollEventError";
  constructor(
    message: string,
    readonly field: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * True for DynamoDB's answer to a write whose condition did not hold (`ConditionalCheckFailedException`).
 * @example
 * if (isConditionFailure(error)) return false; // the item was already there
 */
export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}
