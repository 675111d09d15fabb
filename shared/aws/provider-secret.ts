/**
 * The tenant's provider secret in Secrets Manager: its JSON shape, and the one reader and writer of its versions. The
 * token store and onboarding (`authorize --secret-id`) both go through it, so both retry throttled calls and neither
 * puts a secret value into an error.
 */
import { createHash, randomUUID } from "node:crypto";
import {
  DescribeSecretCommand,
  GetSecretValueCommand,
  ListSecretVersionIdsCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  type SecretVersionsListEntry,
} from "@aws-sdk/client-secrets-manager";
import * as z from "zod";
import type { Clock, Logger } from "../bridge/ports.js";
import { piiSaltProblem } from "../bridge/pii.js";
import { isJsonObject } from "../json-object.js";
import { systemClock } from "./clock.js";
import { SecretFormatError, SecretStoreError } from "./errors.js";
import { errorLabel } from "../error-label.js";
import { DEFAULT_BACKOFF, isAwsTimeout, isRetryableAwsError, withRetries, type BackoffOptions } from "./retry.js";
import { withoutAnswerBody } from "./unparsed-answers.js";

/**
 * Whole PutSecretValue calls made while the SDK's attempts end in timeouts (reads get one). A write after a token
 * refresh should land, and it is safe to repeat: one ClientRequestToken makes one version. The refresh lease is kept
 * alive meanwhile (whileHolding). 3 rounds of the SDK's 3 attempts of 4 s take ~40 s, more than a Lambda invocation
 * leaves a save: the token store paces them by the invocation's end ({@link CallPacer}), holding the new refresh
 * token in the table first, so within an invocation fewer rounds may be made.
 */
export const PUT_TIMEOUT_ROUNDS = 3;

/**
 * Paces a caller's Secrets Manager calls by time: consulted before each whole call (one SDK send, with the SDK's own
 * attempts), the first and every retry.
 */
export interface CallPacer {
  /**
   * Awaited before a call; `previous` is the failure of the call before it (undefined before the first). False starts
   * no more calls: the call fails with `previous`, or, before the first, with a SecretStoreError naming no time left.
   */
  beforeCall(previous: unknown): Promise<boolean>;
}

/** A call its pacer did not start: carries the failure of the call before it, which the caller then sees. */
class CallNotStarted extends Error {
  override name = "NoTimeLeft";
  constructor(readonly previous: unknown) {
    super("not started: too little of the invocation left");
  }
}

/** The provider secret's JSON: client credentials, the current refresh token, and the tenant's PII salt. */
export const ProviderSecretSchema = z.looseObject({
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  refresh_token: z.string().min(1),
  pii_salt: z.string().refine((salt) => piiSaltProblem(salt) === undefined),
});
export type ProviderSecret = z.infer<typeof ProviderSecretSchema>;

/**
 * Fingerprint of some of a secret's members (a sha-256 of their values in the order named), to notice that they
 * changed without keeping the values themselves in memory.
 *
 * @example
 * ```ts
 * secretFingerprint(secret, ["client_id", "client_secret"]) !== bound; // the tenant moved to another client
 * ```
 */
export function secretFingerprint<Member extends keyof ProviderSecret>(secret: Pick<ProviderSecret, Member>, members: readonly Member[]): string {
  return createHash("sha256")
    .update(JSON.stringify(members.map((member) => secret[member])))
    .digest("hex");
}

/** The secret value as read: parsed JSON plus the version it came from. */
export interface SecretRead {
  readonly secret: ProviderSecret;
  readonly versionId: string;
}

/** One version's value as Secrets Manager returns it: the text may be absent, empty or not JSON. */
export interface SecretValue {
  readonly text: string | undefined;
  readonly versionId: string | undefined;
}

/** How a rotation writes its version: Secrets Manager's request token, and the labels the version gets. */
export interface VersionWrite {
  readonly clientRequestToken: string;
  readonly stages: readonly string[];
}

export interface ProviderSecretClientOptions {
  readonly secrets: SecretsManagerClient;
  /** ARN (or name) of the provider secret. */
  readonly secretId: string;
  /** Sleeps between retries. @default systemClock */
  readonly clock?: Clock;
  /** Retry of throttled Secrets Manager calls. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** Receives one warning per retried call. */
  readonly logger?: Logger;
}

/**
 * Reads and writes versions of one provider secret. Throttled and transient failures are retried with backoff; a
 * call that still fails throws `SecretStoreError` (operation, attempts, the AWS error as `cause`, body-free when the SDK
 * could not parse the answer), never a value.
 *
 * @example
 * const secret = new ProviderSecretClient({ secrets: new SecretsManagerClient({}), secretId: arn });
 * const { secret: current } = await secret.read();
 * await secret.put({ ...current, refresh_token: "rt-2" });
 */
export class ProviderSecretClient {
  readonly secretId: string;
  readonly #options: ProviderSecretClientOptions;
  readonly #clock: Clock;
  readonly #backoff: BackoffOptions;

  constructor(options: ProviderSecretClientOptions) {
    this.secretId = options.secretId;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
  }

  /**
   * The raw value of AWSCURRENT, or of the version `versionId`.
   *
   * @example
   * const { text } = await secret.getValue();
   */
  async getValue(versionId?: string, pacer?: CallPacer): Promise<SecretValue> {
    const response = await this.#call(
      "GetSecretValue",
      1,
      () => this.#options.secrets.send(new GetSecretValueCommand({ SecretId: this.secretId, ...(versionId !== undefined ? { VersionId: versionId } : {}) })),
      pacer,
    );
    return { text: response.SecretString, versionId: response.VersionId };
  }

  /**
   * The complete secret of AWSCURRENT, or of the version `versionId`; `SecretFormatError` names the bad fields.
   * `pacer`: see {@link CallPacer}.
   *
   * @example
   * const { secret, versionId } = await secret.read();
   */
  async read(versionId?: string, pacer?: CallPacer): Promise<SecretRead> {
    const value = await this.getValue(versionId, pacer);
    return parseSecret(this.secretId, value.text, value.versionId);
  }

  /**
   * The secret's tags, by key (DescribeSecret; no value is read).
   *
   * @example
   * const tenant = (await secret.tags())["qashio-bridge:tenant"];
   */
  async tags(): Promise<Readonly<Record<string, string>>> {
    const response = await this.#call("DescribeSecret", 1, () => this.#options.secrets.send(new DescribeSecretCommand({ SecretId: this.secretId })));
    const tags: Record<string, string> = {};
    for (const { Key, Value } of response.Tags ?? []) if (Key !== undefined && Value !== undefined) tags[Key] = Value;
    return tags;
  }

  /**
   * How many versions of the secret were created at `sinceMs` (epoch ms) or later, deprecated ones included
   * (ListSecretVersionIds, every page; no value is read).
   *
   * @example
   * const lastDay = await secret.versionsCreatedSince(Date.now() - 86_400_000);
   */
  async versionsCreatedSince(sinceMs: number): Promise<number> {
    let count = 0;
    for await (const version of this.#versions()) if ((version.CreatedDate?.getTime() ?? 0) >= sinceMs) count += 1;
    return count;
  }

  /**
   * Whether `versionId` is a version of the secret, labelled or not (ListSecretVersionIds, deprecated ones included,
   * up to the page holding it; no value is read).
   *
   * @example
   * if (await secret.hasVersion(token)) return; // a rotation's version whose labels have moved on
   */
  async hasVersion(versionId: string): Promise<boolean> {
    for await (const version of this.#versions()) if (version.VersionId === versionId) return true;
    return false;
  }

  /** Every version of the secret, deprecated ones included, page by page. */
  async *#versions(): AsyncGenerator<SecretVersionsListEntry> {
    let nextToken: string | undefined;
    do {
      const token = nextToken;
      const response = await this.#call("ListSecretVersionIds", 1, () =>
        this.#options.secrets.send(
          new ListSecretVersionIdsCommand({ SecretId: this.secretId, IncludeDeprecated: true, MaxResults: 100, ...(token !== undefined ? { NextToken: token } : {}) }),
        ),
      );
      yield* response.Versions ?? [];
      nextToken = response.NextToken;
    } while (nextToken !== undefined);
  }

  /**
   * Writes `value` as a new version, AWSCURRENT unless `write` names the request token and labels; returns its id.
   * `pacer`: see {@link CallPacer}.
   *
   * @example
   * const versionId = await secret.put({ ...current, refresh_token: "rt-2" });
   */
  async put(value: Readonly<Record<string, unknown>>, write?: VersionWrite, pacer?: CallPacer): Promise<string> {
    // One request token across retries: a retried call after a lost response cannot create a second version.
    const clientRequestToken = write?.clientRequestToken ?? randomUUID();
    const response = await this.#call(
      "PutSecretValue",
      PUT_TIMEOUT_ROUNDS,
      () =>
        this.#options.secrets.send(
          new PutSecretValueCommand({
            SecretId: this.secretId,
            SecretString: JSON.stringify(value),
            ClientRequestToken: clientRequestToken,
            ...(write !== undefined ? { VersionStages: [...write.stages] } : {}),
          }),
        ),
      pacer,
    );
    return response.VersionId ?? clientRequestToken;
  }

  /** `timeoutRounds`: whole calls made while the SDK's attempts end in timeouts (see PUT_TIMEOUT_ROUNDS). */
  async #call<T>(operation: string, timeoutRounds: number, send: () => Promise<T>, pacer?: CallPacer): Promise<T> {
    let attempts = 0;
    let previous: unknown;
    try {
      return await withRetries(
        async (attempt) => {
          if (pacer !== undefined && !(await pacer.beforeCall(previous))) throw new CallNotStarted(previous);
          // Said here, once the pacer let the retry start, not in withRetries' onRetry: a retry it refuses is never made.
          if (attempt > 1) {
            this.#options.logger?.warn("Secrets Manager call failed, retrying", { operation, attempt: attempt - 1, error: errorLabel(previous) });
          }
          attempts = attempt;
          try {
            return await send();
          } catch (error) {
            previous = error;
            throw error;
          }
        },
        {
          clock: this.#clock,
          backoff: this.#backoff,
          retryable: (error, attempt) => isRetryableAwsError(error, attempt) || (isAwsTimeout(error) && attempt < timeoutRounds),
        },
      );
    } catch (caught) {
      // A call the pacer did not start fails as the call before it did (not retryable: CallNotStarted is no AWS error).
      const error = caught instanceof CallNotStarted && caught.previous !== undefined ? caught.previous : caught;
      const retryable = isRetryableAwsError(error);
      throw new SecretStoreError(
        `${operation} on the provider secret failed${retryable ? ` after ${attempts} attempts` : ""}: ${errorLabel(error)}`,
        this.secretId,
        operation,
        attempts,
        // Never an answer the SDK could not parse: from a client dropUnparsedAnswers did not set up, its error quotes the body
        // (the secret's JSON) and keeps all of it ($responseBodyText). A body-free copy keeps the request id and, from a
        // Lambda's client, the very error, whose call the log line names (awsCallOf).
        { cause: withoutAnswerBody(error) },
      );
    }
  }
}

/**
 * True when the secret, or the version asked for, has no value (Secrets Manager answers ResourceNotFoundException).
 *
 * @example
 * const read = await secret.read(id).catch((error: unknown) => (isSecretNotFound(error) ? undefined : Promise.reject(error)));
 */
export function isSecretNotFound(error: unknown): boolean {
  return error instanceof SecretStoreError && (error.cause as Error | undefined)?.name === "ResourceNotFoundException";
}

/**
 * Parses the secret JSON; errors name the bad fields, never their values.
 *
 * @example
 * const { secret } = parseSecret(arn, response.SecretString, response.VersionId);
 */
export function parseSecret(secretId: string, secretString: string | undefined, versionId: string | undefined): SecretRead {
  if (secretString === undefined || versionId === undefined) {
    throw new SecretFormatError("The provider secret has no string value", secretId, []);
  }
  let json: unknown;
  try {
    json = JSON.parse(secretString);
  } catch (error) {
    throw new SecretFormatError("The provider secret is not JSON", secretId, [], { cause: new Error((error as Error).name) });
  }
  const parsed = ProviderSecretSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join(".") || "(root)"))];
    const salt = isJsonObject(json) && typeof json.pii_salt === "string" ? piiSaltProblem(json.pii_salt) : undefined;
    const hint = salt === undefined ? "" : ` (pii_salt ${salt})`;
    throw new SecretFormatError(`The provider secret is missing or has invalid fields: ${fields.join(", ")}${hint}`, secretId, fields);
  }
  return { secret: parsed.data, versionId };
}
