/**
 * Onboarding of an AWS tenant: `authorize --secret-id <arn>` writes the first refresh token into the tenant's
 * provider secret. The AWS token store (shared/aws) needs a complete secret to load; the secret CDK creates is
 * not complete yet, so this small writer reads whatever is there, keeps every field, and merges the token in. Its
 * Secrets Manager calls go through the store's `ProviderSecretClient`, so throttled calls are retried the same way.
 */
import { randomBytes } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
// The modules themselves, not shared/aws/index.ts: the CLI needs the secret client and the lease, not the handlers.
import { SECRET_TAGS, leaseNames } from "../aws/keys.js";
import { DynamoLeaseLock } from "../aws/lease-lock.js";
import { sdkClientConfig, type SdkTimeouts } from "../aws/runtime.js";
import type { Clock, Lock, LockHandle } from "../bridge/ports.js";
import { DEFAULT_LOCK_TTL_MS } from "../qashio/auth/token-provider.js";
import { isSecretNotFound, ProviderSecretClient, type ProviderSecretClientOptions } from "../aws/provider-secret.js";
import { PII_SALT_MIN_LENGTH, piiSaltProblem } from "../bridge/pii.js";
import { SecretStoreError } from "../aws/errors.js";
import type { StoredTokens, TokenStore } from "../qashio/auth/token-store.js";
import type { Env } from "./config.js";
import { CliError, ConfigError, EXIT, UsageError } from "./errors.js";

/**
 * Attempt bounds of the onboarding's Secrets Manager client: a person's connection (a VPN, a hotel) may be slower than
 * a Lambda's, and nobody waits on a schedule here, so they are looser than the pollers' SDK_TIMEOUTS. Not for the
 * lease's table client: a renewal every third of the lease's life must end, with its retries, before the lease does,
 * so that client keeps SDK_TIMEOUTS (3 x 4 s, against a 10 s renewal interval and a 30 s lease).
 */
export const INTERACTIVE_SDK_TIMEOUTS: SdkTimeouts = { connectionTimeoutMs: 10_000, requestTimeoutMs: 20_000, maxAttempts: 3 };

/** Fields of the provider secret (see shared/aws/provider-secret.ts); other fields are kept as they are. */
export interface OnboardingSecret {
  readonly client_id?: string;
  readonly client_secret?: string;
  readonly refresh_token?: string;
  readonly pii_salt?: string;
  readonly [key: string]: unknown;
}

/** The secret could not be read or written; names the operation, never a value. */
export class SecretOnboardingError extends CliError {
  override name = "SecretOnboardingError";
  readonly secretId: string;

  constructor(message: string, secretId: string, options?: ErrorOptions) {
    super(message, EXIT.failed, options);
    this.secretId = secretId;
  }
}

/** `arn:<partition>:secretsmanager:<region>:<account>:secret:<name>`; secret names cannot hold a colon. */
const SECRET_ARN = /^arn:[a-z-]+:secretsmanager:([a-z0-9-]+):(\d{12}):secret:[^:]+$/;

/**
 * The region `secretId` is reached in, before any AWS call. An ARN names its region and that is used, whatever
 * region a profile names; an `AWS_REGION` (environment or .env) that differs is refused, since it points at another
 * deployment than the ARN. A secret name has no region: `AWS_REGION`, else undefined (the SDK then looks for a
 * profile's region, see {@link onboardingSecretsClient}).
 *
 * @throws UsageError for an `arn:` id that is not a Secrets Manager secret ARN; ConfigError naming AWS_REGION and both
 *   regions when they differ.
 * @example
 * secretRegion("arn:aws:secretsmanager:eu-west-1:123456789012:secret:SecretA29EB826-AbCdEf", {}); // "eu-west-1"
 */
export function secretRegion(secretId: string, env: Env): string | undefined {
  const configured = env.AWS_REGION?.trim() || undefined;
  if (!secretId.startsWith("arn:")) return configured;
  const region = SECRET_ARN.exec(secretId)?.[1];
  if (region === undefined) {
    throw new UsageError(
      `--secret-id ${secretId} is not a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>): pass the stack output SecretArn`,
    );
  }
  if (configured !== undefined && configured !== region) {
    throw new ConfigError([
      {
        setting: "AWS_REGION",
        problem: `is ${configured}, but the secret ARN is in ${region}: unset AWS_REGION (the ARN's region is used) or set it to ${region}`,
      },
    ]);
  }
  return region;
}

/**
 * A Secrets Manager client for `secretId` in its region ({@link secretRegion}). For a secret name without
 * `AWS_REGION` the SDK's own lookup (a profile's region) must find one; checked here, before the browser opens.
 *
 * @throws as {@link secretRegion}; ConfigError naming AWS_REGION when a name leaves the region unknown.
 * @example
 * const secrets = await onboardingSecretsClient(arn, env);
 */
export async function onboardingSecretsClient(secretId: string, env: Env): Promise<SecretsManagerClient> {
  const region = secretRegion(secretId, env);
  const client = new SecretsManagerClient({ ...sdkClientConfig(INTERACTIVE_SDK_TIMEOUTS), ...(region === undefined ? {} : { region }) });
  if (region === undefined) {
    try {
      await client.config.region();
    } catch (error) {
      client.destroy();
      throw new ConfigError(
        [
          {
            setting: "AWS_REGION",
            problem: `is not set and no profile names a region, which --secret-id ${secretId} needs: it is a secret name, not an ARN (pass the stack output SecretArn, which names its region, or set AWS_REGION)`,
          },
        ],
        { cause: error },
      );
    }
  }
  return client;
}

/** Retry of throttled Secrets Manager calls (tests pin the clock). */
export type OnboardingRetry = Pick<ProviderSecretClientOptions, "clock" | "backoff">;

/**
 * Reads the current secret JSON. An absent value, a non-JSON placeholder or a non-object reads as `{}`
 * (the secret is created empty, with instructions, by the stack). A value that starts as a JSON object but does not
 * parse is refused (SecretOnboardingError, no value echoed): it may hold the `pii_salt` to keep.
 *
 * @example
 * const { client_id } = await readOnboardingSecret(secrets, arn);
 */
export async function readOnboardingSecret(
  secrets: SecretsManagerClient,
  secretId: string,
  retry: OnboardingRetry = {},
): Promise<OnboardingSecret> {
  const secret = new ProviderSecretClient({ secrets, secretId, ...retry });
  // Told apart from a secret that is not there (a name looked up in another region, a typo): that one is refused.
  return readLenient(secret, async () => void (await describedTags(secrets, secret)));
}

/** `noValue` runs when the secret has no value to read, before it is read as empty. */
async function readLenient(secret: ProviderSecretClient, noValue?: () => Promise<void>): Promise<OnboardingSecret> {
  let text: string | undefined;
  try {
    text = (await secret.getValue()).text;
  } catch (error) {
    // A secret without any version yet answers ResourceNotFoundException for its value, as one that does not exist.
    if (isSecretNotFound(error)) {
      await noValue?.();
      return {};
    }
    throw onboardingError("read", secret.secretId, error);
  }
  if (text === undefined || text.trim() === "") return {};
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // A placeholder text reads as empty; a JSON object broken by a hand edit does not: read as empty, its pii_salt
    // would be replaced by a new one (every hashed identifier changes) and its other fields dropped, unseen.
    if (!text.trimStart().startsWith("{")) return {};
    throw new SecretOnboardingError(
      `secret ${secret.secretId} holds a JSON object that does not parse (a hand edit?), which the pollers refuse too: ` +
        "fix the JSON, keeping pii_salt as it is (hashed identifiers depend on it), then run authorize again",
      secret.secretId,
    );
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return {};
  // The stack creates the secret with empty placeholders (`"client_id": ""`): an empty field is one not yet filled.
  return Object.fromEntries(Object.entries(json).filter(([, value]) => value !== "")) as OnboardingSecret;
}

/**
 * Refuses a secret whose `pii_salt` (set by hand) the pollers refuse (shorter than they accept, or holding a lone
 * surrogate: `piiSaltProblem`), before the browser opens: the token would be stored and every poll would then fail on
 * the secret. The salt is not echoed.
 *
 * @throws SecretOnboardingError naming `pii_salt` and what is wrong with it.
 * @example
 * assertUsableSalt(await readOnboardingSecret(secrets, arn), arn);
 */
export function assertUsableSalt(secret: OnboardingSecret, secretId: string): void {
  const salt = secret.pii_salt;
  if (salt === undefined) return;
  if (typeof salt === "string" && salt.length >= PII_SALT_MIN_LENGTH) {
    const problem = piiSaltProblem(salt);
    if (problem === undefined) return;
    throw new SecretOnboardingError(
      `secret ${secretId} has a pii_salt that the pollers refuse: it ${problem}; put another random one into the secret, ` +
        "or remove the field to have one generated (hashed identifiers change with the salt)",
      secretId,
    );
  }
  throw new SecretOnboardingError(
    `secret ${secretId} has a pii_salt that is not a string of at least ${PII_SALT_MIN_LENGTH} characters, which the ` +
      "pollers refuse: put a longer random one into the secret, or remove the field to have one generated " +
      "(hashed identifiers change with the salt)",
    secretId,
  );
}

/** Where the pollers' token lease lives, as the stack tagged the secret (see SECRET_TAGS). */
export interface TokenLeaseTarget {
  readonly tenant: string;
  readonly tableName: string;
}

/**
 * The token lease of the tenant whose secret `secretId` is, from the secret's tags; undefined for a secret without
 * them (its stack was deployed before the tags were added).
 *
 * @throws SecretOnboardingError naming DescribeSecret's error (for instance AccessDeniedException), never a value.
 * @example
 * const target = await readTokenLeaseTarget(secrets, arn); // { tenant: "acme", tableName: "QashioBridge-acme-Table..." }
 */
export async function readTokenLeaseTarget(
  secrets: SecretsManagerClient,
  secretId: string,
  retry: OnboardingRetry = {},
): Promise<TokenLeaseTarget | undefined> {
  const tags = await describedTags(secrets, new ProviderSecretClient({ secrets, secretId, ...retry }));
  const tenant = tags[SECRET_TAGS.tenant];
  const tableName = tags[SECRET_TAGS.leaseTable];
  return tenant && tableName ? { tenant, tableName } : undefined;
}

/**
 * AWS's time as the secret's client last saw it: the SDK keeps the offset of each response's Date header from the
 * local clock (second resolution; @aws-sdk/core's SigV4 signer samples it on every response, where older cores did so
 * only past minutes of skew: check this when upgrading the SDK). The token lease compares times the pollers wrote with
 * AWS-synchronised clocks, so a person's clock that is off must not decide whether a poller's lease has run out.
 *
 * @example
 * const clock = awsClock(systemClock, secrets); // after a first call on `secrets`
 */
export function awsClock(clock: Clock, secrets: SecretsManagerClient): Clock {
  return { now: () => clock.now() + (secrets.config.systemClockOffset ?? 0), sleep: (ms, signal) => clock.sleep(ms, signal) };
}

/** The pollers' token lease, as `authorize --secret-id` takes it. */
export interface OnboardingLease {
  readonly lock: Lock;
  readonly name: string;
  /** The tenant the secret is tagged with: shown before the sign-in, as the ARN's generated name does not say it. */
  readonly tenant: string;
}

/** Where {@link openTokenLease} gets its table client and time, and says what it cannot do. */
export interface OnboardingLeaseOptions {
  /** Client of the tenant's table. @default one in the secret's region, with its credentials */
  readonly dynamo?: DynamoDBDocumentClient;
  /** The time lease expiries are written and compared in: AWS's ({@link awsClock}). */
  readonly clock: Clock;
  readonly warn: (text: string) => void;
  readonly retry?: OnboardingRetry;
}

/**
 * The pollers' token lease for the tenant whose secret `secretId` is: the tenant and table from the tags the stack put
 * on the secret ({@link readTokenLeaseTarget}). Taken, renewed and given back once, so a missing permission or table
 * shows now, before a person signs in; a poller holding it is fine (the write waits). Undefined, with a warning, for a
 * secret without the tags.
 *
 * @throws SecretOnboardingError when the secret cannot be described or the lease cannot be taken or renewed (AWS's
 *   error named; never a value).
 * @example
 * const lease = await openTokenLease(secrets, arn, { clock: awsClock(systemClock, secrets), warn: console.error });
 */
export async function openTokenLease(secrets: SecretsManagerClient, secretId: string, options: OnboardingLeaseOptions): Promise<OnboardingLease | undefined> {
  const target = await readTokenLeaseTarget(secrets, secretId, options.retry);
  if (target === undefined) {
    options.warn(
      `secret ${secretId} lacks the tags ${SECRET_TAGS.tenant} and ${SECRET_TAGS.leaseTable} (its stack was deployed before ` +
        "them): the token is written without the pollers' refresh lease, so a refresh at that moment could overwrite it; " +
        "deploy the stack again to add them",
    );
    return undefined;
  }
  const doc =
    options.dynamo ??
    DynamoDBDocumentClient.from(
      new DynamoDBClient({ ...sdkClientConfig(), region: await secrets.config.region(), credentials: secrets.config.credentials }),
    );
  const lock = new DynamoLeaseLock({ doc, tableName: target.tableName, clock: options.clock });
  const lease = { lock, name: leaseNames.tokenRefresh(target.tenant), tenant: target.tenant };
  const failed = (what: string, error: unknown) => {
    const cause = error as Error;
    // DynamoDB's messages name the table, the action and the principal: no value of the secret.
    return new SecretOnboardingError(
      `cannot ${what} the token lease "${lease.name}" in table ${target.tableName} (tagged on secret ${secretId}): ${cause.name}: ${cause.message}`,
      secretId,
      { cause: error },
    );
  };
  let handle: LockHandle | undefined;
  try {
    handle = await lock.tryAcquire(lease.name, DEFAULT_LOCK_TTL_MS);
  } catch (error) {
    throw failed("take", error);
  }
  if (handle !== undefined) {
    try {
      // The write renews it while it runs: that permission is checked too.
      await handle.renew(DEFAULT_LOCK_TTL_MS);
    } catch (error) {
      throw failed("renew", error);
    } finally {
      await handle
        .release()
        .catch((error: unknown) => options.warn(`${failed("give back", error).message}; it runs out by itself within ${DEFAULT_LOCK_TTL_MS / 1000} s`));
    }
  }
  return lease;
}

/**
 * The secret's tags (DescribeSecret). A secret that is not there is said to be so, with the region it was looked for
 * in: the ARN of the stack output names the right one.
 */
async function describedTags(secrets: SecretsManagerClient, secret: ProviderSecretClient): Promise<Readonly<Record<string, string>>> {
  try {
    return await secret.tags();
  } catch (error) {
    if (!isSecretNotFound(error)) throw onboardingError("describe", secret.secretId, error);
    const region = await secrets.config.region().catch(() => "the region of these credentials");
    throw new SecretOnboardingError(
      `there is no secret ${secret.secretId} in ${region} for the AWS account of these credentials: pass the tenant stack's ` +
        "output SecretArn (it names the secret's region), with AWS credentials of the tenant's account",
      secret.secretId,
      { cause: error },
    );
  }
}

/** Names the AWS error (and the attempts, when throttling outlasted the retries), never a value. */
function onboardingError(action: "read" | "write" | "describe", secretId: string, error: unknown): SecretOnboardingError {
  const failure = error instanceof SecretStoreError ? error : undefined;
  const cause = (failure?.cause ?? error) as Error & { $metadata?: { httpStatusCode?: number } };
  // A write is named only: its message could quote the value sent. A read or describe sends nothing secret, and an
  // error raised before any request (no credentials, no region) carries the SDK's own explanation: the useful part.
  const local = action !== "write" && cause.$metadata?.httpStatusCode === undefined && cause.message;
  const reason = local ? `${cause.name}: ${cause.message}` : cause.name;
  const retried = failure !== undefined && failure.attempts > 1 ? ` (after ${failure.attempts} attempts)` : "";
  // DescribeSecret is a permission of its own, and the operator may wonder why a token write needs it.
  const why = action === "describe" ? " (its tags name the token lease the pollers refresh under)" : "";
  return new SecretOnboardingError(`cannot ${action} secret ${secretId}${why}: ${reason}${retried}${accessFix(cause.name, secretId)}`, secretId, {
    cause: error,
  });
}

/**
 * The fix of the two access errors a person onboarding meets most (no credentials in this shell, or credentials of
 * another account or role), naming the account of an ARN: neither error says what to do.
 */
function accessFix(errorName: string, secretId: string): string {
  const account = SECRET_ARN.exec(secretId)?.[2];
  const whose = `the tenant's account${account === undefined ? "" : ` ${account}`}`;
  if (errorName === "CredentialsProviderError") {
    return ` (give the command AWS credentials of ${whose}: a profile named by AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)`;
  }
  if (errorName === "AccessDeniedException") return ` (use AWS credentials of ${whose} allowed what README's "3. Onboard: authorize once" lists)`;
  return "";
}

/**
 * A write-only token store over the provider secret: `save` merges `refresh_token` and `client`, the client the
 * token was issued to (the pollers refresh with the secret's client), into the secret JSON, keeping `pii_salt` and
 * any other field, and fills a random `pii_salt` only when the secret lacks one. The access token is not stored: the
 * pollers refresh on their first run.
 *
 * @example
 * const store = secretTokenStore(new SecretsManagerClient({}), arn, { client_id, client_secret });
 * await store.save(tokens);
 */
export function secretTokenStore(
  secrets: SecretsManagerClient,
  secretId: string,
  client: { readonly client_id: string; readonly client_secret: string },
  retry: OnboardingRetry = {},
): TokenStore {
  const secret = new ProviderSecretClient({ secrets, secretId, ...retry });
  return {
    async load(): Promise<StoredTokens | undefined> {
      const current = await readLenient(secret);
      return current.refresh_token === undefined ? undefined : { refreshToken: current.refresh_token };
    },
    async save(tokens: StoredTokens): Promise<void> {
      const current = await readLenient(secret);
      const next: OnboardingSecret = {
        ...current,
        client_id: client.client_id,
        client_secret: client.client_secret,
        pii_salt: current.pii_salt ?? randomBytes(32).toString("base64url"),
        refresh_token: tokens.refreshToken,
      };
      try {
        await secret.put(next);
      } catch (error) {
        throw onboardingError("write", secretId, error);
      }
    },
  };
}
