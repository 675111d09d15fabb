/**
 * Re-masking of stored snapshots after a switch of the tenant's PII mode: a cycle brings a snapshot to the current
 * mode only when its item is pulled again, which for a transaction that never changes is never. This pass walks the
 * whole store once and rewrites every snapshot whose personal fields are not in the current form.
 */
import { randomBytes } from "node:crypto";
import { CARD_KEY_PREFIX } from "./cards.js";
import { DEFAULT_DEADLINE_GRACE_MS, type BridgeDeps } from "./deps.js";
import { contentHash, recordHash, sha256Hex } from "./hash.js";
import { isJsonObject } from "../json-object.js";
import { assertPiiPolicy, conformPii, conformPiiToBody, PERSONAL_FIELDS, PERSONAL_RULE, PII_MODES, type PiiMode } from "./pii.js";
import type { CutQuarantineBody, QuarantineRecord, Snapshot, SnapshotKey, StoreCallOptions } from "./ports.js";
import { ConformCursorError, storeDeadlineExceeded } from "./errors.js";
import { versionTime } from "./versions.js";

/** Snapshots read (and at most rewritten) per store call. */
export const DEFAULT_CONFORM_PAGE_SIZE = 100;

/**
 * Why a pass ended: `complete` (every snapshot was read, and the store vacuumed), `deadline` (stopped between pages:
 * go on from `cursor`), `full_mode` (the tenant's mode is `full`: nothing to mask, nothing read).
 */
export type ConformOutcome = "complete" | "deadline" | "full_mode";

/** What {@link conformSnapshots} did. */
export interface ConformReport {
  /** The PII mode snapshots were brought to. */
  readonly mode: PiiMode;
  readonly outcome: ConformOutcome;
  /** Snapshots read, aliases and cursors included (a store may return a rewritten one again, in its new form). */
  readonly scanned: number;
  /** Snapshots rewritten with their personal fields in the current form. */
  readonly rewritten: number;
  /** Quarantine records whose raw body was rewritten in the current form (once the snapshots are done). */
  readonly quarantineRewritten: number;
  /**
   * With outcome `deadline`: where the pass goes on (the `cursor` option of the next run), in the quarantine walk too
   * (the last record done); absent when it stopped before its first page (run it again from the start) and for the
   * other outcomes. It records the tenant, PII mode and personal fields it was made under and the id of this pass,
   * stored in the snapshot store, and is taken only where all of them still hold (see {@link ConformCursorError}).
   */
  readonly cursor?: string;
  readonly durationMs: number;
}

/** Options of {@link conformSnapshots}. */
export interface ConformOptions {
  /**
   * Epoch ms after which no new page is read; the pass stops with outcome `deadline` and a cursor to go on from. Its
   * snapshot store calls are held to it plus a cycle's grace (DEFAULT_DEADLINE_GRACE_MS, `StoreCallOptions`): one
   * that stops there ends the pass `deadline` as well.
   */
  readonly deadline?: number;
  /** A cursor a run stopped at its deadline reported: the pass goes on from there instead of starting over. */
  readonly cursor?: string;
  /**
   * A stop request from a caller that will not see the report (an invocation that timed out): once it aborts, the pass
   * starts no further read or write and ends `deadline` without a cursor. It stores no new pass id either, so the
   * cursor it was given, which nothing has superseded, still goes on.
   */
  readonly signal?: AbortSignal;
  /**
   * A stop request from a caller that sees the report (Ctrl-C, SIGTERM in local mode): once it aborts, no new page is
   * read, and the pass ends as at its deadline, with a cursor to go on from.
   */
  readonly interrupt?: AbortSignal;
  /** Snapshots per page. @default 100 ({@link DEFAULT_CONFORM_PAGE_SIZE}) */
  readonly pageSize?: number;
}

/** The snapshot with its personal fields brought to the policy, or undefined when they already are (or it holds none). */
function conformed(snapshot: Snapshot, deps: Pick<BridgeDeps, "pii">): Snapshot | undefined {
  const { object } = snapshot;
  // An entry of another shape (a corrupt or foreign one) has no personal fields the engine knows of: left as it is.
  if (!isJsonObject(object)) return undefined;
  const masked = conformPii(object, deps.pii);
  // conformPii copies only on change, so identity tells whether there is anything to write, without a deep compare of
  // every snapshot.
  if (masked === object) return undefined;
  // The hash is taken anew, of the masked object, as a cycle takes it (cards in canonical order, transactions in the
  // provider's): the one stored is a hash of the cleartext, against which anyone reading the store could test guesses
  // of the person without the salt. The time stays. The cost: an event re-sent after a crash that this pass ran
  // between gets a new id, since ids derive from the snapshot's hash (docs/events.md).
  const hash = snapshot.key.startsWith(CARD_KEY_PREFIX) ? contentHash(masked) : recordHash(masked);
  return { ...snapshot, object: masked, hash };
}

/**
 * Walks the tenant's snapshot store page by page and rewrites every snapshot holding a personal field (any path of
 * PERSONAL_FIELDS, see docs/events.md, "PII modes": cardholders, approvers, employee ids, addresses, ...) that is not in
 * the tenant's current PII form (`conformPii`: cleartext redacted or hashed; values already masked stay, except that
 * `redact` also replaces a hash), keeping its `updatedAt` (its hash is taken anew, of the masked object). For after a
 * switch away from `full` or from `hash` to `redact`, and after an upgrade whose PERSONAL_FIELDS masks more fields than
 * the snapshots were written with. Aliases and walk cursors hold no personal field and are left alone. After a
 * complete pass the store is vacuumed, so no replaced version stays in its storage. Under `full` nothing is read or
 * written (outcome `full_mode`).
 *
 * Idempotent: a second pass rewrites nothing. Stopped at its deadline, a pass reports a cursor to go on from (none
 * when the write of its pass id stopped at the calls' deadline; the one given back when its read of it did); a run
 * without it starts over, which is always correct, only longer. Hold the tenant's cycle lock(s) around it: a cycle
 * writing a snapshot between this pass's read and write would be overwritten with the older object.
 *
 * @throws ConformCursorError when `options.cursor` is not one to go on from here (another PII mode, tenant or list of
 *   personal fields, damaged, of an earlier version, or not the last this store handed out, or a pass completed or
 *   {@link supersedeConformPassOnModeChange} found another mode since), before anything is written;
 *   SnapshotCursorError when the store does not take the place it names; whatever the store throws otherwise
 *   (snapshots rewritten before stay rewritten).
 * @example
 * ```ts
 * const report = await conformSnapshots(deps, { deadline: clock.now() + 50_000 });
 * if (report.outcome === "deadline") await conformSnapshots(deps, { cursor: report.cursor });
 * ```
 */
export async function conformSnapshots(
  deps: Pick<BridgeDeps, "snapshots" | "quarantine" | "pii" | "clock" | "logger" | "tenant">,
  options: ConformOptions = {},
): Promise<ConformReport> {
  assertPiiPolicy(deps.pii);
  const { mode } = deps.pii;
  // Before the full-mode return: no pass under full hands out a cursor, so one given there was made under another mode.
  const resumed = options.cursor === undefined ? undefined : readCursor(options.cursor, deps);
  const started = deps.clock.now();
  if (mode === "full") {
    deps.logger.info("PII mode is full: snapshots keep personal fields as sent, nothing to re-mask");
    return { mode, outcome: "full_mode", scanned: 0, rewritten: 0, quarantineRewritten: 0, durationMs: 0 };
  }
  const limit = options.pageSize ?? DEFAULT_CONFORM_PAGE_SIZE;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`pageSize must be a whole number of at least 1, got ${limit}`);
  // The snapshot store's calls are held to the deadline plus a cycle's grace, as a cycle's are: a page read before the
  // deadline may finish its write, and nothing is sent again later (a throttled table would run the invocation past
  // its timeout; a container frozen in a backoff, thawed after a later run wrote, would put older objects over newer).
  const held: StoreCallOptions = options.deadline === undefined ? {} : { deadline: options.deadline + DEFAULT_DEADLINE_GRACE_MS };
  let lastPass: Snapshot | undefined;
  try {
    lastPass = await storedPass(deps, held);
  } catch (error) {
    if (storeDeadlineExceeded(error) === undefined) throw error;
    // Nothing read or written: the cursor given, if any, still says where to go on.
    return ended(deps, { mode, outcome: "deadline", scanned: 0, rewritten: 0, quarantineRewritten: 0, started }, options.cursor);
  }
  if (resumed !== undefined && lastPass?.object["pass"] !== resumed.pass) {
    throw new ConformCursorError(
      "superseded",
      "the snapshot store does not hold the pass it names: it was restored from a backup older than the cursor, it is " +
        "another state directory or table, a later pass completed, a cycle ran under another PII mode since (a switch " +
        "away and back), or a later pass stopped with a cursor of its own (go on with the cursor it printed, if it printed one)",
    );
  }
  let cursor = resumed?.snapshots;
  /** The last quarantine record walked, once the quarantine walk has begun (in this run or the one it goes on from). */
  let quarantineAfter = resumed?.after;
  let scanned = 0;
  let rewritten = 0;
  let quarantineRewritten = 0;
  const stopped = (): boolean => options.signal?.aborted === true;
  const report = async (outcome: ConformOutcome): Promise<ConformReport> => {
    try {
      const next =
        outcome === "deadline" && !stopped() && (cursor !== undefined || quarantineAfter !== undefined)
          ? await handOut(deps, lastPass, { snapshots: cursor, after: quarantineAfter }, held)
          : undefined;
      // A complete pass leaves no cursor to go on from: the one of an earlier stop is refused from now on, or a mode
      // switched away and back after this pass would leave the snapshots behind it (written in between) as they are.
      if (outcome === "complete" && lastPass !== undefined) await storePass(deps, lastPass, held);
      return ended(deps, { mode, outcome, scanned, rewritten, quarantineRewritten, started }, next);
    } catch (error) {
      if (storeDeadlineExceeded(error) === undefined) throw error;
      // The pass id's write stopped at the calls' deadline: no cursor can name it, so the next run starts over.
      return ended(deps, { mode, outcome: "deadline", scanned, rewritten, quarantineRewritten, started }, undefined);
    }
  };
  const interrupted = (): boolean => options.interrupt?.aborted === true;
  const outOfTime = (): boolean => stopped() || interrupted() || (options.deadline !== undefined && deps.clock.now() >= options.deadline);
  const pastCalls = (): boolean => held.deadline !== undefined && deps.clock.now() >= held.deadline;
  try {
    for (;;) {
      if (outOfTime()) return report("deadline");
      const page = await deps.snapshots.scan(cursor === undefined ? { limit } : { cursor, limit });
      const writes: Snapshot[] = [];
      for (const snapshot of page.snapshots) {
        const masked = conformed(snapshot, deps);
        if (masked !== undefined) writes.push(masked);
      }
      if (writes.length > 0) {
        // None starts past the calls' deadline, as a cycle's does not (CycleRun.write): the store holds back its sends
        // after the first only, and a page whose scan answered once a frozen container thawed, its leases lapsed,
        // would put older objects over what a later cycle wrote. The cursor handed out starts at that page.
        if (pastCalls() || stopped()) return report("deadline");
        await deps.snapshots.putMany(writes, held);
      }
      scanned += page.snapshots.length;
      rewritten += writes.length;
      if (page.cursor === undefined) break;
      cursor = page.cursor;
    }
  } catch (error) {
    if (storeDeadlineExceeded(error) === undefined) throw error;
    // The page's write stopped retrying at the calls' deadline: some of it may be durable; the cursor handed out
    // starts at that page, so the next run writes it again.
    deps.logger.warn("snapshot write stopped retrying at the conform pass's deadline; stopping");
    return report("deadline");
  }
  await deps.snapshots.vacuum();
  // A large quarantine (a backlog a bad rule refused) may take longer than the time left: its walk stops at the deadline
  // too, with a cursor holding that of the last page of snapshots and the last record walked. A run from it reads that
  // page again, through the store's own cursor (which the store checks too), then goes on after that record. Its
  // first page of records is conformed whatever the time: a last page of snapshots that takes the whole budget would
  // otherwise stop every run before any record, and a walk started over each time could stop every run before the
  // records not yet done. So is that of a run resumed from a snapshot store's cursor: one of the last page, handed out by
  // a run that finished the snapshots but stopped before its first page of records, would stop every run there too.
  let first = resumed !== undefined;
  for await (const page of deps.quarantine.pages(quarantineAfter === undefined ? { limit } : { limit, after: quarantineAfter })) {
    // The first page's "whatever the time" is against the budget, not against a person's stop (or an invocation's).
    if (stopped() || interrupted() || (!first && outOfTime())) return report("deadline");
    first = false;
    quarantineRewritten += await conformQuarantinePage(deps, page, stopped);
    if (stopped()) return report("deadline");
    quarantineAfter = page.at(-1)?.id ?? quarantineAfter;
  }
  return report("complete");
}

/** Logs and returns a pass's report, with `cursor` to go on from when there is one; its duration taken now. */
function ended(
  deps: Pick<BridgeDeps, "clock" | "logger">,
  counts: Omit<ConformReport, "durationMs" | "cursor"> & { readonly started: number },
  cursor: string | undefined,
): ConformReport {
  const { started, ...rest } = counts;
  // Never below 0: a wall clock stepped back during the pass would make it negative (CycleRun.finish does the same).
  const done = { ...rest, durationMs: Math.max(0, deps.clock.now() - started) };
  deps.logger.info("snapshots conformed to the PII mode", { ...done, ...(done.outcome === "deadline" ? { cursor } : {}) });
  return cursor === undefined ? done : { ...done, cursor };
}

/**
 * How this version's cursors begin; earlier versions' (a store's own, `quarantine~...`) never do. Change it with any
 * change of how a mode masks other than through PERSONAL_FIELDS and PERSONAL_RULE ({@link FIELDS} covers those), so
 * the cursors of either version are refused by the other. A change of which pseudonym a value gets (another hash
 * input) is not one: a pass leaves values already hashed as they are, so what lies behind a cursor is in `hash` form
 * under either version (as under another salt, which a cursor does not record either).
 */
const CURSOR_PREFIX = "conform1~";

/**
 * Reserved snapshot key of the id of the last pass that stopped with a cursor (a new one, handed out to no one, once a
 * pass completes after it, or once a cycle runs under another PII mode: {@link supersedeConformPassOnModeChange}),
 * with the mode it was stored under. Transaction ids are UUIDs and aliases `qashio_id:...`, so it meets neither; and
 * it is one the transaction poller, which runs the pass on AWS, may write.
 */
const PASS_KEY: SnapshotKey = "transaction:~conform-pass";

/**
 * The personal fields this version masks and how (the paths, and the rule inside their parents), as a short
 * fingerprint: a cursor made under another list or rule is refused.
 */
const FIELDS = sha256Hex([...PERSONAL_FIELDS, PERSONAL_RULE].join("\n")).slice(0, 16);

/** What a cursor records: what it was made under, and where the walk goes on (one of the two places at least). */
interface CursorState {
  readonly tenant: string;
  readonly mode: PiiMode;
  /** {@link FIELDS} of the version that made it. */
  readonly fields: string;
  /** The id its pass stored under {@link PASS_KEY}. */
  readonly pass: string;
  /** The snapshot store's own cursor; absent when the quarantine walk began after snapshots that fitted one page. */
  readonly snapshots?: string;
  /** The last quarantine record walked, once the quarantine walk has begun. */
  readonly after?: string;
}

/** Catches a cursor cut short or edited by mistake; not a seal (whoever can forge one can also start over). */
const checksum = (body: string): string => sha256Hex(CURSOR_PREFIX + body).slice(0, 16);

/**
 * Stores a new pass id under {@link PASS_KEY}, after everything the cursor counts as done is durable, and returns the
 * cursor naming it. A new id each time: a store restored from a backup taken before this point holds an older one (or
 * none) and refuses the cursor, as its snapshots before the cursor may be the unmasked ones; a backup taken after holds
 * this id and every rewrite the cursor skips.
 */
async function handOut(
  deps: Pick<BridgeDeps, "snapshots" | "pii" | "clock" | "tenant">,
  lastPass: Snapshot | undefined,
  where: { readonly snapshots: string | undefined; readonly after: string | undefined },
  held: StoreCallOptions,
): Promise<string> {
  const pass = await storePass(deps, lastPass, held);
  const state: CursorState = {
    tenant: deps.tenant,
    mode: deps.pii.mode,
    fields: FIELDS,
    pass,
    ...(where.snapshots === undefined ? {} : { snapshots: where.snapshots }),
    ...(where.after === undefined ? {} : { after: where.after }),
  };
  const body = Buffer.from(JSON.stringify(state)).toString("base64url");
  return `${CURSOR_PREFIX}${body}.${checksum(body)}`;
}

/** The record under {@link PASS_KEY}, if a pass ever stored one. */
async function storedPass(deps: Pick<BridgeDeps, "snapshots">, held: StoreCallOptions = {}): Promise<Snapshot | undefined> {
  return (await deps.snapshots.getMany([PASS_KEY], held)).get(PASS_KEY);
}

/**
 * Stores a new random pass id under {@link PASS_KEY} with the current PII mode (superseding every cursor handed out
 * before) and returns it.
 */
async function storePass(deps: Pick<BridgeDeps, "snapshots" | "pii" | "clock">, lastPass: Snapshot | undefined, held: StoreCallOptions = {}): Promise<string> {
  const pass = randomBytes(8).toString("hex");
  const object = { pass, mode: deps.pii.mode };
  await deps.snapshots.putMany([{ key: PASS_KEY, hash: contentHash(object), object, updatedAt: versionTime(deps.clock.now(), lastPass) }], held);
  return pass;
}

/**
 * Supersedes the cursor of an unfinished pass once the PII mode is no longer the one its pass id was stored under (or
 * a version that recorded no mode stored it): stores a new pass id, under the current mode, so a run from that cursor
 * is refused. For a runtime to call before its first cycle writes a snapshot: on DynamoDB, whose Scan goes in hash
 * order, a cycle under another mode writes snapshots in that mode's form (cleartext under `full`) behind the cursor,
 * and a run from it back under the mode it was made under would skip them. Without a pass id no cursor can be
 * pending: nothing is written. Costs one read, and one write after a change of mode.
 *
 * @example
 * ```ts
 * await supersedeConformPassOnModeChange(deps); // before the process's first cycle
 * ```
 */
export async function supersedeConformPassOnModeChange(deps: Pick<BridgeDeps, "snapshots" | "pii" | "clock" | "logger">): Promise<void> {
  const lastPass = await storedPass(deps);
  if (lastPass === undefined || lastPass.object["mode"] === deps.pii.mode) return;
  await storePass(deps, lastPass);
  deps.logger.info("PII mode changed since the last conform-pii pass stored its id: a cursor it printed is refused from now on", {
    from: lastPass.object["mode"] ?? "unrecorded",
    mode: deps.pii.mode,
  });
}

/** A member that must be a string, or (`optional`) absent. */
const isText = (value: unknown, optional = false): boolean => typeof value === "string" || (optional && value === undefined);

/**
 * What `cursor` records, once it is known to be whole and made under `deps`' tenant, PII mode and personal fields.
 * Checks nothing in the store (see {@link PASS_KEY} for that).
 *
 * @throws ConformCursorError naming the first thing that does not hold.
 */
function readCursor(cursor: string, deps: Pick<BridgeDeps, "tenant" | "pii">): CursorState {
  if (!cursor.startsWith(CURSOR_PREFIX)) {
    // A store's own cursor or a `quarantine~` one of an earlier version records no PII mode: never provably safe.
    throw new ConformCursorError("unversioned", "it is not of the form this version prints (cursors of earlier versions record no PII mode, so none is taken)");
  }
  const damaged = (): ConformCursorError => new ConformCursorError("damaged", "it is damaged (cut short or edited since it was printed)");
  const rest = cursor.slice(CURSOR_PREFIX.length);
  const dot = rest.lastIndexOf(".");
  const body = rest.slice(0, dot);
  if (dot < 0 || rest.slice(dot + 1) !== checksum(body)) throw damaged();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    throw damaged();
  }
  const state = (isJsonObject(parsed) ? parsed : {}) as Partial<Record<keyof CursorState, unknown>>;
  const whole =
    (PII_MODES as readonly unknown[]).includes(state.mode) &&
    isText(state.tenant) &&
    isText(state.fields) &&
    isText(state.pass) &&
    isText(state.snapshots, true) &&
    isText(state.after, true) &&
    (state.snapshots !== undefined || state.after !== undefined);
  if (!whole) throw damaged();
  const valid = state as CursorState;
  if (valid.tenant !== deps.tenant) throw new ConformCursorError("tenant", `it was made for tenant "${valid.tenant}", not "${deps.tenant}"`);
  if (valid.mode !== deps.pii.mode) {
    throw new ConformCursorError(
      "mode",
      `it was made under PII mode ${valid.mode}, and the mode is now ${deps.pii.mode}: the snapshots before it were brought to ${valid.mode}, not to ${deps.pii.mode}`,
    );
  }
  if (valid.fields !== FIELDS) {
    throw new ConformCursorError("fields", "it was made by a version that masks other personal fields: the snapshots before it may hold some this one masks");
  }
  return valid;
}

/** The members of a {@link CutQuarantineBody}. */
const CUT_BODY_MEMBERS: ReadonlySet<string> = new Set(["_truncated", "head", "qashio_id"]);

/**
 * True for a body as a store hands back one it had to cut ({@link CutQuarantineBody}), and nothing more: a body with
 * other members (a provider record that merely has a `head` and a `_truncated`) is masked as any body is, or its
 * cardholder would stay in clear beside a masked head.
 */
function isCutBody(raw: unknown): raw is CutQuarantineBody {
  if (!isJsonObject(raw) || typeof raw["head"] !== "string") return false;
  if (Object.keys(raw).some((key) => !CUT_BODY_MEMBERS.has(key))) return false;
  const truncated = raw["_truncated"];
  return isJsonObject(truncated) && typeof truncated["bytes"] === "number";
}

/**
 * A held quarantine body in the current PII form: `conformPiiToBody`, except for a body the store had to cut. Its head
 * is JSON text cut short, written under the mode of its time: no path reaches the personal values in it, so it is
 * masked whole, as a string outside every object is (`"[redacted]"`, or a hash; values already masked stay). Its
 * size and `qashio_id` (not personal) stay, so the re-drive still reads the transaction again by it.
 */
function conformBody(raw: unknown, deps: Pick<BridgeDeps, "pii">): unknown {
  if (!isCutBody(raw)) return conformPiiToBody(raw, deps.pii);
  const head = conformPiiToBody(raw.head, deps.pii);
  return head === raw.head ? raw : { ...raw, head };
}

/**
 * Rewrites the raw body of every quarantine record not in the current PII form (`conformPiiToBody`: masked as a
 * cycle masks it, values already masked kept; the head of a body the store had to cut masked whole, see
 * {@link conformBody}): a record quarantined under an earlier mode would otherwise keep its cleartext until its item is found again,
 * which for an acknowledged transaction is never. Held records keep their id and first `at` (Quarantine.put). One page
 * of the walk (`limit` records, as the snapshots are read): a quarantine may hold a whole backlog a bad rule refused,
 * bodies included. Stops before the next record once `stopped`.
 */
async function conformQuarantinePage(deps: Pick<BridgeDeps, "quarantine" | "pii">, page: readonly QuarantineRecord[], stopped: () => boolean): Promise<number> {
  let rewritten = 0;
  for (const record of page) {
    // A put left for a thawed container would write a body read long before, maybe over a record deleted since.
    if (stopped()) break;
    const raw = conformBody(record.raw, deps);
    if (JSON.stringify(raw) === JSON.stringify(record.raw)) continue;
    await deps.quarantine.put({ ...record, raw });
    rewritten += 1;
  }
  return rewritten;
}
