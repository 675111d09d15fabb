/**
 * Onboarding of an AWS tenant: `authorize --secret-id <arn>` writes the first refresh token into the tenant's
 * provider secret. The AWS token store (shared/aws) needs a complete secret to load; the secret CDK creates is
 * not complete yet, so this small writer reads whatever is there, keeps every field, and merges the token in.
 */
import { randomBytes } from "node:crypto";
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from "@aws-sdk/client-secrets-manager";
import type { StoredTokens, TokenStore } from "../qashio/auth/token-store.js";
import { CliError, EXIT } from "./errors.js";

/** Fields of the provider secret (see shared/aws/token-store.ts); other fields are kept as they are. */
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

/**
 * Reads the current secret JSON. An absent value, a non-JSON placeholder or a non-object reads as `{}`
 * (the secret is created empty, with instructions, by the stack).
 *
 * @example
 * const { client_id } = await readOnboardingSecret(secrets, arn);
 */
export async function readOnboardingSecret(secrets: SecretsManagerClient, secretId: string): Promise<OnboardingSecret> {
  let text: string | undefined;
  try {
    text = (await secrets.send(new GetSecretValueCommand({ SecretId: secretId }))).SecretString;
  } catch (error) {
    // A secret without any version yet answers ResourceNotFoundException for its value.
    if (error instanceof ResourceNotFoundException || (error as Error).name === "ResourceNotFoundException") return {};
    throw new SecretOnboardingError(`cannot read secret ${secretId}: ${(error as Error).name}`, secretId, { cause: error });
  }
  if (text === undefined || text.trim() === "") return {};
  try {
    const json: unknown = JSON.parse(text);
    return typeof json === "object" && json !== null && !Array.isArray(json) ? (json as OnboardingSecret) : {};
  } catch {
    return {};
  }
}

/**
 * A write-only token store over the provider secret: `save` merges `refresh_token` into the secret JSON,
 * keeping `client_id`, `client_secret`, `pii_salt` and any other field, and fills the client credentials
 * and a random `pii_salt` only when the secret lacks them. The access token is not stored: the pollers
 * refresh on their first run.
 *
 * @example
 * const store = secretTokenStore(new SecretsManagerClient({}), arn, { client_id, client_secret });
 * await store.save(tokens);
 */
export function secretTokenStore(
  secrets: SecretsManagerClient,
  secretId: string,
  fill: { readonly client_id: string; readonly client_secret: string },
): TokenStore & { readonly written: () => OnboardingSecret | undefined } {
  let written: OnboardingSecret | undefined;
  return {
    written: () => written,
    async load(): Promise<StoredTokens | undefined> {
      const current = await readOnboardingSecret(secrets, secretId);
      return current.refresh_token === undefined ? undefined : { refreshToken: current.refresh_token };
    },
    async save(tokens: StoredTokens): Promise<void> {
      const current = await readOnboardingSecret(secrets, secretId);
      const next: OnboardingSecret = {
        ...current,
        client_id: current.client_id ?? fill.client_id,
        client_secret: current.client_secret ?? fill.client_secret,
        pii_salt: current.pii_salt ?? randomBytes(32).toString("base64url"),
        refresh_token: tokens.refreshToken,
      };
      try {
        await secrets.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: JSON.stringify(next) }));
      } catch (error) {
        throw new SecretOnboardingError(`cannot write secret ${secretId}: ${(error as Error).name}`, secretId, { cause: error });
      }
      written = next;
    },
  };
}
