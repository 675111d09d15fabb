/**
 * README's "Try it: `npm start`", "Local mode" and "Onboarding an AWS tenant" held to the code: the paces, bounds,
 * names and counts they give a reader, read out of the sections and compared with what the code defines or does.
 * Held elsewhere: the demo's sample output and what it remembers (test/cli/demo.test.ts), the settings and exit code
 * tables (test/cli/main.test.ts), the events file's account and region and its 256 KB note (test/local/adapters.test.ts).
 */
import { describe, expect, it } from "vitest";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { PII_SALT_MIN_LENGTH } from "../../shared/bridge/pii.js";
import { MAX_ENTRY_BYTES } from "../../shared/aws/event-size.js";
import { SECRET_TAGS } from "../../shared/aws/keys.js";
import { parseCommand, type ParsedCommand } from "../../shared/cli/args.js";
import { AUTHORIZE_LEASE_WAIT_MS } from "../../shared/cli/authorize-command.js";
import { readLocalSettings } from "../../shared/cli/config.js";
import { DEFAULT_SCOPES } from "../../shared/cli/cycle-scopes.js";
import { TRANSACTIONS_BUDGET_SHARE } from "../../shared/cli/local-cycles.js";
import { formatEvent, shouldColour } from "../../shared/cli/printer.js";
import { createSandbox, SANDBOX_CLIENT } from "../../sandbox/index.js";
import { parseMainArgs } from "../../sandbox/main.js";
import { docText, firstTextsSaid, numbersSaid, textBetween, textsSaid } from "../doc-text.js";
import { seconds } from "../spec-gaps-section.js";

const README = docText("README.md");

/** README from heading `from` up to heading `to`, line breaks read as spaces. */
const between = (from: string, to: string): string => textBetween(README, from, to);

const DEMO = between("## Try it: `npm start`", "## Architecture");
const LOCAL = between("## Local mode", "### Onboarding an AWS tenant");
const ONBOARDING = between("### Onboarding an AWS tenant", "## Provider sandbox");

/** The arguments `argv` parses to, for a command line the parser takes. */
function argsOf<C extends ParsedCommand["command"]>(command: C, argv: string[] = []): Extract<ParsedCommand, { command: C }> {
  const parsed = parseCommand([command, ...argv]);
  if (parsed.command !== command) throw new Error(`${command} parsed as ${parsed.command}`);
  return parsed as Extract<ParsedCommand, { command: C }>;
}

describe("README, Try it: npm start", () => {
  it("gives the demo's pace and seed as the ones it runs without --interval and --seed", () => {
    const { intervalMs, seed } = argsOf("demo").args;
    expect(numbersSaid(DEMO, /runs a cycle every (\d+) s while/)).toEqual([[seconds(intervalMs)]]);
    expect(numbersSaid(DEMO, /`--interval` another pace than (\d+) s/)).toEqual([[seconds(intervalMs)]]);
    expect(numbersSaid(DEMO, /\(seed (\d+), the default/)).toEqual([[seed]]);
  });

  it("names the colour switches that turn colour off and on, FORCE_COLOR winning over NO_COLOR", () => {
    const [off, forceOff, offValue, forceOn, onValue, beside] = firstTextsSaid(DEMO, /`(\w+)` and `(\w+)=(\d)` turn it off, `(\w+)=(\d)` on, even beside `(\w+)`/);
    const tty = { write: () => true, isTTY: true };
    const pipe = { write: () => true, isTTY: false };
    expect(shouldColour(tty, { [off ?? ""]: "1" })).toBe(false);
    expect(shouldColour(tty, { [forceOff ?? ""]: offValue ?? "" })).toBe(false);
    expect(shouldColour(pipe, { [forceOn ?? ""]: onValue ?? "", [beside ?? ""]: "1" })).toBe(true);
  });

  it("names as the changes a line counts, not shows, the bookkeeping moves the printer holds back", () => {
    const [first, second] = firstTextsSaid(DEMO, /A line shows at most \w+ changes and counts the rest: `\+2 more` are the `(\w+)` \/ `(\w+)` moves/);
    const [most = 0] = numbersSaid(DEMO, /A line shows at most (\w+) changes/)[0] ?? [];
    const event = (paths: string[]): BridgeEvent => ({
      source: "qashio.bridge",
      detailType: "transaction.changed",
      time: "2026-03-02T08:00:00.000Z",
      detail: {
        id: "e1",
        type: "transaction.changed",
        schema_version: "1",
        tenant: "acme",
        occurred_at: "2026-03-01T10:15:02.000Z",
        subject: { type: "transaction", id: "t1", qashio_id: "CT1", sequence: 2 },
        data: { object: {}, changes: paths.map((path) => ({ path: `/${path}`, before: "a", after: "b" })) },
      },
    });
    const bookkeeping = [first ?? "", second ?? ""];
    expect(formatEvent(event(["approval_status", ...bookkeeping]))).toMatch(/ approval_status: a → b, \+2 more$/);
    expect(formatEvent(event(bookkeeping))).toMatch(new RegExp(` ${first}: a → b, ${second}: a → b$`));
    const many = Array.from({ length: most + 1 }, (_, i) => `field_${i}`);
    const shown = many.slice(0, most).map((path) => `${path}: a → b`);
    expect(formatEvent(event(many)).endsWith(` ${[...shown, "+1 more"].join(", ")}`)).toBe(true);
  });
});

describe("README, Local mode", () => {
  it("gives EventBridge's entry limit the events file does not hold to as the one the AWS publisher does", () => {
    expect(numbersSaid(LOCAL, /must stay under (\d+) KB/)).toEqual([[(MAX_ENTRY_BYTES + 1) / 1024]]);
  });

  it("shows authorize asking, in its example, the scopes and timeout it asks when they are left out", () => {
    const { scope, timeoutMs } = argsOf("authorize").args;
    expect(scope).toBeUndefined();
    expect(textsSaid(LOCAL, /\[--scope "([^"]+)"\]/)).toEqual([[DEFAULT_SCOPES]]);
    const [timeout] = firstTextsSaid(LOCAL, /\[--timeout (\w+)\]/);
    expect(argsOf("authorize", ["--timeout", timeout ?? ""]).args.timeoutMs).toBe(timeoutMs);
  });

  it("gives run's pace without --interval as the one it keeps", () => {
    const [unit] = firstTextsSaid(LOCAL, /a cycle every (minute|hour|second) by default/);
    const given = { second: "1s", minute: "1m", hour: "1h" }[unit as "second" | "minute" | "hour"];
    expect(argsOf("run").args.intervalMs).toBe(argsOf("run", ["--interval", given]).args.intervalMs);
  });

  it("gives the cycle budget's floor, a provider call's overrun and the transactions' share as the code has them", () => {
    const [floor] = firstTextsSaid(LOCAL, /time budget of one cycle \(and of one `redrive` or `conform-pii`\), at least `(\w+)`/);
    const env = { QASHIO_BASE_URL: "http://127.0.0.1:9", QASHIO_CLIENT_ID: "c", QASHIO_CLIENT_SECRET: "s", BRIDGE_TENANT: "acme", QASHIO_REFRESH_TOKEN: "r" };
    const floorMs = readLocalSettings({ ...env, BRIDGE_CYCLE_BUDGET: floor }, "/w").cycleBudgetMs;
    expect(() => readLocalSettings({ ...env, BRIDGE_CYCLE_BUDGET: `${floorMs - 1}ms` }, "/w")).toThrow(/BRIDGE_CYCLE_BUDGET/);
    expect(numbersSaid(LOCAL, /a provider call under way may run up to (\d+) s past it/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS)]]);
    expect(numbersSaid(LOCAL, /The transactions start no page after (three quarters|half) of it/)).toEqual([[TRANSACTIONS_BUDGET_SHARE]]);
  });

  it("gives the hash salt's least length as the one the bridge and the onboarding refuse below", () => {
    expect(numbersSaid(LOCAL, /per-tenant salt of `hash` mode \(at least (\d+) characters\)/)).toEqual([[PII_SALT_MIN_LENGTH]]);
    expect(numbersSaid(ONBOARDING, /one shorter than (\d+) characters, set by hand, is refused/)).toEqual([[PII_SALT_MIN_LENGTH]]);
  });

  it("runs the standalone sandbox example with the sandbox's client, and counts cycle 1 of the company it tells you to choose", () => {
    const [port] = firstTextsSaid(LOCAL, /npm run sandbox -- --port (\d+) &/);
    const [baseUrlPort, clientId, clientSecret] = firstTextsSaid(LOCAL, /export QASHIO_BASE_URL=http:\/\/127\.0\.0\.1:(\d+) QASHIO_CLIENT_ID=(\S+) QASHIO_CLIENT_SECRET=(\S+) /);
    expect({ baseUrlPort, clientId, clientSecret }).toEqual({ baseUrlPort: port, ...SANDBOX_CLIENT });
    const [legalName] = firstTextsSaid(LOCAL, /npm run bridge -- authorize # open the printed URL, keep the first company \(([^)]+)\), Approve/);
    const [events, created, acknowledged] = numbersSaid(LOCAL, /run --once # ── cycle 1: (\d+) events \((\d+) transaction\.created\) · (\d+) acknowledged/)[0] ?? [];
    // The sandbox as that command line makes it (no --seed: its default data).
    const sandbox = createSandbox({ seed: parseMainArgs(["--port", port ?? ""]).seed });
    const [first] = sandbox.control.companies();
    const company = sandbox.control.company(first?.id ?? "");
    expect(company?.company.legalName).toBe(legalName);
    // A new state directory: cycle 1 delivers, as created, every transaction the company has not yet synced.
    const unsynced = (company?.transactions.countByStatus("not_synced") ?? 0) + (company?.transactions.countByStatus("outdated") ?? 0);
    expect([events, created, acknowledged]).toEqual([unsynced, unsynced, unsynced]);
  });
});

describe("README, Onboarding an AWS tenant", () => {
  it("names the secret's tags the lease is found through, and how long the write waits for it, as the code has them", () => {
    expect(textsSaid(ONBOARDING, /found through the secret's tags `([\w:-]+)` and `([\w:-]+)`/)).toEqual([[SECRET_TAGS.tenant, SECRET_TAGS.leaseTable]]);
    expect(numbersSaid(ONBOARDING, /the write waits up to (\d+) s for a poller/)).toEqual([[seconds(AUTHORIZE_LEASE_WAIT_MS)]]);
  });
});
