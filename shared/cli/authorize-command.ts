/**
 * `bridge authorize [--port <p>] [--scope ...] [--secret-id <arn>]`: signs the integration in once, as a person.
 * Tokens go to the state directory (local mode) or, with `--secret-id`, into the tenant's Secrets Manager secret.
 */
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Clock, Lock } from "../bridge/ports.js";
import { monotonicFor, systemClock } from "../clock.js";
import { acquireWithin, whileHolding } from "../lease-keep-alive.js";
import type { TokenStore } from "../qashio/auth/token-store.js";
import { DEFAULT_LOCK_NAME, DEFAULT_LOCK_POLL_MS, DEFAULT_LOCK_TTL_MS, TOKEN_SAVE_MESSAGES } from "../qashio/auth/token-provider.js";
import type { FetchLike } from "../qashio/http.js";
import { FileLock, FileTokenStore, HardLinksUnsupportedError, LeaseUnreadableError } from "../local/index.js";
import type { AuthorizeArgs } from "./args.js";
import { authorizeWithBrowser } from "./authorize.js";
import { checkRequestedScope, DEFAULT_SCOPES, grantShortfall, type GrantShortfall } from "./cycle-scopes.js";
import { readAuthorizeSettings, settingNameWarnings } from "./config.js";
import { loadEnv } from "./env-file.js";
import { assertHostAnswers } from "./host-probe.js";
import { AuthorizeError, ConfigError, EXIT, GrantTooNarrowError, type SettingIssue } from "./errors.js";
import { line, type CliIo } from "./io.js";
import { bindToSettings } from "./cycle-lease.js";
import { leaseUnreadableProblem, noHardLinksProblem } from "./engine-errors.js";
import { restrictTokenFile } from "./local-tokens.js";
import { restrictStateDir } from "./state-access.js";
import { openInBrowser } from "./open-url.js";
import type * as SecretOnboarding from "./secret-onboarding.js";
import { printable } from "./terminal-text.js";

/**
 * How long the write waits for the token lease: longer than a lease lives unrenewed (a poller that died holding it)
 * plus a slow poller's save under it.
 */
export const AUTHORIZE_LEASE_WAIT_MS = 2 * DEFAULT_LOCK_TTL_MS;

/** Seams for tests: the browser opener, the AWS clients, the fetch of the token exchange, the clock, the lease wait. */
export interface AuthorizeSeams {
  readonly open?: (url: string) => Promise<boolean>;
  readonly secrets?: SecretsManagerClient;
  /** DynamoDB client of the tenant's table (with `--secret-id`). @default one in the secret's region, with its credentials */
  readonly dynamo?: DynamoDBDocumentClient;
  readonly fetch?: FetchLike;
  /** Receives the authorize URL (tests play the browser here). */
  readonly onAuthorizeUrl?: (url: string) => void | Promise<void>;
  /** This machine's clock (with `--secret-id`, corrected to AWS's time). @default systemClock */
  readonly clock?: Clock;
  /** How long the save waits for a token lease a running bridge holds. @default AUTHORIZE_LEASE_WAIT_MS */
  readonly lockWaitMs?: number;
}

/** How the token save waits for the lease: its clock, bound, Ctrl-C, and where it reports. */
interface LeaseWaitContext {
  readonly clock: Clock;
  /** The never-stepped clock `waitMs` is real time on (see `LeaseWait.elapsed`). */
  readonly elapsed: (() => number) | undefined;
  readonly waitMs: number;
  readonly io: CliIo;
  /** The state directory whose file lock `lock` is (local mode): an unreadable lease file is named as one of it. */
  readonly stateDir?: string;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

/**
 * Saves under the lease the token provider refreshes under, waiting while a running bridge holds it: a refresh that
 * read the old token before this save would otherwise overwrite the new family with the old one's rotation.
 */
function lockedStore(store: TokenStore, lock: Lock, name: string, context: LeaseWaitContext): TokenStore {
  const { clock, elapsed, waitMs, io, stateDir } = context;
  const warn = (text: string) => line(io.stderr, `warning: ${text}`);
  const heldBy = async () => {
    const holder = await lock.holderOf?.(name).catch(() => undefined);
    return holder ? ` (${holder})` : "";
  };
  const onWait = () =>
    // A note for the person waiting: a stream that refuses it must not end the sign-in as an unhandled rejection.
    void heldBy()
      .then((by) => line(io.stderr, `A running bridge${by} holds the token lease "${name}"; waiting up to ${seconds(waitMs)} for it ...`))
      .catch(() => undefined);
  const acquire = async () => {
    try {
      return await acquireWithin(lock, name, DEFAULT_LOCK_TTL_MS, { waitMs, pollMs: DEFAULT_LOCK_POLL_MS, signal: io.signal, onWait, elapsed }, clock);
    } catch (error) {
      // Not "run authorize again" for a file this user may not read: it would meet it again (another user's bridge may hold it).
      if (error instanceof LeaseUnreadableError && stateDir !== undefined) throw leaseUnreadableProblem(error, stateDir, "; this sign-in was not stored");
      if (error instanceof HardLinksUnsupportedError) throw noHardLinksProblem(error, "; this sign-in was not stored");
      throw new AuthorizeError(`cannot take the token lease "${name}": ${(error as Error).name}; this sign-in was not stored: run authorize again`, {
        cause: error,
      });
    }
  };
  return {
    load: () => store.load(),
    async save(tokens) {
      const handle = await acquire();
      if (handle === undefined) {
        throw new AuthorizeError(
          io.signal.aborted
            ? `interrupted while waiting for the token lease "${name}": this sign-in was not stored`
            : `a running bridge${await heldBy()} held the token lease "${name}" for ${seconds(waitMs)}, so this sign-in was not stored ` +
                "(the bridge goes on with the previous one): run authorize again",
        );
      }
      try {
        await whileHolding(handle, DEFAULT_LOCK_TTL_MS, clock, () => store.save(tokens), { warn }, TOKEN_SAVE_MESSAGES);
      } finally {
        // The token is stored by now (or the save threw): a lease not given back only runs out by itself.
        await handle.release().catch((error: unknown) => warn(`giving the token lease "${name}" back failed (${(error as Error).name}); it runs out by itself`));
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
  const scope = args.scope ?? DEFAULT_SCOPES;
  // The scope asked for is judged as its grant will be: refused, or warned of, before anything else is read.
  const asked = checkRequestedScope(scope);
  for (const warning of asked.warnings) line(io.stderr, `warning: ${warning}`);
  const env = await loadEnv(io.env, io.cwd, undefined, { signal: io.signal });
  for (const warning of settingNameWarnings(env)) line(io.stderr, `warning: ${warning}`);
  // Every setting is checked before the browser opens: a failure after sign-in would waste the issued token family.
  const settings = readAuthorizeSettings(env, io.cwd, { tokensInSecret: args.secretId !== undefined });
  const waitMs = seams.lockWaitMs ?? AUTHORIZE_LEASE_WAIT_MS;
  const clock = seams.clock ?? systemClock;
  // Of this machine's clock: AWS's time, built on it, is not the system clock, yet passes in step with it.
  const elapsed = monotonicFor(clock);
  const { baseUrl, authorizeUrl } = settings;
  let clientId = settings.clientId;
  let clientSecret = settings.clientSecret;
  let store: TokenStore;
  let where: string;
  let secrets: SecretsManagerClient | undefined;
  // Only `--secret-id` needs the AWS SDK: imported here, it stays out of a local sign-in (about 55 modules and 0.2 s
  // of start-up under tsx; test/cli/command-imports.test.ts).
  let onboarding: typeof SecretOnboarding | undefined;
  if (args.secretId !== undefined) {
    onboarding = await import("./secret-onboarding.js");
    const { assertUsableSalt, onboardingSecretsClient, readOnboardingSecret, secretRegion } = onboarding;
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
  if (onboarding !== undefined && secrets !== undefined && args.secretId !== undefined) {
    const { awsClock, openTokenLease, secretTokenStore } = onboarding;
    const written = secretTokenStore(secrets, args.secretId, { client_id: clientId, client_secret: clientSecret });
    const leaseClock = awsClock(clock, secrets);
    const lease = await openTokenLease(secrets, args.secretId, {
      clock: leaseClock,
      warn: (text) => line(io.stderr, `warning: ${text}`),
      ...(seams.dynamo ? { dynamo: seams.dynamo } : {}),
    });
    store = lease ? lockedStore(written, lease.lock, lease.name, { clock: leaseClock, elapsed, waitMs, io }) : written;
    where = `secret ${args.secretId} (refresh_token, client_id and client_secret merged; pii_salt kept)`;
    line(io.stdout, `Signing in at ${baseUrl} with client_id ${clientId}; the token goes to secret ${args.secretId}${lease ? `, of tenant ${lease.tenant}` : ""}.`);
  } else {
    // Checked before the browser opens: tokens of one provider must not land where another's state lives. A new
    // client id may take the directory over, but only once its sign-in is stored: recorded before, a sign-in that
    // never completes would lock the directory's working settings out.
    const binding = { baseUrl, clientId, ...(settings.tenant ? { tenant: settings.tenant } : {}) };
    await bindToSettings(settings.stateDir, binding, { rebindClient: true, checkOnly: true });
    const files = new FileTokenStore(settings.stateDir);
    // Private before the sign-in, which may never complete: the token there now stays until one does.
    restrictStateDir(settings.stateDir, (text) => line(io.stderr, `warning: ${text}`));
    restrictTokenFile(files, (text) => line(io.stderr, `warning: ${text}`));
    const bindThenSave: TokenStore = {
      load: () => files.load(),
      async save(tokens) {
        await bindToSettings(settings.stateDir, binding, { rebindClient: true });
        await files.save(tokens);
      },
    };
    store = lockedStore(bindThenSave, new FileLock(settings.stateDir, { clock }), DEFAULT_LOCK_NAME, { clock, elapsed, waitMs, io, stateDir: settings.stateDir });
    where = files.file;
  }
  // Judged once the code is exchanged, before the save: said now, not at the first 403 of a run (an acknowledge refused
  // after the events went out, in AWS with no person), and a grant no cycle can read with must not replace a working
  // sign-in (the pollers would take it up at once).
  let shortfall: GrantShortfall | undefined;
  const grantChecked: TokenStore = {
    load: () => store.load(),
    async save(tokens) {
      shortfall = grantShortfall(tokens.scope, scope);
      if (shortfall?.nothingReads === true) {
        throw new GrantTooNarrowError(
          `no cycle of the bridge can read anything with this sign-in: ${shortfall.message} This sign-in was not stored: the one before it, if any, is kept.`,
        );
      }
      await store.save(tokens);
    },
  };
  // Before the address is shown: a token endpoint this machine cannot reach would leave the person signing in for
  // nothing and the wait running out its --timeout.
  await assertHostAnswers(baseUrl, settings.baseUrlSetting, { signal: io.signal });
  const result = await authorizeWithBrowser({
    baseUrl,
    baseUrlSetting: settings.baseUrlSetting,
    authorizeUrl,
    clientId,
    clientSecret,
    scope,
    port: args.port,
    timeoutMs: args.timeoutMs,
    store: grantChecked,
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
  // The granted scope is the token endpoint's word, shown escaped (printable): it may hold anything.
  line(io.stdout, `Authorized${result.scope ? ` (scope: ${printable(result.scope)})` : ""}. Tokens stored in ${where}.`);
  // A grant lacking just what the ask lacked was warned of before the sign-in.
  if (shortfall !== undefined && shortfall.missing.join(" ") !== asked.missing.join(" ")) line(io.stderr, `warning: ${shortfall.message}`);
  return EXIT.ok;
}
