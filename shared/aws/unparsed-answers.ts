/**
 * Keeps an AWS answer the SDK could not parse out of the error its call fails with. The SDK rethrows JSON.parse's
 * SyntaxError, whose message quotes the 10 characters on either side of the fault (V8:
 * `Unexpected token 'u', ..."3MzAwfQ.",uFKZDjIrkU"...`); the SDK's XML protocols (and its JSON ones, in versions that
 * collect the body as text first) also hang the whole body on it (`$responseBodyText`, `$response.body`): the
 * access-token item's tokens, the provider secret's JSON, a snapshot's personal data. The
 * Lambdas' SDK clients are set up here (handlers.ts), so no log line, error message or trace of theirs quotes one. The
 * CLI's onboarding clients read the secret through ProviderSecretClient, which keeps only a body-free copy of such an
 * error ({@link withoutAnswerBody}), and a lease item, which holds neither a secret nor personal data.
 */

/** The message of the error that replaces the SDK's: it names the failure and quotes nothing. */
export const UNPARSED_ANSWER_MESSAGE = "the answer's body is not valid JSON (the parser's message is left out: it quotes the body)";

/**
 * Whether the SDK failed on an answer's body itself (not JSON, or XML that does not parse): such an error quotes the
 * body in its message and keeps all of it (`$responseBodyText`).
 */
export function isUnparsedAnswer(error: unknown): boolean {
  return error instanceof SyntaxError || (typeof error === "object" && error !== null && "$responseBodyText" in error);
}

/** What the SDK's retry reads of a failed answer besides its `$metadata`: the status and headers (Retry-After, Date). */
interface AnswerHead {
  readonly statusCode?: unknown;
  readonly headers?: unknown;
}

/** The errors {@link withoutBody} made: they hold nothing of a body, and are kept as they are. */
const bodyFree = new WeakSet<object>();

/** A SyntaxError, as the SDK's own, with the call's `$metadata` and the answer's head, and nothing of its body. */
function withoutBody(error: { readonly $metadata?: unknown; readonly $response?: AnswerHead }): SyntaxError {
  const safe = new SyntaxError(UNPARSED_ANSWER_MESSAGE);
  if (error.$metadata !== undefined) Object.assign(safe, { $metadata: error.$metadata });
  const answer = error.$response;
  if (answer !== undefined) Object.defineProperty(safe, "$response", { value: { statusCode: answer.statusCode, headers: answer.headers }, enumerable: false });
  bodyFree.add(safe);
  return safe;
}

/**
 * `error` fit to keep (as a cause): the SDK's own error on an answer it could not parse is replaced by one naming the
 * failure only (`$metadata` and the answer's head kept); any other, a replacement already made included, is `error`
 * itself, so the call a client set up with nameFailedCalls names stays found (awsCallOf).
 *
 * @example
 * throw new SecretStoreError(message, secretId, operation, attempts, { cause: withoutAnswerBody(error) });
 */
export function withoutAnswerBody(error: unknown): unknown {
  return isUnparsedAnswer(error) && !bodyFree.has(error as object) ? withoutBody(error as Parameters<typeof withoutBody>[0]) : error;
}

/** The minimal middleware stack of an SDK v3 client (`client.middlewareStack`), typed loosely: clients differ in it. */
interface DeserializeStack {
  add(
    middleware: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
    options: { step: "deserialize"; priority: "high"; name: string; override: true },
  ): void;
}

/**
 * Makes `client`'s calls fail on an answer they could not parse with {@link UNPARSED_ANSWER_MESSAGE}. Placed around the
 * SDK's deserializer, so its retries (which read `$metadata` and the answer's head, kept) and X-Ray's subsegment (its
 * `build` step records the message) already see the replacement. Setting a client up twice changes nothing.
 *
 * @example
 * const dynamo = new DynamoDBClient(sdkClientConfig());
 * dropUnparsedAnswers(dynamo);
 */
export function dropUnparsedAnswers(client: { readonly middlewareStack: unknown }): void {
  (client.middlewareStack as DeserializeStack).add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        throw withoutAnswerBody(error);
      }
    },
    { step: "deserialize", priority: "high", name: "dropUnparsedAnswers", override: true },
  );
}
