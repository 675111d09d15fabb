/**
 * `bridge authorize [--port <p>] [--scope ...] [--secret-id <arn>]`: signs the integration in once, as a person.
 * Tokens go to the state directory (local mode) or, with `--secret-id`, into the tenant's Secrets Manager secret.
 */
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Lock } from "../bridge/ports.js";
import type { TokenStore } from "../qashio/auth/token-store.js";
import { DEFAULT_LOCK_NAME, DEFAULT_LOCK_TTL_MS } from "../qashio/auth/token-provider.js";
import type { FetchLike } from "../qashio/http.js";
import { FileLock, FileTokenStore } from "../local/index.js";
import type { AuthorizeArgs } from "./args.js";
import { DEFAULT_SCOPES, authorizeWithBrowser } from "./authorize.js";
import { loadEnv, readAuthorizeSettings, settingNameWarnings } from "./config.js";
import { AuthorizeError, ConfigError, EXIT, type SettingIssue } from "./errors.js";
import { line, type CliIo } from "./io.js";
import { bindToSettings } from "./local-bridge.js";
import { openInBrowser } from "./open-url.js";
import { assertUsableSalt, onboardingSecretsClient, readOnboardingSecret, secretRegion, secretTokenStore } from "./secret-onboarding.js";

/** Seams for tests: the browser opener, the Secrets Manager client, the fetch of the token exchange. */
export interface AuthorizeSeams {
  readonly open?: (url: string) => Promise<boolean>;
  readonly secrets?: SecretsManagerClient;
  readonly fetch?: FetchLike;
  /** Receives the authorize URL (tests play the browser here). */
  readonly onAuthorizeUrl?: (url: string) => void | Promise<void>;
}

/** Saves under the same lock the token provider refreshes under, so a running bridge cannot overwrite the new family. */
function lockedStore(store: TokenStore, lock: Lock): TokenStore {
  return {
    load: () => store.load(),
    async save(tokens) {
      const handle = await lock.tryAcquire(DEFAULT_LOCK_NAME, DEFAULT_LOCK_TTL_MS);
      if (handle === undefined) throw new AuthorizeError("a running bridge is refreshing its token right now; run authorize again in a moment");
      try {
        await store.save(tokens);
      } finally {
        await handle.release();
      }
    },
  };
}

/**
 * Runs the authorization-code flow and stores the first token set; returns the exit code.
 *
 * @example
 * process.exitCode = await authorizeCommand({ port: 0, noOpen: false, timeoutMs: 600_000 }, io);
 */
export async function authorizeCommand(args: AuthorizeArgs, io: CliIo, seams: AuthorizeSeams = {}): Promise<number> {
  const env = await loadEnv(io.env, io.cwd);
  for (const warning of settingNameWarnings(env)) line(io.stderr, `warning: ${warning}`);
  // Every setting is checked before the browser opens: a failure after sign-in would waste the issued token family.
  const settings = readAuthorizeSettings(env, io.cwd, { tokensInSecret: args.secretId !== undefined });
  const { baseUrl, authorizeUrl } = settings;
  let clientId = settings.clientId;
  let clientSecret = settings.clientSecret;
  let store: TokenStore;
  let where: string;
  let secrets: SecretsManagerClient | undefined;
  if (args.secretId !== undefined) {
    // The region (and an AWS_REGION contradicting the ARN) is checked whichever client is used.
    secretRegion(args.secretId, env);
    secrets = seams.secrets ?? (await onboardingSecretsClient(args.secretId, env));
    const current = await readOnboardingSecret(secrets, args.secretId);
    assertUsableSalt(current, args.secretId);
    // The pollers refresh with the secret's client: a token issued to another one (a QASHIO_CLIENT_ID left in the
    // environment or .env from local mode) would fail at their first refresh.
    if (clientId !== undefined && current.client_id !== undefined && clientId !== current.client_id) {
      throw new ConfigError([
        {
          setting: "QASHIO_CLIENT_ID",
          problem:
            `differs from the client_id in secret ${args.secretId}: unset QASHIO_CLIENT_ID and QASHIO_CLIENT_SECRET to sign in ` +
            "with the secret's client, or, to move the tenant to another client, put the new client_id and client_secret into the secret first",
        },
      ]);
    }
    clientId ??= current.client_id;
    clientSecret ??= current.client_secret;
  }
  // Without --secret-id readAuthorizeSettings already named a missing client; this also narrows the types.
  const unset = (field: string) => `is not set and the secret has none (${field})`;
  const missing: SettingIssue[] = [];
  if (clientId === undefined) missing.push({ setting: "QASHIO_CLIENT_ID", problem: unset("client_id") });
  if (clientSecret === undefined) missing.push({ setting: "QASHIO_CLIENT_SECRET", problem: unset("client_secret") });
  if (clientId === undefined || clientSecret === undefined) throw new ConfigError(missing);
  if (secrets !== undefined && args.secretId !== undefined) {
    store = secretTokenStore(secrets, args.secretId, { client_id: clientId, client_secret: clientSecret });
    where = `secret ${args.secretId} (refresh_token, client_id and client_secret merged; pii_salt kept)`;
    line(io.stdout, `Signing in at ${baseUrl} with client_id ${clientId}; the token goes to secret ${args.secretId}.`);
  } else {
    // Before the browser opens: tokens of one provider must not land where another's state lives. A new client id
    // may take the directory over: the sign-in replaces the tokens and none of the old ones is sent.
    await bindToSettings(settings.stateDir, { baseUrl, clientId, ...(settings.tenant ? { tenant: settings.tenant } : {}) }, { rebindClient: true });
    const files = new FileTokenStore(settings.stateDir);
    store = lockedStore(files, new FileLock(settings.stateDir));
    where = files.file;
  }
  const scope = args.scope ?? DEFAULT_SCOPES;
  const result = await authorizeWithBrowser({
    baseUrl,
    authorizeUrl,
    clientId,
    clientSecret,
    scope,
    port: args.port,
    timeoutMs: args.timeoutMs,
    store,
    fetch: seams.fetch,
    signal: io.signal,
    onForeignRedirect: () =>
      line(io.stderr, "warning: refused a redirect with another state (an old browser tab, or someone else on this machine); still waiting"),
    onAuthorizeUrl: async (url) => {
      line(io.stdout, "Open this address in a browser and approve access:");
      line(io.stdout, `  ${url}`);
      line(io.stdout, `Waiting for the redirect on ${new URL(new URL(url).searchParams.get("redirect_uri") ?? "http://127.0.0.1").origin} ...`);
      if (!args.noOpen) await (seams.open ?? openInBrowser)(url);
      await seams.onAuthorizeUrl?.(url);
    },
  });
  line(io.stdout, `Authorized${result.scope ? ` (scope: ${result.scope})` : ""}. Tokens stored in ${where}.`);
  return EXIT.ok;
}
