/**
 * `bridge authorize` against the sandbox: the person's browser is played by the test, which approves through
 * the sandbox's control surface and follows the redirect.
 */
import { DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { DeleteCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { realSleep, type Clock } from "../../shared/clock.js";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { leaseNames } from "../../shared/aws/keys.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { AuthorizeError } from "../../shared/cli/errors.js";
import { SecretOnboardingError } from "../../shared/cli/secret-onboarding.js";
import { FileLock } from "../../shared/local/index.js";
import { DEFAULT_LOCK_NAME } from "../../shared/qashio/auth/token-provider.js";
import { createTestTable, type TestTable } from "../aws/support/dynamo.js";
import { awsError, FakeSecretsManager } from "../aws/support/fake-secrets-manager.js";
import { authorizeCommand } from "../../shared/cli/authorize-command.js";
import { readAuthorizeSettings } from "../../shared/cli/config.js";
import { ConfigError, EXIT, GrantTooNarrowError, StateDirTakenError, UsageError } from "../../shared/cli/errors.js";
import { DEFAULT_SCOPES } from "../../shared/cli/cycle-scopes.js";
import { bindStateDir } from "../../shared/local/index.js";
import type { FetchLike } from "../../shared/qashio/http.js";
import { ROOT, approve, authorizeFlow, harnessPerTest, idsWithStatus, runInProcess } from "./helpers.js";

const startHarness = harnessPerTest();

function io(env: Record<string, string>) {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    io: {
      env,
      cwd: ROOT,
      stdout: { write: (c: string) => (out.stdout += c) },
      stderr: { write: (c: string) => (out.stderr += c) },
      signal: new AbortController().signal,
    },
  };
}

const args = { port: 0, noOpen: true, timeoutMs: 10_000 };

/** A loopback port nothing listens on (one just given back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
const CLIENT_ENV = { QASHIO_BASE_URL: "http://127.0.0.1:9", QASHIO_CLIENT_ID: "c", QASHIO_CLIENT_SECRET: "s" };
/** A secret ARN as the stack output SecretArn gives it. */
const ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:SecretA29EB826-AbCdEf";

describe("bridge authorize", () => {
  it("names the missing client settings without --secret-id", async () => {
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    await expect(authorizeCommand(args, cli)).rejects.toThrow(/QASHIO_CLIENT_ID: is required but not set\n[\s\S]*QASHIO_CLIENT_SECRET: is required but not set/);
  });

  it("warns of a misspelt setting name as run does, before naming the missing settings, never echoing its value", async () => {
    const { io: cli, out } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9", QASHIO_CLIENTID: "client-value" });
    await expect(authorizeCommand(args, cli)).rejects.toThrow(/QASHIO_CLIENT_ID: is required but not set/);
    expect(out.stderr).toContain("warning: QASHIO_CLIENTID is not a setting (did you mean QASHIO_CLIENT_ID?)");
    expect(out.stderr).not.toContain("client-value");
  });

  it("rejects a state directory that cannot be created before the browser opens, exit 2", async () => {
    const h = await startHarness();
    await writeFile(join(h.dir, "afile"), "x");
    const env = { ...h.env, BRIDGE_STATE_DIR: join(h.dir, "afile", "state") };
    let shown = false;
    const { io: cli } = io(env);

    const error = await authorizeCommand(args, cli, { onAuthorizeUrl: () => void (shown = true) }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as ConfigError).message).toContain(`BRIDGE_STATE_DIR: cannot be created: ${join(h.dir, "afile")} is a file, not a directory`);
    expect(shown).toBe(false);
  });

  it("refuses a state directory bound to another provider before the browser opens, exit 2", async () => {
    const h = await startHarness();
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    await bindStateDir(stateDir, { baseUrl: "https://api.other-provider.test", clientId: "c-other" });
    await writeFile(join(stateDir, "tokens.json"), JSON.stringify({ refreshToken: "rt-of-the-other-provider" }));
    let shown = false;
    const { io: cli } = io(h.env);
    const error = await authorizeCommand(args, cli, { onAuthorizeUrl: () => void (shown = true) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateDirTakenError);
    expect((error as ConfigError).message).toContain("holds the tokens or snapshots of another QASHIO_BASE_URL");
    expect(shown).toBe(false);
  });

  it("refuses a state directory holding another tenant's state when BRIDGE_TENANT is set, exit 2", async () => {
    const h = await startHarness();
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const { baseUrl, clientId } = readAuthorizeSettings(h.env, h.dir);
    await bindStateDir(stateDir, { baseUrl, clientId: clientId as string, tenant: "acme" });
    await writeFile(join(stateDir, "tokens.json"), JSON.stringify({ refreshToken: "rt-of-acme" }));
    let shown = false;
    const { io: cli } = io({ ...h.env, BRIDGE_TENANT: "globex" });
    const error = await authorizeCommand(args, cli, { onAuthorizeUrl: () => void (shown = true) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateDirTakenError);
    expect((error as ConfigError).message).toContain("holds the tokens or snapshots of another BRIDGE_TENANT");
    expect(shown).toBe(false);
  });

  it("makes the state directory and a token file its group and others may read private before the sign-in, which may never complete, with a warning naming each", async () => {
    const h = await startHarness();
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const { baseUrl, clientId } = readAuthorizeSettings(h.env, h.dir);
    await bindStateDir(stateDir, { baseUrl, clientId: clientId as string });
    await chmod(stateDir, 0o755);
    const tokens = join(stateDir, "tokens.json");
    await writeFile(tokens, JSON.stringify({ refreshToken: "rt-restored-readable" }), { mode: 0o644 });

    const auth = await runInProcess(["authorize", "--no-open", "--timeout", "1s"], h.env);

    expect(auth.code).toBe(EXIT.failed);
    // mutant: the state directory left as it was went unseen
    expect((await stat(stateDir)).mode & 0o777).toBe(0o700);
    expect(auth.stderr).toContain(`warning: ${stateDir} could be entered and read by its group or others (mode 0755): made it private to its owner (0700)`);
    expect((await stat(tokens)).mode & 0o777).toBe(0o600);
    expect(auth.stderr).toContain(`warning: ${tokens} was readable by its group or others (mode 0644): made it readable by its owner only (0600)`);
    expect(auth.stderr).not.toContain("rt-restored-readable");
  });

  it("records a new client id for the state directory only once its sign-in is stored: a sign-in that fails changes nothing", async () => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const binding = await readFile(join(h.env.BRIDGE_STATE_DIR as string, "binding.json"), "utf8");
    // A mistyped client id, and a sign-in that never completes.
    const auth = await runInProcess(["authorize", "--no-open", "--timeout", "1s"], { ...h.env, QASHIO_CLIENT_ID: "sandbox-clinet" });
    expect(auth.code).toBe(EXIT.failed);
    expect(await readFile(join(h.env.BRIDGE_STATE_DIR as string, "binding.json"), "utf8")).toBe(binding);
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  });

  it("names a bad QASHIO_AUTHORIZE_URL without echoing it, exit 2", async () => {
    const { code, stderr } = await runInProcess(["authorize", "--no-open"], { ...CLIENT_ENV, QASHIO_AUTHORIZE_URL: "nope-value" });
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("QASHIO_AUTHORIZE_URL: is not an absolute http(s) URL");
    expect(stderr).not.toContain("nope-value");
  });

  it("stores the tokens in the state directory, and run --once then works without QASHIO_REFRESH_TOKEN", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const { io: cli, out } = io(env);
    let opened = false;

    const code = await authorizeCommand(args, cli, { onAuthorizeUrl: approve(h), open: async () => (opened = true) });

    expect(code).toBe(EXIT.ok);
    expect(opened).toBe(false);
    expect(out.stdout).toMatch(/Open this address in a browser[\s\S]*\/oauth2\/authorize\?response_type=code/);
    expect(out.stdout).toContain(`Tokens stored in ${join(h.env.BRIDGE_STATE_DIR as string, "tokens.json")}`);
    const stored = JSON.parse(await readFile(join(h.env.BRIDGE_STATE_DIR as string, "tokens.json"), "utf8")) as { refreshToken: string };
    expect(out.stdout).not.toContain(stored.refreshToken);
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("refuses at once, exit 1, a base URL whose host refuses the connection, naming it and QASHIO_BASE_URL, before printing the address or waiting", async () => {
    const h = await startHarness();
    const closed = await closedPort();
    const url = `http://127.0.0.1:${closed}`;
    let shown = false;
    const { io: cli, out } = io({ ...h.env, QASHIO_BASE_URL: url });
    const started = Date.now();
    const error = await authorizeCommand({ ...args, timeoutMs: 60_000 }, cli, { onAuthorizeUrl: () => void (shown = true) }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(AuthorizeError);
    expect((error as AuthorizeError).exitCode).toBe(EXIT.failed);
    expect((error as Error).message).toBe(
      `QASHIO_BASE_URL (${url}) does not answer (ECONNREFUSED): the code exchange after the sign-in could not reach it, so no sign-in was started; ` +
        `nothing listens on 127.0.0.1:${closed}, where QASHIO_BASE_URL points: is the sandbox running? (npm run sandbox -- --port ${closed})`,
    );
    expect(shown).toBe(false);
    expect(out.stdout).not.toContain("Open this address");
  });

  it("only connects to the provider's host before the sign-in: no byte is sent, and any listener lets it go on to the address", async () => {
    const h = await startHarness();
    const received: Buffer[] = [];
    let connections = 0;
    const listener = createServer((socket) => {
      connections += 1;
      socket.on("data", (chunk: Buffer) => received.push(chunk));
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const interrupt = new AbortController();
    const { io: base, out } = io({ ...h.env, QASHIO_BASE_URL: `http://127.0.0.1:${(listener.address() as AddressInfo).port}` });
    try {
      // The person gives up once the address is shown: the probe let it through.
      const error = await authorizeCommand(args, { ...base, signal: interrupt.signal }, { onAuthorizeUrl: () => interrupt.abort() }).catch((e: unknown) => e);
      expect((error as Error).message).toBe("authorization cancelled");
      expect(out.stdout).toContain("Open this address in a browser");
      expect(connections).toBe(1);
      expect(Buffer.concat(received).length).toBe(0);
    } finally {
      listener.close();
    }
  });

  it("without --no-open, hands the opener the very address it prints, then signs in as the browser follows it", async () => {
    const h = await startHarness();
    const { io: cli, out } = io(h.env);
    const opened: string[] = [];

    const code = await authorizeCommand({ ...args, noOpen: false }, cli, {
      open: async (url) => (opened.push(url), true),
      onAuthorizeUrl: approve(h),
    });

    expect(code).toBe(EXIT.ok);
    expect(opened).toHaveLength(1);
    expect(out.stdout).toContain(`\n  ${opened[0] as string}\n`);
    // The address the redirect comes back to, this machine's callback, not the provider's sign-in page (mutant went unseen).
    const callback = new URL(new URL(opened[0] as string).searchParams.get("redirect_uri") as string);
    expect(callback.hostname).toBe("127.0.0.1");
    expect(out.stdout).toContain(`\nWaiting for the redirect on ${callback.origin} ...\n`);
    expect(new URL(opened[0] as string).pathname).toBe("/oauth2/authorize");
  });

  it("warns before the sign-in, naming each missing scope and what fails without it, when --scope asks for less than the cycles need, and not again for a grant of that; tokens stored, exit 0", async () => {
    const h = await startHarness();
    const { io: cli, out } = io(h.env);
    let warnedBeforeSignIn = "";

    const code = await authorizeCommand({ ...args, scope: "transactions:read" }, cli, {
      onAuthorizeUrl: async (url) => {
        warnedBeforeSignIn = out.stderr;
        await approve(h)(url);
      },
    });

    expect(code).toBe(EXIT.ok);
    expect(out.stdout).toContain("Authorized (scope: transactions:read). Tokens stored in");
    expect(out.stderr).toBe(warnedBeforeSignIn);
    expect(warnedBeforeSignIn).toBe(
      "warning: --scope (transactions:read) lacks transactions:write and cards:read, which the bridge's cycles need: " +
        "each call needing one is refused 403 and never retried. Without transactions:write, every transaction cycle publishes " +
        "its transactions and then fails its acknowledge, so it pulls the same transactions again each time; without cards:read, " +
        `every card cycle fails at its first call (cards list). To ask for them, stop with Ctrl-C and authorize with the default scope (${DEFAULT_SCOPES}) ` +
        "or a --scope holding them.\n",
    );
    // The run that follows fails as the warning said: its acknowledge is refused.
    const run = await runInProcess(["run", "--once"], h.env);
    expect(run.code).toBe(EXIT.failed);
    expect(run.stderr).toMatch(/403/);
  });

  it("warns when the provider grants less than asked, and judges the grant when its answer names no scope by the scope asked for", async () => {
    const h = await startHarness();
    const answerWith = (scope: string | undefined): FetchLike => async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      const { scope: _granted, ...rest } = (await response.json()) as Record<string, unknown>;
      return Response.json(scope === undefined ? rest : { ...rest, scope });
    };
    const narrowed = io(h.env);
    expect(await authorizeCommand(args, narrowed.io, { onAuthorizeUrl: approve(h), fetch: answerWith("transactions:read transactions:write") })).toBe(EXIT.ok);
    expect(narrowed.out.stderr).toContain("warning: the grant (scope: transactions:read transactions:write) lacks cards:read, which the bridge's cycles need");

    // Judged by the ask, which was warned of before the sign-in: not warned of twice.
    const unnamed = io(h.env);
    expect(await authorizeCommand({ ...args, scope: "cards:read transactions:read" }, unnamed.io, { onAuthorizeUrl: approve(h), fetch: answerWith(undefined) })).toBe(EXIT.ok);
    expect(unnamed.out.stderr).toContain("warning: --scope (cards:read transactions:read) lacks transactions:write, which the bridge's cycles need");
    expect(unnamed.out.stderr.match(/lacks/g)).toHaveLength(1);

    const full = io(h.env);
    expect(await authorizeCommand(args, full.io, { onAuthorizeUrl: approve(h), fetch: answerWith(undefined) })).toBe(EXIT.ok);
    expect(full.out.stderr).not.toContain("warning");

    // A blank scope names none either: not a grant of nothing, which would refuse the sign-in.
    const blank = io(h.env);
    expect(await authorizeCommand(args, blank.io, { onAuthorizeUrl: approve(h), fetch: answerWith(" ") })).toBe(EXIT.ok);
    expect(blank.out.stderr).not.toContain("warning");
  });

  it("reads a granted scope listed with commas or stray whitespace as the scopes it names, not as one unknown scope", async () => {
    const h = await startHarness();
    // §2.8 says space-separated; some OAuth servers list them with commas (GitHub's token answer does).
    const answerWith = (scope: string): FetchLike => async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      return Response.json({ ...((await response.json()) as Record<string, unknown>), scope });
    };
    for (const scope of ["transactions:read,transactions:write,cards:read", " transactions:read, transactions:write,\tcards:read\n"]) {
      const { io: cli, out } = io(h.env);
      expect(await authorizeCommand(args, cli, { onAuthorizeUrl: approve(h), fetch: answerWith(scope) })).toBe(EXIT.ok);
      expect(out.stderr).not.toContain("warning");
    }
    const narrowed = io(h.env);
    expect(await authorizeCommand(args, narrowed.io, { onAuthorizeUrl: approve(h), fetch: answerWith("transactions:read,transactions:write") })).toBe(EXIT.ok);
    expect(narrowed.out.stderr).toContain("warning: the grant (scope: transactions:read,transactions:write) lacks cards:read, which the bridge's cycles need");
  });

  it("refuses, exit 2, a grant with which no cycle can read anything, and stores none of it: the sign-in before it goes on working", async () => {
    const h = await startHarness();
    expect(await authorizeCommand(args, io(h.env).io, { onAuthorizeUrl: approve(h) })).toBe(EXIT.ok);
    const tokenFile = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
    const before = await readFile(tokenFile, "utf8");
    const { io: cli, out } = io(h.env);

    const narrowing: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      return Response.json({ ...((await response.json()) as Record<string, unknown>), scope: "wallet:read transactions:write" });
    };
    const error = await authorizeCommand(args, cli, { onAuthorizeUrl: approve(h), fetch: narrowing }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GrantTooNarrowError);
    expect((error as GrantTooNarrowError).exitCode).toBe(EXIT.usage);
    expect((error as GrantTooNarrowError).message).toBe(
      "no cycle of the bridge can read anything with this sign-in: the grant (scope: wallet:read transactions:write) lacks " +
        "transactions:read and cards:read, which the bridge's cycles need: each call needing one is refused 403 and never retried. " +
        "Without transactions:read, every transaction cycle fails at its first call (transactions list); without cards:read, " +
        `every card cycle fails at its first call (cards list). Authorize again with the default scope (${DEFAULT_SCOPES}) or a --scope holding them. ` +
        "This sign-in was not stored: the one before it, if any, is kept.",
    );
    expect(out.stdout).not.toContain("Tokens stored in");
    expect(await readFile(tokenFile, "utf8")).toBe(before);
    const run = await runInProcess(["run", "--once"], h.env);
    expect(run.code).toBe(EXIT.ok);
  });

  it("refuses, exit 2 before the sign-in, a --scope value joining scopes with commas and a --scope with which no cycle can read, a typo named", async () => {
    const h = await startHarness();
    const signIns: string[] = [];
    const refusal = async (scope: string) => {
      const { io: cli, out } = io(h.env);
      const error = await authorizeCommand({ ...args, scope }, cli, { onAuthorizeUrl: (url) => void signIns.push(url) }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).exitCode).toBe(EXIT.usage);
      expect(out.stdout).toBe("");
      return (error as Error).message;
    };
    expect(await refusal("transactions:read,transactions:write,cards:read")).toBe(
      '--scope: "transactions:read,transactions:write,cards:read" joins scopes with a comma: separate them with spaces; no sign-in was started',
    );
    expect(await refusal("transactions:read, cards:read transactions:write,\u001b[2J")).toBe(
      '--scope: "transactions:read," and "transactions:write,\\u001b[2J" join scopes with a comma: separate them with spaces; no sign-in was started',
    );
    const nothingReads =
      "--scope (wallet:read transactions:write) lacks transactions:read and cards:read, which the bridge's cycles need: each call needing one is refused 403 " +
      "and never retried. Without transactions:read, every transaction cycle fails at its first call (transactions list); without cards:read, " +
      `every card cycle fails at its first call (cards list). Authorize with the default scope (${DEFAULT_SCOPES}) or a --scope holding them. ` +
      "No sign-in was started: no cycle of the bridge could read anything with it.";
    expect(await refusal("wallet:read transactions:write")).toBe(nothingReads);
    // A typo that leaves nothing to read with is named first, with the near scope meant: most often the whole fix.
    expect(await refusal("wallet:read transactions:write cards:raed")).toBe(
      '--scope: "cards:raed" (did you mean cards:read?) is no scope the spec names. ' + nothingReads.replace("(wallet:read transactions:write)", "(wallet:read transactions:write cards:raed)"),
    );
    expect(signIns).toEqual([]);
  });

  it("warns before the sign-in of a --scope value the spec names no scope of, a near one suggested, and signs in: the spec's list of scopes is not complete", async () => {
    const h = await startHarness();
    const { io: cli, out } = io(h.env);
    let warnedBeforeSignIn = "";
    const granting: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      // A provider knowing a scope the spec does not name grants it.
      return Response.json({ ...((await response.json()) as Record<string, unknown>), scope: `${DEFAULT_SCOPES} ledger:read` });
    };
    const code = await authorizeCommand({ ...args, scope: `${DEFAULT_SCOPES} ledger:read transaction:read` }, cli, {
      fetch: granting,
      onAuthorizeUrl: async (url) => {
        warnedBeforeSignIn = out.stderr;
        const signIn = new URL(url);
        expect(signIn.searchParams.get("scope")).toBe(`${DEFAULT_SCOPES} ledger:read transaction:read`);
        // The sandbox knows the spec's scopes only: approved as the provider knowing them would.
        signIn.searchParams.set("scope", DEFAULT_SCOPES);
        await approve(h)(signIn.toString());
      },
    });
    expect(code).toBe(EXIT.ok);
    expect(warnedBeforeSignIn).toBe(
      'warning: --scope: "ledger:read" and "transaction:read" (did you mean transactions:read?) are no scopes the spec names (wallet:read, cards:read, ' +
        "cards:write, transactions:read, transactions:write and users:read); the provider may refuse them (invalid_scope) at the sign-in: " +
        "if they are typos, stop with Ctrl-C and ask again\n",
    );
    expect(out.stderr).toBe(warnedBeforeSignIn);
    expect(out.stdout).toContain(`Authorized (scope: ${DEFAULT_SCOPES} ledger:read). Tokens stored in`);
  });

  it("prints the scope the provider granted as inert text: no terminal escapes, no forged line", async () => {
    const h = await startHarness();
    const { io: cli, out } = io(h.env);
    const scope = `${DEFAULT_SCOPES} transactions:read\u001b]0;owned\u0007\r\nAuthorized. Tokens stored in /tmp/elsewhere`;
    // The token endpoint is the provider's: its answer is untrusted, its `scope` too.
    const tamper: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      return Response.json({ ...((await response.json()) as object), scope });
    };

    expect(await authorizeCommand(args, cli, { onAuthorizeUrl: approve(h), fetch: tamper })).toBe(EXIT.ok);

    const [last] = out.stdout.trimEnd().split("\n").slice(-1);
    expect(last).toBe(String.raw`Authorized (scope: ${DEFAULT_SCOPES} transactions:read\u001b]0;owned\u0007\r\nAuthorized. Tokens stored in /tmp/elsewhere). ` + `Tokens stored in ${join(h.env.BRIDGE_STATE_DIR as string, "tokens.json")}.`);
  });

  it("refuses a redirect with a foreign state with a warning, never redeems its code, and keeps waiting for the person's", async () => {
    const h = await startHarness();
    const { io: cli, out } = io(h.env);
    const flow = authorizeFlow();
    const run = flow.watch(authorizeCommand(args, cli, { onAuthorizeUrl: flow.onAuthorizeUrl }));
    const url = await flow.url;
    // Another local user's code (login CSRF) arrives first, with a state of their own.
    const redirectUri = new URL(url).searchParams.get("redirect_uri") ?? "";
    const foreign = { code: h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri }), redirectUri };
    const redirect = new URL(redirectUri);
    redirect.searchParams.set("code", foreign.code);
    redirect.searchParams.set("state", "forged-state");
    expect((await flow.visit(redirect)).status).toBe(400);
    expect(await flow.pending(), "a redirect with another state ended the wait").toBe(true);
    await approve(h)(url);
    const code = await run;
    expect(code).toBe(EXIT.ok);
    expect(out.stderr).toContain("warning: refused a redirect with another state (an old browser tab, or someone else on this machine); still waiting");
    expect(out.stdout).toContain("Tokens stored in");
    // The foreign code was never presented: it can still be redeemed, once.
    const redeem = await fetch(`${h.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        grant_type: "authorization_code",
        client_id: h.env.QASHIO_CLIENT_ID,
        client_secret: h.env.QASHIO_CLIENT_SECRET,
        code: foreign.code,
        redirect_uri: foreign.redirectUri,
      }),
    });
    expect(redeem.status).toBe(200);
  });

  it("with --secret-id, takes the client from the secret and merges the refresh token into it", async () => {
    const h = await startHarness();
    const secrets = new SecretsManagerClient({ region: "eu-west-1" });
    const mock = mockClient(secrets);
    mock.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" }),
      VersionId: "v1",
    });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    // A secret of a stack deployed before the lease tags: written all the same, with a warning.
    mock.on(DescribeSecretCommand).resolves({ Tags: [] });
    const arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:qashio-acme";
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });

    const code = await authorizeCommand({ ...args, secretId: arn }, cli, { onAuthorizeUrl: approve(h), secrets });

    expect(code).toBe(EXIT.ok);
    const put = mock.commandCalls(PutSecretValueCommand)[0]?.args[0].input;
    expect(put?.SecretId).toBe(arn);
    const written = JSON.parse(put?.SecretString ?? "{}") as Record<string, string>;
    expect(written).toMatchObject({ client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" });
    expect(written.refresh_token).toMatch(/.+/);
    // mutant: "pii_salt kept" dropped from the closing line went unseen
    expect(out.stdout).toContain(`Tokens stored in secret ${arn} (refresh_token, client_id and client_secret merged; pii_salt kept).`);
    expect(out.stdout).not.toContain(written.refresh_token as string);
    expect(out.stderr).toContain(`warning: secret ${arn} lacks the tags qashio-bridge:tenant and qashio-bridge:lease-table (its stack was deployed before them)`);
  });

  it("with --secret-id, warns as a local sign-in does when the grant lacks a scope the cycles need", async () => {
    const h = await startHarness();
    const fake = new FakeSecretsManager(ARN, { client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" });
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });

    expect(await authorizeCommand({ ...args, scope: "transactions:read transactions:write", secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client })).toBe(EXIT.ok);

    expect(out.stdout).toContain(`Tokens stored in secret ${ARN}`);
    expect(out.stderr).toContain("warning: --scope (transactions:read transactions:write) lacks cards:read, which the bridge's cycles need");
  });

  it("with --secret-id, refuses a grant with which no cycle can read anything without writing the secret", async () => {
    const h = await startHarness();
    const fake = new FakeSecretsManager(ARN, { client_id: "sandbox-client", client_secret: "sandbox-secret", refresh_token: "rt-before", pii_salt: "from-cdk-0123456789abcdef" });
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });

    const narrowing: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (!url.endsWith("/oauth2/token") || response.status !== 200) return response;
      return Response.json({ ...((await response.json()) as Record<string, unknown>), scope: "wallet:read" });
    };
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, fetch: narrowing }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GrantTooNarrowError);
    expect((error as Error).message).toContain("This sign-in was not stored: the one before it, if any, is kept.");
    expect(fake.calls.filter((c) => c.operation === "PutSecretValue")).toHaveLength(0);
    expect(fake.current().refresh_token).toBe("rt-before");
    expect(out.stdout).not.toContain("Tokens stored in");
  });

  it("with --secret-id, refuses a pii_salt shorter than the pollers accept before the browser opens, without echoing it", async () => {
    const secrets = new SecretsManagerClient({ region: "eu-west-1" });
    const mock = mockClient(secrets);
    mock.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ client_id: "c", client_secret: "s", pii_salt: "short-salt-1234" }),
      VersionId: "v1",
    });
    let opened = false;
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { secrets, onAuthorizeUrl: () => void (opened = true) }).catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/pii_salt that is not a string of at least 16 characters/);
    expect((error as Error).message).not.toContain("short-salt-1234");
    expect(opened).toBe(false);
    expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  });

  it("with --secret-id, signs in with the client of the environment when the secret has none yet, and stores it there", async () => {
    const h = await startHarness();
    const fake = new FakeSecretsManager(ARN, { pii_salt: "from-cdk-0123456789abcdef" });
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url, QASHIO_CLIENT_ID: "sandbox-client", QASHIO_CLIENT_SECRET: "sandbox-secret" });
    expect(await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client })).toBe(EXIT.ok);
    expect(fake.current()).toMatchObject({ client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" });
    expect(out.stdout).toContain("with client_id sandbox-client;");
    expect(out.stdout).not.toContain("sandbox-secret");
  });

  it("with --secret-id, names the client settings missing from both environment and secret", async () => {
    const secrets = new SecretsManagerClient({ region: "eu-west-1" });
    mockClient(secrets).on(GetSecretValueCommand).resolves({ SecretString: "{}", VersionId: "v1" });
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    await expect(authorizeCommand({ ...args, secretId: ARN }, cli, { secrets })).rejects.toThrow(
      /QASHIO_CLIENT_ID: is not set and the secret has none \(client_id\)[\s\S]*QASHIO_CLIENT_SECRET: is not set and the secret has none \(client_secret\)/,
    );
  });
});

/** The SDK's own region lookup finds nothing: no AWS_REGION, no profile (process environment, which the SDK reads). */
function noAwsRegionConfigured(): void {
  vi.stubEnv("AWS_REGION", undefined);
  vi.stubEnv("AWS_PROFILE", undefined);
  vi.stubEnv("AWS_CONFIG_FILE", "/nonexistent/aws-config");
  vi.stubEnv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials");
}

describe("bridge authorize --secret-id: region and client", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  /** Every SecretsManagerClient the command creates, mocked: the calls show the region each client resolved. */
  function mockEveryClient(secret: Record<string, string>) {
    const mock = mockClient(SecretsManagerClient);
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify(secret), VersionId: "v1" });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    mock.on(DescribeSecretCommand).resolves({});
    return mock;
  }

  it("takes the region from the ARN when no AWS region is configured, and says where it signs in", async () => {
    noAwsRegionConfigured();
    const h = await startHarness();
    const mock = mockEveryClient({ client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" });
    try {
      const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });
      expect(await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h) })).toBe(EXIT.ok);
      const clients = mock.calls().map((call) => call.thisValue as SecretsManagerClient);
      expect(clients.length).toBeGreaterThan(0);
      for (const client of clients) expect(await client.config.region()).toBe("eu-west-1");
      expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(1);
      expect(out.stdout).toContain(`Signing in at ${h.url} with client_id sandbox-client; the token goes to secret ${ARN}.`);
    } finally {
      mock.restore();
    }
  });

  it("refuses an AWS_REGION that contradicts the ARN, naming both, before any AWS call or browser (exit 2)", async () => {
    const mock = mockEveryClient({});
    try {
      const { code, stderr } = await runInProcess(["authorize", "--no-open", "--secret-id", ARN], { QASHIO_BASE_URL: "http://127.0.0.1:9", AWS_REGION: "us-east-1" });
      expect(code).toBe(EXIT.usage);
      // mutant: the fix's "or set it to <region>" dropped went unseen
      expect(stderr).toContain("AWS_REGION: is us-east-1, but the secret ARN is in eu-west-1: unset AWS_REGION (the ARN's region is used) or set it to eu-west-1");
      expect(mock.calls()).toHaveLength(0);
    } finally {
      mock.restore();
    }
  });

  it("needs a region for a secret name: AWS_REGION is used, and without one it says so before the browser opens", async () => {
    noAwsRegionConfigured();
    const mock = mockEveryClient({});
    try {
      let opened = false;
      const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
      const error = await authorizeCommand({ ...args, secretId: "qashio-acme" }, cli, { onAuthorizeUrl: () => void (opened = true) }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/AWS_REGION: is not set and no profile names a region, .*it is a secret name, not an ARN/);
      expect(opened).toBe(false);
      expect(mock.calls()).toHaveLength(0);

      const { io: withRegion } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9", AWS_REGION: "eu-central-1" });
      // The empty secret has no client: the command stops there, after reading it in AWS_REGION.
      await expect(authorizeCommand({ ...args, secretId: "qashio-acme" }, withRegion)).rejects.toThrow(/QASHIO_CLIENT_ID: is not set and the secret has none/);
      expect(await (mock.call(0).thisValue as SecretsManagerClient).config.region()).toBe("eu-central-1");
    } finally {
      mock.restore();
    }
  });

  it("says a secret name not found in the region it was looked up in is not there, before the browser opens, rather than that it has no client", async () => {
    const mock = mockClient(SecretsManagerClient);
    const notFound = () => Object.assign(new Error("Secrets Manager can't find the specified secret."), { name: "ResourceNotFoundException", $metadata: { httpStatusCode: 400 } });
    mock.on(GetSecretValueCommand).rejects(notFound());
    mock.on(DescribeSecretCommand).rejects(notFound());
    try {
      let opened = false;
      const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9", AWS_REGION: "eu-central-1" });
      const error = await authorizeCommand({ ...args, secretId: "qashio-acme" }, cli, { onAuthorizeUrl: () => void (opened = true) }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SecretOnboardingError);
      expect((error as Error).message).toMatch(/^there is no secret qashio-acme in eu-central-1 .*: pass the tenant stack's output SecretArn/);
      expect(opened).toBe(false);
      expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(0);
    } finally {
      mock.restore();
    }
  });

  it("refuses an id that starts like an ARN but is not a secret ARN (exit 2)", async () => {
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    const error = await authorizeCommand({ ...args, secretId: "arn:aws:ssm:eu-west-1:111122223333:parameter/x" }, cli).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain("is not a Secrets Manager secret ARN");
  });

  it("refuses a QASHIO_CLIENT_ID that differs from the secret's client before the browser opens", async () => {
    const secrets = new SecretsManagerClient({ region: "eu-west-1" });
    const mock = mockClient(secrets);
    mock.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ client_id: "tenant-client", client_secret: "s", pii_salt: "from-cdk-0123456789abcdef" }), VersionId: "v1" });
    let opened = false;
    const { io: cli } = io({ ...CLIENT_ENV, QASHIO_CLIENT_ID: "local-mode-client" });
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { secrets, onAuthorizeUrl: () => void (opened = true) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(`QASHIO_CLIENT_ID: differs from the client_id in secret ${ARN}`);
    expect(opened).toBe(false);
    expect(mock.commandCalls(PutSecretValueCommand)).toHaveLength(0);
  });

  it("stores the client secret it signed in with, so a client secret changed at the provider reaches the pollers", async () => {
    const h = await startHarness();
    const secrets = new SecretsManagerClient({ region: "eu-west-1" });
    const mock = mockClient(secrets);
    mock.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ client_id: "sandbox-client", client_secret: "secret-before-the-change", refresh_token: "rt-old", pii_salt: "from-cdk-0123456789abcdef" }),
      VersionId: "v1",
    });
    mock.on(PutSecretValueCommand).resolves({ VersionId: "v2" });
    mock.on(DescribeSecretCommand).resolves({});
    const { io: cli } = io({ QASHIO_BASE_URL: h.url, QASHIO_CLIENT_SECRET: "sandbox-secret" });
    expect(await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets })).toBe(EXIT.ok);
    const written = JSON.parse(mock.commandCalls(PutSecretValueCommand)[0]?.args[0].input.SecretString ?? "{}") as Record<string, string>;
    expect(written).toMatchObject({ client_id: "sandbox-client", client_secret: "sandbox-secret", pii_salt: "from-cdk-0123456789abcdef" });
    expect(written.refresh_token).not.toBe("rt-old");
  });
});

describe("bridge authorize: the token lease a running bridge refreshes under", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await createTestTable("authorize");
  });
  afterAll(async () => {
    await table.drop();
  });

  const TENANT = "acme";
  const LEASE = leaseNames.tokenRefresh(TENANT);
  /** The tenant's secret as the stack leaves it, tagged with the lease's tenant and table, the client filled in. */
  function tenantSecret(tableName = table.tableName): FakeSecretsManager {
    const fake = new FakeSecretsManager(ARN, { client_id: "sandbox-client", client_secret: "sandbox-secret", refresh_token: "rt-before", pii_salt: "from-cdk-0123456789abcdef" });
    fake.tags = { "qashio-bridge:tenant": TENANT, "qashio-bridge:lease-table": tableName };
    return fake;
  }
  /** A poller of another process: its own DynamoDB client on the same table. */
  function poller(): DynamoLeaseLock {
    return new DynamoLeaseLock({ doc: DynamoDBDocumentClient.from(table.client), tableName: table.tableName });
  }
  const writes = (fake: FakeSecretsManager) => fake.calls.filter((call) => call.operation === "PutSecretValue");

  it("writes the secret while holding the pollers' lease, found through the secret's tags, and gives it back", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const held = fake.holdNext("PutSecretValue");
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });

    let freeBeforeSignIn = false;
    const signIn = async (url: string) => {
      // The check before the browser opens gave the lease back.
      const probe = await poller().tryAcquire(LEASE, 30_000);
      freeBeforeSignIn = probe !== undefined;
      await probe?.release();
      await approve(h)(url);
    };
    const run = authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: signIn, secrets: fake.client, dynamo: table.doc });
    await held.reached;
    expect(freeBeforeSignIn).toBe(true);
    expect(await poller().tryAcquire(LEASE, 30_000), "a poller got the lease during the write").toBeUndefined();
    held.release();

    expect(await run).toBe(EXIT.ok);
    expect(fake.current().refresh_token).not.toBe("rt-before");
    expect(out.stderr).not.toContain("warning");
    // Said before the browser opens: the ARN's generated name does not show whose secret it is (another tenant's, pasted
    // from another shell, would get this company's token).
    expect(out.stdout).toContain(`Signing in at ${h.url} with client_id sandbox-client; the token goes to secret ${ARN}, of tenant ${TENANT}.`);
    const after = await poller().tryAcquire(LEASE, 30_000);
    expect(after, "the lease was not given back").toBeDefined();
    await after?.release();
  });

  it("gives the lease back when the secret cannot be written, so the pollers refresh at once, not after it runs out", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    fake.failNext("PutSecretValue", awsError("AccessDeniedException"), 5);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });

    await expect(authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: table.doc })).rejects.toThrow(
      /AccessDeniedException/,
    );
    expect(fake.current().refresh_token).toBe("rt-before");
    const after = await poller().tryAcquire(LEASE, 30_000);
    expect(after, "the lease was not given back").toBeDefined();
    await after?.release();
  });

  it("waits while a poller holds the lease, and writes only once it is given back", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const refreshing = await poller().tryAcquire(LEASE, 30_000);
    expect(refreshing).toBeDefined();
    let leaseAttempts = 0;
    const doc = DynamoDBDocumentClient.from(table.client);
    const send = doc.send.bind(doc);
    vi.spyOn(doc, "send").mockImplementation(((command: { input: { Item?: { name?: string } } }) => {
      if (command.input.Item?.name === LEASE) leaseAttempts += 1;
      return send(command as never);
    }) as never);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });

    const run = authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: doc });
    // One try before the browser, then at least two while saving: the save is waiting.
    await vi.waitFor(() => expect(leaseAttempts).toBeGreaterThanOrEqual(3), { timeout: 10_000, interval: 20 });
    expect(writes(fake), "written while a poller held the lease").toHaveLength(0);
    await refreshing?.release();

    expect(await run).toBe(EXIT.ok);
    expect(writes(fake)).toHaveLength(1);
    expect(fake.current().refresh_token).not.toBe("rt-before");
  });

  it("judges the lease by AWS's time, not by a clock that runs fast: a poller's live lease is never taken", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    // What the SDK records after any response whose Date header is 40 s behind this machine's clock.
    fake.client.config.systemClockOffset = -40_000;
    const fast: Clock = { now: () => Date.now() + 40_000, sleep: realSleep };
    const refreshing = await poller().tryAcquire(LEASE, 30_000);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });
    try {
      const error = await authorizeCommand(
        { ...args, secretId: ARN },
        cli,
        { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: table.doc, clock: fast, lockWaitMs: 300 },
      ).catch((e: unknown) => e);
      expect((error as Error).message).toContain(`a running bridge held the token lease "${LEASE}"`);
      expect(writes(fake)).toHaveLength(0);
    } finally {
      await refreshing?.release();
    }
  });

  it("waits its bound in real time though AWS's time is pulled back an hour mid-wait (the SDK's offset), then gives up", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const doc = DynamoDBDocumentClient.from(table.client);
    const send = doc.send.bind(doc);
    let puts = 0;
    vi.spyOn(doc, "send").mockImplementation(((command: object) => {
      if (command instanceof PutCommand) {
        puts += 1;
        // A wait stretched by the step fails here, long before the test's timeout (a try every 250 ms).
        if (puts > 10) return Promise.reject(new Error(`put ${puts} times: the wait outlasted its bound`));
        // The save's first try: what the SDK records after a response whose Date header is an hour behind.
        if (puts === 2) fake.client.config.systemClockOffset = -60 * 60_000;
      }
      return send(command as never);
    }) as never);
    const refreshing = await poller().tryAcquire(LEASE, 30_000);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });
    try {
      const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: doc, lockWaitMs: 600 }).catch(
        (e: unknown) => e,
      );
      expect((error as Error).message).toContain(`a running bridge held the token lease "${LEASE}" for 600 ms`);
      expect(puts).toBeLessThanOrEqual(1 + 4);
      expect(writes(fake)).toHaveLength(0);
    } finally {
      await refreshing?.release();
    }
  });

  it("names only the error's name when the lease cannot be taken for the write, and writes nothing", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    let signedIn = false;
    const doc = DynamoDBDocumentClient.from(table.client);
    const send = doc.send.bind(doc);
    vi.spyOn(doc, "send").mockImplementation(((command: object) => {
      if (command instanceof PutCommand && signedIn) return Promise.reject(Object.assign(awsError("AccessDeniedException"), { message: "User: arn:aws:iam::1:user/dev is not authorized" }));
      return send(command as never);
    }) as never);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });
    const signIn = async (url: string) => {
      signedIn = true;
      await approve(h)(url);
    };
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: signIn, secrets: fake.client, dynamo: doc }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthorizeError);
    expect((error as Error).message).toBe(`cannot take the token lease "${LEASE}": AccessDeniedException; this sign-in was not stored: run authorize again`);
    expect(writes(fake)).toHaveLength(0);
  });

  it("reports success when the secret was written but giving the lease back failed, with a warning", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const doc = DynamoDBDocumentClient.from(table.client);
    const send = doc.send.bind(doc);
    vi.spyOn(doc, "send").mockImplementation(((command: object) => {
      if (command instanceof DeleteCommand && writes(fake).length > 0) return Promise.reject(awsError("ProvisionedThroughputExceededException"));
      return send(command as never);
    }) as never);
    const { io: cli, out } = io({ QASHIO_BASE_URL: h.url });
    expect(await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: doc })).toBe(EXIT.ok);
    expect(fake.current().refresh_token).not.toBe("rt-before");
    expect(out.stderr).toContain(`warning: giving the token lease "${LEASE}" back failed (ProvisionedThroughputExceededException); it runs out by itself`);
    expect(out.stdout).toContain(`Tokens stored in secret ${ARN}`);
  });

  it("builds its table client in the secret's region, with the secret client's credentials", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const mock = mockClient(DynamoDBDocumentClient);
    mock.resolves({});
    try {
      const { io: cli } = io({ QASHIO_BASE_URL: h.url });
      expect(await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client })).toBe(EXIT.ok);
      const client = mock.call(0).thisValue as DynamoDBDocumentClient;
      expect(await client.config.region()).toBe("eu-west-1");
      expect(await client.config.credentials()).toMatchObject({ accessKeyId: "x" });
      expect(mock.commandCalls(PutCommand)[0]?.args[0].input).toMatchObject({ TableName: table.tableName, Item: { name: LEASE } });
    } finally {
      mock.restore();
    }
  });

  it("gives up when the lease stays held, saying the sign-in was not stored, and leaves the secret as it was", async () => {
    const h = await startHarness();
    const fake = tenantSecret();
    const refreshing = await poller().tryAcquire(LEASE, 30_000);
    const { io: cli } = io({ QASHIO_BASE_URL: h.url });
    try {
      const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { onAuthorizeUrl: approve(h), secrets: fake.client, dynamo: table.doc, lockWaitMs: 300 }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(AuthorizeError);
      expect((error as Error).message).toBe(
        `a running bridge held the token lease "${LEASE}" for 300 ms, so this sign-in was not stored (the bridge goes on with the previous one): run authorize again`,
      );
      expect(writes(fake)).toHaveLength(0);
      expect(fake.current().refresh_token).toBe("rt-before");
    } finally {
      await refreshing?.release();
    }
  });

  /** Runs authorize --secret-id against `fake` and returns what it threw, and whether it got as far as the browser. */
  async function refusal(fake: FakeSecretsManager): Promise<{ error: unknown; opened: boolean }> {
    let opened = false;
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { secrets: fake.client, dynamo: table.doc, onAuthorizeUrl: () => void (opened = true) }).catch(
      (e: unknown) => e,
    );
    return { error, opened };
  }

  it("refuses before the browser opens when the tagged table cannot take the lease, naming the table", async () => {
    const fake = tenantSecret("no-such-table");
    const { error, opened } = await refusal(fake);
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect((error as Error).message).toMatch(
      new RegExp(`^cannot take the token lease "${LEASE}" in table no-such-table \\(tagged on secret ${ARN}\\): ResourceNotFoundException: .+`),
    );
    expect(opened).toBe(false);
    expect(writes(fake)).toHaveLength(0);
  });

  it("refuses before the browser opens when the lease can be taken but not renewed, naming the table, and gives it back", async () => {
    // A tenant of its own: an earlier test leaves the other's lease to run out by itself.
    const fake = tenantSecret();
    fake.tags = { ...fake.tags, "qashio-bridge:tenant": "globex" };
    const lease = leaseNames.tokenRefresh("globex");
    const doc = DynamoDBDocumentClient.from(table.client);
    const send = doc.send.bind(doc);
    vi.spyOn(doc, "send").mockImplementation(((command: object) => {
      if (command instanceof UpdateCommand) return Promise.reject(awsError("AccessDeniedException"));
      return send(command as never);
    }) as never);
    let opened = false;
    const { io: cli } = io({ QASHIO_BASE_URL: "http://127.0.0.1:9" });
    const error = await authorizeCommand({ ...args, secretId: ARN }, cli, { secrets: fake.client, dynamo: doc, onAuthorizeUrl: () => void (opened = true) }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect((error as Error).message).toMatch(new RegExp(`^cannot renew the token lease "${lease}" in table ${table.tableName} \\(tagged on secret ${ARN}\\): AccessDeniedException`));
    expect(opened).toBe(false);
    expect(writes(fake)).toHaveLength(0);
    // Given back: a poller takes it at once.
    const again = await poller().tryAcquire(lease, 30_000);
    expect(again).toBeDefined();
    await again?.release();
  });

  it("refuses before the browser opens when the secret cannot be described, naming why it is asked", async () => {
    const fake = tenantSecret();
    fake.failNext("DescribeSecret", awsError("AccessDeniedException"));
    const { error, opened } = await refusal(fake);
    expect(error).toBeInstanceOf(SecretOnboardingError);
    expect((error as Error).message).toBe(
      `cannot describe secret ${ARN} (its tags name the token lease the pollers refresh under): AccessDeniedException ` +
        `(use AWS credentials of the tenant's account 111122223333 allowed what README's "3. Onboard: authorize once" lists)`,
    );
    expect(opened).toBe(false);
  });

  it("in local mode, says it waits for the state directory's token lock, and stores once it is given back", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const refreshing = await new FileLock(stateDir).tryAcquire(DEFAULT_LOCK_NAME, 30_000);
    const { io: cli, out } = io(env);
    const run = authorizeCommand({ ...args }, cli, { onAuthorizeUrl: approve(h) });
    await vi.waitFor(() => expect(out.stderr).toContain(`A running bridge (pid ${process.pid} on this machine) holds the token lease "${DEFAULT_LOCK_NAME}"; waiting up to 60 s for it ...`), { timeout: 10_000 });
    await expect(readFile(join(stateDir, "tokens.json"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
    await refreshing?.release();
    expect(await run).toBe(EXIT.ok);
    expect(JSON.parse(await readFile(join(stateDir, "tokens.json"), "utf8"))).toHaveProperty("refreshToken");
  });

  it("stops waiting for the lease on Ctrl-C, saying the sign-in was not stored", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const refreshing = await new FileLock(stateDir).tryAcquire(DEFAULT_LOCK_NAME, 30_000);
    const interrupt = new AbortController();
    const { io: base, out } = io(env);
    const cli = { ...base, signal: interrupt.signal };
    try {
      const run = authorizeCommand({ ...args }, cli, { onAuthorizeUrl: approve(h) }).catch((e: unknown) => e);
      await vi.waitFor(() => expect(out.stderr).toContain("waiting up to"), { timeout: 10_000 });
      const started = Date.now();
      interrupt.abort();
      const error = await run;
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error).toBeInstanceOf(AuthorizeError);
      expect((error as Error).message).toBe(`interrupted while waiting for the token lease "${DEFAULT_LOCK_NAME}": this sign-in was not stored`);
    } finally {
      await refreshing?.release();
    }
  });

  it("says a Ctrl-C during the code exchange cancelled the sign-in (no lease was waited for), and stores nothing", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const interrupt = new AbortController();
    const { io: base, out } = io(env);
    const cli = { ...base, signal: interrupt.signal };
    // The person presses Ctrl-C while the token endpoint answers.
    const exchanging: FetchLike = (input, init) => {
      interrupt.abort();
      return fetch(input, init);
    };
    const error = await authorizeCommand({ ...args }, cli, { onAuthorizeUrl: approve(h), fetch: exchanging }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthorizeError);
    expect((error as Error).message).toBe("authorization cancelled: this sign-in was not stored");
    expect(out.stderr).not.toContain("lease");
    await expect(readFile(join(stateDir, "tokens.json"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("in local mode, gives up when the state directory's token lock stays held, and stores nothing", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const stateDir = h.env.BRIDGE_STATE_DIR as string;
    const refreshing = await new FileLock(stateDir).tryAcquire(DEFAULT_LOCK_NAME, 30_000);
    const { io: cli } = io(env);
    try {
      // A wait of a whole second is told in seconds.
      const error = await authorizeCommand({ ...args }, cli, { onAuthorizeUrl: approve(h), lockWaitMs: 1_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthorizeError);
      expect((error as Error).message).toContain(`a running bridge (pid ${process.pid} on this machine) held the token lease "${DEFAULT_LOCK_NAME}" for 1 s, so`);
      await expect(readFile(join(stateDir, "tokens.json"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      await refreshing?.release();
    }
  });
});
