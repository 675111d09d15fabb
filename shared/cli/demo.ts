/**
 * `npm start` (= `bridge demo`): the embedded provider sandbox on a loopback port, the bridge authorized
 * against it through the real authorization-code flow, and a cycle every few seconds while the sandbox
 * generates activity through its control surface: new spend, refunds of earlier purchases, approvals
 * changing, purchases clearing, now and then a card suspended (or reactivated) in the provider's dashboard and a
 * deposit into the funding account, so the cards' accounts (auto top-up) never run dry; when no Active card can take
 * a purchase, the spend limit of one that only its limit stops raised in the dashboard, so the cards' limits do not either.
 * Every event is printed as one line; events also go to a JSON Lines file in a temp directory, which is removed when
 * the demo ends unless `--keep` is given.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { BridgeEvent } from "../bridge/ports.js";
import { createSandbox, SANDBOX_CLIENT, type Sandbox } from "../../sandbox/index.js";
import type { CardRecord, CompanyData } from "../../sandbox/data/model.js";
import { consumedOf } from "../../sandbox/data/spend-limits.js";
import { canSpendNow } from "../../sandbox/data/transactions.js";
import { Prng, round2 } from "../../sandbox/prng.js";
import { ISSUER_MAX_SPEND_LIMIT } from "../../sandbox/routes/core.js";
import { FileTokenStore } from "../local/index.js";
import type { DemoArgs } from "./args.js";
import { authorizeWithBrowser } from "./authorize.js";
import { DEFAULT_SCOPES } from "./cycle-scopes.js";
import { DEFAULT_CYCLE_BUDGET_MS, DEFAULT_EVENT_SOURCE, type LocalSettings } from "./config.js";
import { streamLogger } from "./console-ports.js";
import { AuthorizeError, EXIT, FailureThenError, retriedNextCycle, type SignInAgain } from "./errors.js";
import { line, makeTempDir, pause, type CliIo } from "./io.js";
import { bindLocalSettings, openLocalBridge, usingLocalBridge } from "./local-bridge.js";
import { runCycle } from "./local-cycles.js";
import { COLOURS, NO_COLOURS, formatEvent, shouldColour, type Palette } from "./printer.js";
import { summaryOf } from "./run.js";

/** Tenant id of the demo's events. */
export const DEMO_TENANT = "demo";
/** What a demo user does once the demo's sign-in is lost: its sandbox and state end with it, so nothing to authorize. */
const DEMO_SIGN_IN_AGAIN: SignInAgain = { words: "start a new demo with `npm start`", sameState: false };
/** The events file, in the demo's temp directory. */
const EVENTS_FILE = "events.jsonl";

/** Purchases, and transactions' approvals, the demo remembers: enough to vary its activity, and no more. */
const REMEMBERED = 200;
/**
 * Transactions the demo's sandbox keeps besides those the bridge has still to read (`retainTransactions`), so a demo
 * left running overnight holds constant memory. About four times what the remembered purchases span (some 100 rounds
 * of 2.5 transactions), so the activity's targets are seldom among the forgotten; it skips those that are.
 */
const SANDBOX_RETAINED = 1_000;

/** Seams of the demo for tests: a smaller sandbox lets a short run forget what only a long one would. */
export interface DemoSeams {
  /** Transactions the sandbox keeps (`retainTransactions`). @default SANDBOX_RETAINED */
  readonly retainTransactions?: number;
  /** Sees the demo's sandbox once it is made, so a test can read its balances as the demo runs. */
  readonly onSandbox?: (sandbox: Sandbox) => void;
  /**
   * Sandbox time at start (it then follows real time): the seeded history and the spend limits' calendar windows
   * sit relative to it, so a test can run the demo on the dates that hold the most of it. @default the current time
   */
  readonly startTime?: number | string | Date;
}

/**
 * What the demo remembers from the events it saw, to aim the next activity at real ids: the most recent purchases
 * and the transactions first seen most recently, at most `limit` of each, so memory stays flat however long it runs.
 */
export class SeenTransactions {
  /** Oldest first. */
  readonly purchases: { id: string; qashioId: string }[] = [];
  /** Transaction id -> last approval status published, in the order first seen. */
  readonly approvals = new Map<string, string>();

  constructor(private readonly limit = REMEMBERED) {}

  remember(event: BridgeEvent): void {
    const { type, subject, data } = event.detail;
    if (subject.type !== "transaction") return;
    // A transaction seen again keeps its place: the oldest first seen is the first forgotten.
    this.approvals.set(subject.id, String(data.object.approval_status ?? ""));
    if (this.approvals.size > this.limit) this.approvals.delete(this.approvals.keys().next().value as string);
    if (data.object.transaction_category === "purchase" && subject.qashio_id !== undefined && type === "transaction.created") {
      this.purchases.push({ id: subject.id, qashioId: subject.qashio_id });
      if (this.purchases.length > this.limit) this.purchases.shift();
    }
  }
}

const APPROVALS = ["pending", "approved", "approved", "rejected", "admin_approved"] as const;

/** Rounds after which a purchase the demo made clears (its hold moves onto its account's balance). */
const CLEARS_AFTER_ROUNDS = 3;
/** Every this many rounds the company pays into its funding account what its cards spent since the last deposit. */
const DEPOSIT_EVERY_ROUNDS = 10;

/** A spend limit as the control surface sets it (`POST /cards/:id/spend_limit`). */
interface LimitChange {
  readonly max_amount: number;
  readonly frequency: number;
}

/** A company's card as the demo sees it. */
interface DemoCard {
  readonly id: string;
  readonly status: string;
  /** A purchase can go on the card now (its account and spend limit have room). */
  readonly canBuy: boolean;
  /** When the card's spend limit alone stops a purchase: the limit that gives it a full window's room again. */
  readonly raise?: LimitChange;
}

/**
 * For a card no purchase can go on now (`canSpendNow` false), the spend limit that lets one go on it again when its
 * limit, not its account, is what stops it: the window's use plus the limit's amount (and count); undefined when its
 * limit is off, its account could not pay for one either, or the raise would pass what the issuer accepts.
 */
function limitRaiseOf(card: CardRecord, data: CompanyData, nowMs: number): LimitChange | undefined {
  const limit = card.spendLimit;
  if (!limit.active) return undefined;
  // The card as it would be without its limit: whether its account alone could pay.
  if (!canSpendNow({ ...card, spendLimit: { ...limit, active: false } }, data, "purchase", nowMs)) return undefined;
  const used = consumedOf(card, data, nowMs);
  const raise = { max_amount: round2(Math.max(limit.maxAmount, used.amount) + limit.maxAmount), frequency: limit.frequency === 0 ? 0 : Math.max(limit.frequency, used.count) + limit.frequency };
  return raise.max_amount <= ISSUER_MAX_SPEND_LIMIT ? raise : undefined;
}

/** A purchase the demo made, still to clear: the stored amounts its clearing takes (the list shows them with the fee). */
interface Uncleared {
  readonly id: string;
  readonly round: number;
  readonly amount: number;
  readonly fee: number;
}

/** A transaction as the control surface answers it (the list shape, §2.2): what the demo reads of it. */
interface Made {
  readonly id: string;
  readonly billing_amount: number;
  readonly fee_charges: number;
}

/** Drives the sandbox's control surface over HTTP, like a test or a person with curl would. */
class ActivityGenerator {
  /** The sandbox's own seeded PRNG, so a seed replays the same activity. */
  private readonly random: Prng;
  /** Purchases made and not yet cleared, oldest first (at most CLEARS_AFTER_ROUNDS rounds of them). */
  private readonly uncleared: Uncleared[] = [];
  /** What the cards spent, net of refunds, since the last deposit. */
  private spent = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly companyId: string,
    /** The company's cards. */
    private readonly cards: () => DemoCard[],
    /** Whether the sandbox still holds the transaction: it forgets old acknowledged ones (SANDBOX_RETAINED). */
    private readonly held: (transactionId: string) => boolean,
    seed: number,
  ) {
    this.random = new Prng(seed);
  }

  private pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : this.random.pick(items);
  }

  /** Calls the control surface; the answer's `data`. */
  private async control(method: string, path: string, body: unknown): Promise<unknown> {
    const response = await fetch(`${this.baseUrl}/_sandbox/companies/${this.companyId}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`sandbox control ${method} ${path} answered ${response.status}`);
    return ((await response.json()) as { data?: unknown }).data;
  }

  /** One round of activity; returns what was done, for the narration line. */
  async round(cycle: number, seen: SeenTransactions): Promise<string[]> {
    const done: string[] = [];
    const raised = await this.raiseLimitIfNoRoom();
    // The sandbox makes only what the cards' accounts can pay for (spec-gaps, Balances): say what it made.
    const made = (await this.control("POST", "/transactions", { count: this.random.int(1, 3), transaction_category: "purchase" })) as Made[];
    for (const tx of made) {
      this.uncleared.push({ id: tx.id, round: cycle, amount: round2(tx.billing_amount - tx.fee_charges), fee: tx.fee_charges });
      this.spent += tx.billing_amount;
    }
    done.push(`${made.length} new purchase${made.length === 1 ? "" : "s"}`);
    if (raised !== undefined) done.push(`spend limit of card ${raised} raised in the dashboard`);
    // Only what the sandbox still holds: a refund of a purchase it forgot, or a change to one, would be refused.
    const refunded = this.random.chance(0.5) ? this.pick(seen.purchases.filter((p) => this.held(p.id))) : undefined;
    if (refunded !== undefined) {
      const [refund] = (await this.control("POST", "/transactions", { count: 1, transaction_category: "refund", parent_qashio_id: refunded.qashioId })) as Made[];
      // None when the purchase was given back in full already (spec-gaps, Balances).
      if (refund !== undefined) {
        this.spent -= refund.billing_amount;
        done.push(`refund of ${refunded.qashioId}`);
      }
    }
    const changed = this.pick([...seen.approvals.keys()].filter(this.held));
    if (changed !== undefined) {
      // Always a real move, so the change shows in the event.
      const approval = this.pick(APPROVALS.filter((a) => a !== seen.approvals.get(changed))) ?? "approved";
      await this.control("PATCH", `/transactions/${changed}`, { approval_status: approval });
      done.push(`approval → ${approval}`);
    }
    if (cycle % 3 === 0) {
      // Never the last Active card a purchase can go on: with spend limits used up for the period, rounds would make none.
      const active = this.cards().filter((c) => c.status === "Active");
      const buying = active.filter((c) => c.canBuy);
      const suspendable = buying.length > 1 ? active : active.filter((c) => !c.canBuy);
      const suspended = this.cards().filter((c) => c.status === "Suspended");
      const card = cycle % 6 === 0 ? this.pick(suspended) : this.pick(suspendable);
      if (card !== undefined) {
        const status = card.status === "Active" ? "Suspended" : "Active";
        await this.control("POST", `/cards/${card.id}/status`, { status });
        done.push(`card ${card.id} ${status === "Suspended" ? "suspended" : "reactivated"} in the dashboard`);
      }
    }
    const cleared = await this.clear(cycle);
    if (cleared > 0) done.push(`${cleared} purchase${cleared === 1 ? "" : "s"} cleared`);
    if (cycle % DEPOSIT_EVERY_ROUNDS === 0 && round2(this.spent) > 0) {
      const amount = round2(this.spent);
      await this.control("POST", "/deposits", { amount });
      this.spent = 0;
      done.push(`deposit of ${amount.toFixed(2)} into the funding account`);
    }
    return done;
  }

  /**
   * As the company's admins would: with no Active card left to buy on, one whose spend limit alone stops it gets its
   * limit raised in the dashboard, before the round's purchases. Returns the card's id, undefined when none was raised.
   */
  private async raiseLimitIfNoRoom(): Promise<string | undefined> {
    const active = this.cards().filter((c) => c.status === "Active");
    if (active.some((c) => c.canBuy)) return undefined;
    const card = this.pick(active.filter((c) => c.raise !== undefined));
    if (card?.raise === undefined) return undefined;
    await this.control("POST", `/cards/${card.id}/spend_limit`, card.raise);
    return card.id;
  }

  /**
   * Clears the purchases made CLEARS_AFTER_ROUNDS rounds ago or earlier, as the card network would, with the fields a
   * clearing sets (spec-gaps, Data): their holds move onto their accounts' balances, leaving room for auto top-ups.
   * Returns how many it cleared; one the sandbox forgot is skipped.
   */
  private async clear(cycle: number): Promise<number> {
    const due = this.uncleared.filter((p) => p.round <= cycle - CLEARS_AFTER_ROUNDS);
    if (due.length === 0) return 0;
    this.uncleared.splice(0, due.length);
    const held = due.filter((p) => this.held(p.id));
    if (held.length === 0) return 0;
    // Cleared now in sandbox time, never after it.
    const clock = await fetch(`${this.baseUrl}/_sandbox/clock`);
    if (!clock.ok) throw new Error(`sandbox control GET /clock answered ${clock.status}`);
    const now = ((await clock.json()) as { data: { now: string } }).data.now;
    for (const p of held) {
      await this.control("PATCH", `/transactions/${p.id}`, {
        clearing_status: "cleared",
        settlement_status: "settled",
        message_type: "clearing",
        cleared_at: now,
        clearing_amount: p.amount,
        clearing_fee: p.fee,
      });
    }
    return held.length;
  }
}

/**
 * Runs the demo; returns the exit code. `--cycles n` stops after n cycles, otherwise Ctrl-C stops it
 * cleanly between cycles. Its temp directory (events file and state) is removed when it ends, however it ends,
 * unless `--keep` is given; only a second Ctrl-C ("stop at once") leaves it behind.
 *
 * @example
 * process.exitCode = await demoCommand({ cycles: 2, intervalMs: 3_000, seed: 42, keep: false }, io);
 */
export async function demoCommand(args: DemoArgs, io: CliIo, seams: DemoSeams = {}): Promise<number> {
  const palette = shouldColour(io.stdout, io.env) ? COLOURS : NO_COLOURS;
  const dir = await makeTempDir("qashio-bridge-demo-", "the demo");
  let cycles: number;
  let removed = false;
  const where = () => (removed ? `removed ${dir} (--keep keeps it)` : `events are in ${join(dir, EVENTS_FILE)}`);
  try {
    cycles = await runDemo(args, io, dir, palette, seams);
  } catch (error) {
    if (!args.keep) removed = await removeDir(dir, io);
    // Said on stderr, before the failure main prints: stdout may be what failed. A closed stderr changes nothing.
    try {
      line(io.stderr, `demo failed; ${where()}`);
    } catch {
      // The failure itself is what matters.
    }
    // Its tokens went with the directory, of no use once the sandbox that issued them stops: what became of held ones,
    // said at the failure's end, would name a token file no longer there.
    throw removed && error instanceof FailureThenError ? error.failure : error;
  }
  if (!args.keep) removed = await removeDir(dir, io);
  line(io.stdout, palette.dim(`stopped after ${cycles} cycle${cycles === 1 ? "" : "s"}; ${where()}`));
  return EXIT.ok;
}

/** Removes the demo's temp directory; a failure is a warning, never the demo's outcome. Returns whether it is gone. */
async function removeDir(dir: string, io: CliIo): Promise<boolean> {
  try {
    await rm(dir, { recursive: true, force: true });
    return true;
  } catch (error) {
    line(io.stderr, `warning: could not remove ${dir} (${(error as NodeJS.ErrnoException).code ?? (error as Error).name})`);
    return false;
  }
}

/** Runs the demo in `dir` until its cycles are done or Ctrl-C; returns the number of cycles run. */
async function runDemo(args: DemoArgs, io: CliIo, dir: string, palette: Palette, seams: DemoSeams): Promise<number> {
  const sandbox = createSandbox({ seed: args.seed, realTime: true, startTime: seams.startTime, retainTransactions: seams.retainTransactions ?? SANDBOX_RETAINED });
  seams.onSandbox?.(sandbox);
  const server = await sandbox.listen(0);
  try {
    const [company] = sandbox.control.companies();
    if (company === undefined) throw new Error("the sandbox has no company");
    const settings: LocalSettings = {
      baseUrl: server.url,
      baseUrlSetting: "QASHIO_BASE_URL",
      clientId: SANDBOX_CLIENT.clientId,
      clientSecret: SANDBOX_CLIENT.clientSecret,
      tenant: DEMO_TENANT,
      stateDir: join(dir, "state"),
      eventsFile: join(dir, EVENTS_FILE),
      piiMode: "redact",
      eventSource: DEFAULT_EVENT_SOURCE,
      emitCardCreated: false,
      cardDetails: false,
      cycleBudgetMs: DEFAULT_CYCLE_BUDGET_MS,
      logLevel: "warn",
    };
    line(io.stdout, palette.bold(`qashio-bridge demo: sandbox at ${server.url}, company "${company.name}"`));
    const kept = args.keep ? "kept at the end (--keep)" : "removed at the end unless --keep";
    line(io.stdout, palette.dim(`events are appended to ${settings.eventsFile} (EventBridge target shape), ${kept}; Ctrl-C stops`));

    // The real authorization-code flow; the control surface approves as the person would. Bound first, as authorize
    // does: tokens never sit in a state directory without its binding.
    await bindLocalSettings(settings, io.env);
    const authorized = await authorizeWithBrowser({
      baseUrl: server.url,
      authorizeUrl: server.url,
      clientId: settings.clientId,
      clientSecret: settings.clientSecret,
      scope: DEFAULT_SCOPES,
      port: 0,
      timeoutMs: 10_000,
      store: new FileTokenStore(settings.stateDir),
      signal: io.signal,
      signInAgain: DEMO_SIGN_IN_AGAIN,
      onAuthorizeUrl: async (url) => {
        const authorize = new URL(url);
        const redirectUri = authorize.searchParams.get("redirect_uri") ?? "";
        const code = sandbox.control.issueAuthorizationCode({ companyId: company.id, redirectUri, scope: DEFAULT_SCOPES });
        const redirect = new URL(redirectUri);
        redirect.searchParams.set("code", code);
        redirect.searchParams.set("state", authorize.searchParams.get("state") ?? "");
        await fetch(redirect);
      },
    }).then(
      () => true,
      (error: unknown) => {
        // A Ctrl-C while signing in is a stop like any other, not a failure of the demo.
        if (io.signal.aborted && error instanceof AuthorizeError) return false;
        throw error;
      },
    );
    if (!authorized) return 0;
    line(io.stdout, palette.dim("authorized against the sandbox (authorization-code flow, tokens in the state directory)"));

    const seen = new SeenTransactions();
    const remember = (events: readonly BridgeEvent[]) => {
      for (const event of events) {
        line(io.stdout, formatEvent(event, palette));
        seen.remember(event);
      }
    };
    const bridge = await openLocalBridge(settings, {
      env: io.env,
      logger: streamLogger(io.stderr, settings.logLevel),
      onPublished: remember,
      // Its sign-in is of no use past its sandbox, which ends with it: a new demo signs in anew.
      signInAgain: DEMO_SIGN_IN_AGAIN,
      tokenFileKept: args.keep,
    });
    const cards = () => {
      const data = sandbox.control.company(company.id);
      const now = sandbox.control.now();
      return (
        data?.cards.map((c) => {
          const canBuy = canSpendNow(c, data, "purchase", now);
          return { id: c.id, status: c.status, canBuy, raise: canBuy ? undefined : limitRaiseOf(c, data, now) };
        }) ?? []
      );
    };
    const held = (transactionId: string) => sandbox.control.company(company.id)?.transactions.get(transactionId) !== undefined;
    const activity = new ActivityGenerator(server.url, company.id, cards, held, args.seed);

    // As every local command: tokens a failed save held are saved before it returns, and the bridge leaves the
    // registry a second Ctrl-C consults.
    return await usingLocalBridge(bridge, async () => {
      let cycle = 0;
      while (!io.signal.aborted) {
        cycle += 1;
        if (cycle > 1) {
          const done = await activity.round(cycle, seen);
          line(io.stdout, palette.dim(`   sandbox activity: ${done.join(", ")}`));
        }
        try {
          // The demo's state dies with it: a cycle Ctrl-C stops is not resumed by a next run.
          line(io.stdout, summaryOf(cycle, await runCycle(bridge, { signal: io.signal }), palette, { resumable: false }));
        } catch (error) {
          // As `run --interval`: a failure the next cycle would meet again ends the demo (its directory removed).
          if (!retriedNextCycle(error)) throw error;
          line(io.stderr, `cycle ${cycle} failed: ${error.message}`);
        }
        if (args.cycles !== undefined && cycle >= args.cycles) break;
        await pause(args.intervalMs, io.signal);
      }
      return cycle;
    });
  } finally {
    await server.close();
  }
}
