/**
 * Helpers of the CLI tests: a sandbox on a loopback port, a bridge environment authorized against it,
 * the bridge run as a child process or in-process (or opened in-process), and readers of the events file.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach } from "vitest";
import { createSandbox, type Sandbox } from "../../sandbox/index.js";
import type { Logger } from "../../shared/bridge/ports.js";
import type { EventBridgeEnvelope } from "../../shared/local/index.js";
import { exchangeCode } from "../../shared/qashio/auth/oauth.js";
import { readLocalSettings, type LocalSettings } from "../../shared/cli/config.js";
import { EXIT } from "../../shared/cli/errors.js";
import type { CliIo } from "../../shared/cli/io.js";
import { openLocalBridge, type LocalBridge, type LocalBridgeOptions } from "../../shared/cli/local-bridge.js";
import { main } from "../../shared/cli/main.js";
import type { RunArgs } from "../../shared/cli/args.js";
import { runCommand, type RunSeams } from "../../shared/cli/run.js";

export const ROOT = new URL("../../", import.meta.url).pathname;
/** tsx's ESM loader by absolute URL, so a child started outside the repository still finds it. */
export const TSX_LOADER = pathToFileURL(join(ROOT, "node_modules/tsx/dist/loader.mjs")).href;
export const CLIENT = { id: "sandbox-client", secret: "sandbox-secret" };
const REDIRECT_URI = "http://127.0.0.1:9/callback";

export interface Harness {
  readonly sandbox: Sandbox;
  readonly url: string;
  readonly companyId: string;
  readonly dir: string;
  readonly eventsFile: string;
  /** Environment of the bridge: settings only (no inherited variables). */
  readonly env: Record<string, string>;
  /** Calls the control surface over HTTP. */
  control(method: string, path: string, body?: unknown): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Starts a sandbox on an ephemeral loopback port and a bridge environment whose QASHIO_REFRESH_TOKEN comes
 * from a real authorization-code exchange; the state directory starts empty.
 */
export async function startHarness(options: { seed?: number; transactions?: number; startTime?: string; accessTokenTtlSeconds?: number } = {}): Promise<Harness> {
  const { seed = 1, transactions: _transactions, ...sandboxOptions } = options;
  const sandbox = createSandbox({ seed, ...sandboxOptions });
  if (options.transactions !== undefined) sandbox.control.reset({ transactions: options.transactions });
  const server = await sandbox.listen(0);
  const [company] = sandbox.control.companies();
  if (company === undefined) throw new Error("no company");
  const code = sandbox.control.issueAuthorizationCode({ companyId: company.id, redirectUri: REDIRECT_URI });
  const tokens = await exchangeCode({ baseUrl: server.url, clientId: CLIENT.id, clientSecret: CLIENT.secret }, { code, redirectUri: REDIRECT_URI });
  const dir = await mkdtemp(join(tmpdir(), "cli-e2e-"));
  const eventsFile = join(dir, "events.jsonl");
  return {
    sandbox,
    url: server.url,
    companyId: company.id,
    dir,
    eventsFile,
    env: {
      QASHIO_BASE_URL: server.url,
      QASHIO_CLIENT_ID: CLIENT.id,
      QASHIO_CLIENT_SECRET: CLIENT.secret,
      QASHIO_REFRESH_TOKEN: tokens.refresh_token,
      BRIDGE_TENANT: "acme",
      BRIDGE_STATE_DIR: join(dir, "state"),
      BRIDGE_EVENTS_FILE: eventsFile,
      BRIDGE_LOG_LEVEL: "warn",
    },
    async control(method, path, body) {
      const response = await fetch(`${server.url}/_sandbox${path.replace("{company}", company.id)}`, {
        method,
        headers: { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`control ${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    },
    async close() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts harnesses that close after each test of the file that calls this (at its top level): the set-up every
 * harness test file otherwise writes out (a `let`, an `afterEach` closing it).
 */
export function harnessPerTest(): (options?: Parameters<typeof startHarness>[0]) => Promise<Harness> {
  let open: Harness | undefined;
  afterEach(async () => {
    await open?.close();
    open = undefined;
  });
  return async (options) => (open = await startHarness(options));
}

/** A logger that drops everything: for tests whose bridge's words are not what they check. */
/** The settings `run` requires, each with a value `readLocalSettings` takes: a test adds or overrides its own. */
export const REQUIRED_RUN_SETTINGS: Readonly<Record<string, string>> = {
  QASHIO_BASE_URL: "https://api.example.com",
  QASHIO_CLIENT_ID: "c",
  QASHIO_CLIENT_SECRET: "s",
  QASHIO_REFRESH_TOKEN: "r",
  BRIDGE_TENANT: "t",
};

/** The settings error `readLocalSettings` gives for {@link REQUIRED_RUN_SETTINGS} plus `env`, read in `cwd`, or "accepted". */
export function settingsRefusalOf(env: Record<string, string>, cwd: string): string {
  try {
    readLocalSettings({ ...REQUIRED_RUN_SETTINGS, ...env }, cwd);
    return "accepted";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

export const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * A logger that drops all but its warnings, which it keeps in order as `[message, fields]` (fields undefined where a
 * warning gave none); `messages()` lists their messages alone. Empty `warnings` (`length = 0`) to start anew.
 *
 * @example
 * const { logger, warnings } = warningRecorder();
 */
export function warningRecorder(): { logger: Logger; warnings: [message: string, fields: unknown][]; messages: () => string[] } {
  const warnings: [string, unknown][] = [];
  return {
    logger: { ...silentLogger, warn: (message, fields) => void warnings.push([message, fields]) },
    warnings,
    messages: () => warnings.map(([message]) => message),
  };
}

/**
 * Opens `h`'s bridge in this process: its settings read from `h`'s env and dir, as `run` reads them, and `options`
 * passed on to `openLocalBridge` (its env `h`'s, its logger {@link silentLogger} unless given). Pass `{ ...h, env }`
 * for other settings. Resolves with the bridge and the settings it was opened with.
 *
 * @example
 * const { bridge, settings } = await openHarnessBridge(harness, { fetch });
 */
export async function openHarnessBridge(
  h: Pick<Harness, "env" | "dir">,
  options: Partial<LocalBridgeOptions> = {},
): Promise<{ bridge: LocalBridge; settings: LocalSettings }> {
  const settings = readLocalSettings(h.env, h.dir);
  const bridge = await openLocalBridge(settings, { env: h.env, logger: silentLogger, ...options });
  return { bridge, settings };
}

export interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The child's environment: PATH and HOME only, plus the given settings (no inherited QASHIO_/BRIDGE_ variables). */
function childEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1", ...env };
}

/** Spawns `node --import tsx bridge.ts <args>` (what `npm run bridge --` runs) in `cwd`. */
export function spawnBridge(args: readonly string[], env: Record<string, string>, cwd = ROOT): ChildProcess & { outcome: Promise<Outcome> } {
  return spawnScript(join(ROOT, "bridge.ts"), args, env, cwd);
}

/** Spawns `node --import tsx <script> <args>` in `cwd` with {@link spawnBridge}'s environment and outcome. */
export function spawnScript(script: string, args: readonly string[], env: Record<string, string>, cwd = ROOT): ChildProcess & { outcome: Promise<Outcome> } {
  const child = spawn(process.execPath, ["--import", TSX_LOADER, script, ...args], { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const outcome = new Promise<Outcome>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return Object.assign(child, { outcome });
}

/** Runs `bridge.ts <args>` in this process through `main`, with its own streams and stop signal. */
export async function runInProcess(args: readonly string[], env: Record<string, string>, signal = new AbortController().signal, cwd = ROOT): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    env: childEnv(env),
    cwd,
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    signal,
  });
  return { code, stdout, stderr };
}

/**
 * Runs `h`'s bridge once (its tokens stored), then moves the provider's clock an hour on and adds two transactions:
 * the next run must refresh. Resolves with the token file and a reader of it.
 */
export async function dueForRefresh(h: Harness): Promise<{ tokensFile: string; stored: () => Promise<string> }> {
  const first = await runInProcess(["run", "--once"], h.env);
  if (first.code !== EXIT.ok) throw new Error(`the first run ended with ${String(first.code)}: ${first.stderr}`);
  await h.control("POST", "/clock", { advance_seconds: 3_600 });
  await h.control("POST", "/companies/{company}/transactions", { count: 2 });
  const tokensFile = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
  return { tokensFile, stored: () => readFile(tokensFile, "utf8") };
}

/** Streams for a command called in this process with `h`'s settings and `signal`; `out` collects what it writes. */
export function capturedIo(h: Harness, signal: AbortSignal): { io: CliIo; out: { stdout: string; stderr: string } } {
  const out = { stdout: "", stderr: "" };
  const io: CliIo = {
    env: h.env,
    cwd: h.dir,
    stdout: { write: (chunk: string) => (out.stdout += chunk) },
    stderr: { write: (chunk: string) => (out.stderr += chunk) },
    signal,
  };
  return { io, out };
}

/**
 * Runs `run --interval` in this process with `h`'s settings, its pauses standing in for the interval's waits: the loop's
 * nth pause awaits `steps[n - 1]` (what changes between cycles), and the pause after the last step stops the loop.
 * `args` adds to the command's arguments (`newPiiSalt`) and `seams` to its seams (a clock); pass `{ ...h, env }` for
 * other settings. Resolves with the command's exit code or the error it threw (`outcome`), what it wrote, how many
 * pauses it took (`waits`) and the length of each (`pauses`, in ms).
 *
 * @example
 * const { outcome, stdout } = await loopWithSteps(h, [() => chmod(state, 0o775)]);
 */
export async function loopWithSteps(
  h: Harness,
  steps: readonly (() => unknown)[],
  options: { args?: Partial<RunArgs>; seams?: Omit<RunSeams, "pause"> } = {},
): Promise<{ outcome: unknown; stdout: string; stderr: string; waits: number; pauses: number[] }> {
  const controller = new AbortController();
  const { io, out } = capturedIo(h, controller.signal);
  const pauses: number[] = [];
  const outcome = await runCommand({ once: false, intervalMs: 60_000, ...options.args }, io, {
    ...options.seams,
    pause: async (ms) => {
      const step = steps[pauses.length];
      pauses.push(ms);
      if (step === undefined) controller.abort();
      else await step();
    },
  }).catch((error: unknown) => error);
  return { outcome, ...out, waits: pauses.length, pauses };
}

/** Every line of the events file, parsed (none when the file does not exist). */
export async function readEvents(file: string): Promise<EventBridgeEnvelope[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as EventBridgeEnvelope);
}

/** Ids of the company's transactions with one of the given `client_sync_status` values. */
export function idsWithStatus(h: Harness, ...statuses: string[]): string[] {
  const data = h.sandbox.control.company(h.companyId);
  if (data === undefined) return [];
  return data.transactions
    .all()
    .filter((t) => statuses.includes(t.client_sync_status))
    .map((t) => t.id);
}

/**
 * An authorize flow as a test drives it: `onAuthorizeUrl` hands the URL over and returns at once (so the flow can
 * settle without waiting for the test's browser), `url` is that URL, `pending()` says whether the flow is still
 * waiting, and `visit` follows a redirect as a browser would, failing at once with a message naming the cause if the
 * flow fails before its page comes.
 *
 * @example
 * const flow = authorizeFlow();
 * const run = flow.watch(authorizeWithBrowser({ ...options, onAuthorizeUrl: flow.onAuthorizeUrl }));
 */
export function authorizeFlow() {
  let show: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (show = resolve));
  let settled = false;
  let ended: Promise<never> = new Promise<never>(() => undefined);
  return {
    url,
    onAuthorizeUrl: (shown: string): void => show(shown),
    watch<T>(run: Promise<T>): Promise<T> {
      // A flow that succeeds has sent its page first; one that fails may never answer the redirect.
      ended = run.then(
        () => new Promise<never>(() => undefined),
        (error: unknown) => Promise.reject(new Error(`the authorize flow failed before this redirect was answered: ${String(error)}`)),
      );
      ended.catch(() => undefined);
      run.then(
        () => (settled = true),
        () => (settled = true),
      );
      return run;
    },
    /** True while the flow waits; checked after a short pause, so a flow a redirect ended has had time to end. */
    async pending(): Promise<boolean> {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return !settled;
    },
    async visit(redirect: URL): Promise<{ status: number; text: string }> {
      const page = fetch(redirect).then(async (response) => ({ status: response.status, text: await response.text() }));
      return Promise.race([page, ended]);
    },
  };
}

/** Approves in the sandbox as the person would, then follows the redirect with the given state (an `onAuthorizeUrl`). */
export function approve(h: Harness, state?: string) {
  return async (url: string): Promise<void> => {
    const authorize = new URL(url);
    const redirectUri = authorize.searchParams.get("redirect_uri") ?? "";
    const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri, scope: authorize.searchParams.get("scope") ?? undefined });
    const redirect = new URL(redirectUri);
    redirect.searchParams.set("code", code);
    redirect.searchParams.set("state", state ?? authorize.searchParams.get("state") ?? "");
    await fetch(redirect);
  };
}
