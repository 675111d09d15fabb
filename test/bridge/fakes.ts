/**
 * In-memory fakes of every engine port and of the provider, for engine tests (and reuse by CLI/AWS tests).
 */
import type {
  BridgeEvent,
  Clock,
  EventPublisher,
  Lock,
  LockHandle,
  Logger,
  MetricName,
  MetricUnit,
  Metrics,
  PublishFailure,
  PublishOptions,
  Quarantine,
  QuarantinePagesOptions,
  QuarantineRecord,
  Snapshot,
  SnapshotKey,
  SnapshotPage,
  SnapshotScanOptions,
  SnapshotStore,
  TokenStore,
} from "../../shared/bridge/ports.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { SnapshotCursorError } from "../../shared/bridge/errors.js";
import type { StoredTokens } from "../../shared/qashio/auth/token-store.js";
import type {
  CardListQuery,
  ProviderPage,
  ProviderPort,
  TransactionListQuery,
} from "../../shared/bridge/provider.js";
import type { TransactionCycleDeps, CardCycleDeps } from "../../shared/bridge/deps.js";
import type { PiiPolicy } from "../../shared/bridge/pii.js";
import { ERP_CARD_DETAIL_KEYS } from "../../shared/qashio/schemas/erp-card.js";

/** A clock that only moves when told to; `sleep` advances it instantly. */
export class FakeClock implements Clock {
  constructor(public ms = Date.parse("2025-01-15T10:00:00.000Z")) {}
  now(): number {
    return this.ms;
  }
  async sleep(ms: number): Promise<void> {
    this.ms += ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** Snapshots in a Map. */
export class MemorySnapshotStore implements SnapshotStore {
  readonly data = new Map<SnapshotKey, Snapshot>();
  getManyCalls = 0;
  putManyCalls = 0;
  async getMany(keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>> {
    this.getManyCalls += 1;
    const out = new Map<SnapshotKey, Snapshot>();
    for (const key of keys) {
      const s = this.data.get(key);
      if (s) out.set(key, structuredClone(s));
    }
    return out;
  }
  async putMany(snapshots: readonly Snapshot[]): Promise<void> {
    this.putManyCalls += 1;
    for (const s of snapshots) this.data.set(s.key, structuredClone(s));
  }
  scanCalls = 0;
  vacuumCalls = 0;
  /**
   * Walks the keys in sorted order; the cursor is the last key returned, so a rewrite never moves a key. No key is
   * ever deleted, so a cursor naming a key this store does not hold is not one of its own.
   */
  async scan(options: SnapshotScanOptions): Promise<SnapshotPage> {
    this.scanCalls += 1;
    const { cursor, limit } = options;
    if (cursor !== undefined && !this.data.has(cursor as SnapshotKey)) throw new SnapshotCursorError();
    const keys = [...this.data.keys()].sort().filter((key) => cursor === undefined || key > cursor);
    const page = keys.slice(0, limit);
    const last = page.at(-1);
    return {
      snapshots: page.map((key) => structuredClone(this.data.get(key) as Snapshot)),
      ...(keys.length > limit && last !== undefined ? { cursor: last } : {}),
    };
  }
  async vacuum(): Promise<void> {
    this.vacuumCalls += 1;
  }
}

/** Quarantine records in a Map keyed by id. */
export class MemoryQuarantine implements Quarantine {
  readonly records = new Map<string, QuarantineRecord>();
  /** Set by {@link readInPagesOnly}: the size of each page `pages` handed out since. */
  pageSizes: number[] | undefined;
  private wholeReadRefused = false;

  /** From now on `list` fails and `pages` records its page sizes: for tests that a walk never holds the quarantine whole. */
  readInPagesOnly(): number[] {
    this.wholeReadRefused = true;
    this.pageSizes = [];
    return this.pageSizes;
  }
  async put(record: QuarantineRecord): Promise<boolean> {
    const held = this.records.get(record.id);
    if (held) {
      this.records.set(record.id, structuredClone({ ...held, reason: record.reason, raw: record.raw }));
      return false;
    }
    this.records.set(record.id, structuredClone(record));
    return true;
  }
  async list(): Promise<QuarantineRecord[]> {
    if (this.wholeReadRefused) throw new Error("the whole quarantine was read at once");
    return [...this.records.values()].map((r) => structuredClone(r));
  }
  async *pages({ limit, after }: QuarantinePagesOptions): AsyncGenerator<QuarantineRecord[]> {
    const records = [...this.records.values()].filter((r) => after === undefined || r.id > after).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    for (let i = 0; i < records.length; i += limit) {
      const page = records.slice(i, i + limit).map((r) => structuredClone(r));
      this.pageSizes?.push(page.length);
      yield page;
    }
  }
  async deleteMany(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.records.delete(id);
  }
  async size(): Promise<number> {
    return this.records.size;
  }
}

/** Leases in a Map, expiring on the given clock. */
let nextLockOwner = 1;

/** Leases in a Map (pass one instance's `leases` to another to model two processes), expiring on the given clock. */
export class MemoryLock implements Lock {
  constructor(
    private readonly clock: Clock,
    readonly leases = new Map<string, { owner: number; expiresAt: number }>(),
  ) {}
  async tryAcquire(name: string, ttlMs: number): Promise<LockHandle | undefined> {
    const current = this.leases.get(name);
    if (current && current.expiresAt > this.clock.now()) return undefined;
    const owner = nextLockOwner++;
    this.leases.set(name, { owner, expiresAt: this.clock.now() + ttlMs });
    return {
      // Lost only once taken (or released): a lease that ran out while nobody took it is renewed, as the port says.
      renew: async (ms) => {
        if (this.leases.get(name)?.owner !== owner) return false;
        this.leases.set(name, { owner, expiresAt: this.clock.now() + ms });
        return true;
      },
      release: async () => {
        if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
      },
    };
  }
}

/** Tokens in memory. */
export class MemoryTokenStore implements TokenStore {
  constructor(public tokens?: StoredTokens) {}
  async load(): Promise<StoredTokens | undefined> {
    return this.tokens ? { ...this.tokens } : undefined;
  }
  async save(tokens: StoredTokens): Promise<void> {
    this.tokens = { ...tokens };
  }
}

/**
 * Records every published event; `reject` decides per event whether it fails: a reason (for good), or a reason with
 * `retryable` (for now).
 */
export class RecordingPublisher implements EventPublisher {
  readonly events: BridgeEvent[] = [];
  /** Every event offered, taken or not, in order. */
  readonly offered: BridgeEvent[] = [];
  calls = 0;
  /** The options of each call, in order. */
  readonly options: (PublishOptions | undefined)[] = [];
  reject: (event: BridgeEvent) => string | Omit<PublishFailure, "event"> | undefined = () => undefined;
  async publish(events: readonly BridgeEvent[], options?: PublishOptions): Promise<{ readonly failed: readonly PublishFailure[] }> {
    this.calls += 1;
    this.options.push(options);
    const failed: PublishFailure[] = [];
    for (const event of events) {
      this.offered.push(structuredClone(event));
      const failure = this.reject(event);
      if (!failure) this.events.push(structuredClone(event));
      else failed.push(typeof failure === "string" ? { event, reason: failure } : { event, ...failure });
    }
    return { failed };
  }
  get ids(): string[] {
    return this.events.map((e) => e.detail.id);
  }
  ofType(type: string): BridgeEvent[] {
    return this.events.filter((e) => e.detail.type === type);
  }
}

/** One recorded metric data point. */
export interface MetricPoint {
  readonly name: MetricName;
  readonly value: number;
  readonly unit?: MetricUnit;
  readonly dimensions?: Readonly<Record<string, string>>;
}

/** Records metric data points. */
export class RecordingMetrics implements Metrics {
  readonly points: MetricPoint[] = [];
  add(name: MetricName, value: number, unit?: MetricUnit, dimensions?: Readonly<Record<string, string>>): void {
    this.points.push({ name, value, unit, dimensions });
  }
  sum(name: MetricName, dimensions?: Readonly<Record<string, string>>): number {
    return this.points
      .filter((p) => p.name === name && Object.entries(dimensions ?? {}).every(([k, v]) => p.dimensions?.[k] === v))
      .reduce((a, p) => a + p.value, 0);
  }
}

/** Records log lines. */
export class RecordingLogger implements Logger {
  readonly lines: { level: string; message: string; attributes?: Readonly<Record<string, unknown>> }[] = [];
  debug(message: string, attributes?: Readonly<Record<string, unknown>>): void {
    this.lines.push({ level: "debug", message, attributes });
  }
  info(message: string, attributes?: Readonly<Record<string, unknown>>): void {
    this.lines.push({ level: "info", message, attributes });
  }
  warn(message: string, attributes?: Readonly<Record<string, unknown>>): void {
    this.lines.push({ level: "warn", message, attributes });
  }
  error(message: string, attributes?: Readonly<Record<string, unknown>>): void {
    this.lines.push({ level: "error", message, attributes });
  }
  /** The lines above debug level, but for a cycle's own closing line ("cards cycle complete"): what ops' queries see. */
  aboveDebug(): RecordingLogger["lines"] {
    return this.lines.filter((line) => line.level !== "debug" && !/^(transactions|cards) cycle \w+$/.test(line.message));
  }
}

type SyncStatus = "not_synced" | "synced" | "outdated";

/** A provider transaction as the fake holds it. */
export interface FakeTransaction extends Record<string, unknown> {
  id: string;
  qashio_id: string;
  client_sync_status: SyncStatus;
  updated_at: string;
}

/** Deterministic UUID-shaped id for test transaction `n`. */
export function txnId(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

/** What a provider call was. */
export type ProviderCall =
  | { readonly op: "listTransactions"; readonly query: TransactionListQuery }
  | { readonly op: "acknowledgeTransactions"; readonly ids: readonly string[] }
  | { readonly op: "listErpCards"; readonly query: CardListQuery }
  | { readonly op: "readErpCard"; readonly id: string };

/**
 * An in-memory provider that models the sync-status machine of spec §3.1: new transactions are `not_synced`,
 * acknowledge moves them to `synced`, a change after acknowledge makes them `outdated`. Lists are newest first
 * and filtered live, so pages shift as items are acknowledged or arrive. `beforeCall` lets a test inject
 * activity (or a failure) between any two calls.
 */
export class FakeProvider implements ProviderPort {
  /** Newest first. */
  readonly transactions: FakeTransaction[] = [];
  readonly cards: Record<string, unknown>[] = [];
  readonly calls: ProviderCall[] = [];
  /** Runs before every call; throw from it to fail the call. */
  beforeCall: (call: ProviderCall) => void | Promise<void> = () => undefined;
  /** Ids handed out by a sync-status list and not acknowledged since: what a bridge may hold in hand. */
  readonly inFlight = new Set<string>();
  /** Raw items to serve in place of a transaction, by id (to inject invalid records). */
  readonly rawOverrides = new Map<string, unknown>();
  private counter = 0;
  /** Cards issued so far: a card's number, never one of a card removed from the list since. */
  private cardsIssued = 0;
  private clockMs = Date.parse("2025-01-15T09:00:00.000Z");

  /** `maxPageSize`: the largest `page_size` either list accepts; a larger one is refused with a 400 naming it. */
  constructor(private readonly maxPageSize = Number.POSITIVE_INFINITY) {}

  /**
   * Adds `count` new transactions, as a property step does: with `refund`, each a refund of the transaction at the same
   * index of those already held (when there is one), else a purchase.
   */
  addSome(count: number, refund: boolean): void {
    for (let i = 0; i < count; i++) {
      const parent = this.transactions[i];
      this.addTransaction(refund && parent ? { transaction_category: "refund", parent_qashio_id: parent.qashio_id } : {});
    }
  }

  /** Adds a new transaction at the top (not_synced); returns it. */
  addTransaction(fields: Record<string, unknown> = {}): FakeTransaction {
    const n = ++this.counter;
    const txn: FakeTransaction = {
      id: txnId(n),
      qashio_id: `CT${String(n).padStart(8, "0")}`,
      parent_id: null,
      parent_qashio_id: null,
      transaction_category: "purchase",
      transaction_amount: n * 10,
      transaction_currency: "AED",
      merchant_name: `Merchant ${n}`,
      card_holder_name: "Ann Holder",
      card_holder_email: "ann@example.com",
      memo: "",
      line_items: [{ id: `li-${n}-1`, amount: n * 10, description: "item" }],
      created_at: this.tick(),
      updated_at: this.tick(),
      ...fields,
      client_sync_status: "not_synced",
    };
    this.transactions.unshift(txn);
    return txn;
  }

  /** Changes a transaction as the provider would: synced becomes outdated, others keep their status. */
  changeTransaction(id: string, patch: Record<string, unknown>): FakeTransaction {
    const txn = this.transactions.find((t) => t.id === id);
    if (!txn) throw new Error(`no transaction ${id}`);
    Object.assign(txn, patch, { updated_at: this.tick() });
    if (txn.client_sync_status === "synced") txn.client_sync_status = "outdated";
    return txn;
  }

  /** Transactions still waiting to be pulled. */
  pending(): FakeTransaction[] {
    return this.transactions.filter((t) => t.client_sync_status !== "synced");
  }

  async listTransactions(query: TransactionListQuery): Promise<ProviderPage> {
    const call = { op: "listTransactions", query: { ...query } } as const;
    this.calls.push(call);
    await this.beforeCall(call);
    let list = this.transactions;
    if (query.client_sync_status) list = list.filter((t) => t.client_sync_status === query.client_sync_status);
    if (query.qashio_id) list = list.filter((t) => t.qashio_id === query.qashio_id);
    return this.page(list, query, (t) => {
      if (query.client_sync_status) this.inFlight.add(t.id);
      return this.rawOverrides.has(t.id) ? this.rawOverrides.get(t.id) : structuredClone(t);
    });
  }

  async acknowledgeTransactions(ids: string[]): Promise<unknown> {
    const call = { op: "acknowledgeTransactions", ids: [...ids] } as const;
    this.calls.push(call);
    await this.beforeCall(call);
    const wanted = new Set(ids);
    for (const txn of this.transactions) if (wanted.has(txn.id)) txn.client_sync_status = "synced";
    for (const id of ids) this.inFlight.delete(id);
    return { acknowledged: ids.length };
  }

  /** Adds a card at the top of the card list. */
  addCard(fields: Record<string, unknown> = {}): Record<string, unknown> {
    const n = ++this.cardsIssued;
    const card = {
      id: `CA${String(n).padStart(8, "0")}`,
      card_nickname: `Card ${n}`,
      status: "Active",
      card_type: "Virtual",
      masked_card_number: "************1234",
      cardholder: { name: "Ann Holder", email: "ann@example.com", employee_id: `E${n}` },
      allowed_max_balance: 1000,
      purchase_limits_active: false,
      ...fields,
    };
    this.cards.unshift(card);
    return card;
  }

  /** Changes a card in place. */
  changeCard(id: string, patch: Record<string, unknown>): void {
    const card = this.cards.find((c) => c["id"] === id);
    if (!card) throw new Error(`no card ${id}`);
    Object.assign(card, patch);
  }

  async listErpCards(query: CardListQuery): Promise<ProviderPage> {
    const call = { op: "listErpCards", query: { ...query } } as const;
    this.calls.push(call);
    await this.beforeCall(call);
    const list = query.status ? this.cards.filter((c) => String(c["status"]).toLowerCase() === query.status) : this.cards;
    // The list view leaves out the configuration objects only a card's single read carries (spec §2.3).
    return this.page(list, query, (c) => Object.fromEntries(Object.entries(structuredClone(c)).filter(([key]) => !ERP_CARD_DETAIL_KEYS.includes(key))));
  }

  /** A card's single read: every member it holds, configuration objects included; a 404 for an unknown id. */
  async readErpCard(id: string): Promise<ProviderPage> {
    const call = { op: "readErpCard", id } as const;
    this.calls.push(call);
    await this.beforeCall(call);
    const card = this.cards.find((c) => c["id"] === id);
    if (!card) throw Object.assign(new Error(`GET /public/v1/erp/cards/${id} answered 404`), { name: "NotFoundError", status: 404 });
    return { data: [structuredClone(card)] };
  }

  count(op: ProviderCall["op"]): number {
    return this.calls.filter((c) => c.op === op).length;
  }

  private page<T>(all: readonly T[], query: { page: number; page_size: number }, copy: (item: T) => unknown): ProviderPage {
    if (query.page_size > this.maxPageSize) {
      throw Object.assign(new Error("page_size out of range"), {
        name: "BadRequestError",
        status: 400,
        errors: [{ field: "page_size", code: "OUT_OF_RANGE", message: "too large" }],
      });
    }
    const start = (query.page - 1) * query.page_size;
    const data = all.slice(start, start + query.page_size).map(copy);
    const totalPages = Math.ceil(all.length / query.page_size);
    return {
      data,
      pagination: {
        page: query.page,
        page_size: query.page_size,
        total_records: all.length,
        total_pages: totalPages,
        has_next: query.page < totalPages,
      },
    };
  }

  private tick(): string {
    this.clockMs += 1000;
    return new Date(this.clockMs).toISOString();
  }
}

/** Everything an engine test needs, wired together. */
export interface TestRig {
  readonly provider: FakeProvider;
  readonly snapshots: MemorySnapshotStore;
  readonly publisher: RecordingPublisher;
  readonly quarantine: MemoryQuarantine;
  readonly clock: FakeClock;
  readonly metrics: RecordingMetrics;
  readonly logger: RecordingLogger;
  readonly deps: TransactionCycleDeps & CardCycleDeps;
}

/**
 * Builds a rig of fakes; `overrides` replace single deps (e.g. a fault-injecting store).
 *
 * @example
 * ```ts
 * const rig = makeRig();
 * rig.provider.addTransaction();
 * await pollTransactions(rig.deps);
 * ```
 */
export function makeRig(
  options: { tenant?: string; pii?: PiiPolicy; maxPageSize?: number; emitCardCreated?: boolean } = {},
  overrides: Partial<TransactionCycleDeps & CardCycleDeps> = {},
): TestRig {
  const provider = new FakeProvider(options.maxPageSize);
  const snapshots = new MemorySnapshotStore();
  const publisher = new RecordingPublisher();
  const quarantine = new MemoryQuarantine();
  const clock = new FakeClock();
  const metrics = new RecordingMetrics();
  const logger = new RecordingLogger();
  const deps = {
    tenant: options.tenant ?? "acme",
    provider,
    snapshots,
    publisher,
    quarantine,
    clock,
    metrics,
    logger,
    pii: options.pii ?? { mode: "full" as const },
    emitCardCreated: options.emitCardCreated ?? false,
    ...overrides,
  };
  return { provider, snapshots, publisher, quarantine, clock, metrics, logger, deps };
}

/** A provider 400 refusing the acknowledge of `refused` among `ids`, in the shape the client raises. */
export function refusal(ids: readonly string[], refused: readonly string[]): Error {
  const errors = ids.flatMap((id, i) =>
    refused.includes(id) ? [{ field: `transaction_ids.${i}`, code: "NOT_FOUND", message: `${id} is not a transaction of this company` }] : [],
  );
  return Object.assign(new Error("Some transactions were not found"), { name: "InvalidRequestError", status: 400, errors });
}

/**
 * A rig whose transaction validator refuses a memo of "REFUND?" while `rule.strict` is on: a validation rule that
 * wrongly refuses good provider data, fixed by turning it off.
 */
export function makeStrictRuleRig(): { rig: TestRig; rule: { strict: boolean } } {
  const rule = { strict: true };
  const rig = makeRig(
    { pii: { mode: "redact" } },
    {
      validators: {
        transaction: (raw) =>
          rule.strict && (raw as { memo?: unknown }).memo === "REFUND?"
            ? { success: false, reason: "memo: not allowed" }
            : { success: true, data: raw as Record<string, unknown> },
      },
    },
  );
  return { rig, rule };
}

/** Makes each provider read by `qashio_id` (a re-drive's) take `ms` of the rig's clock, so runs end at a deadline. */
export function slowReadsByQashioId(rig: TestRig, ms: number): void {
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = async (query) => {
    if (query.qashio_id !== undefined) rig.clock.advance(ms);
    return list(query);
  };
}

/**
 * Puts a `validation` record of transaction `entityId` whose body carried a malformed reference (`qashio_id` "CTX"),
 * under `id` (which places it in the quarantine's order): a re-drive reading by it finds nothing.
 */
export async function putGlitchedValidationRecord(rig: TestRig, entityId: string, id: string, body: Record<string, unknown> = {}): Promise<void> {
  await rig.quarantine.put({
    id,
    kind: "transaction",
    reason: "validation: qashio_id: malformed",
    raw: { id: entityId, qashio_id: "CTX", ...body },
    at: "2025-01-15T09:00:00.000Z",
    entityId,
  });
}

/** Adds `count` transactions whose events fail for good, so a cycle quarantines them; publishing works again after. */
export async function quarantinePublishFailures(rig: TestRig, count = 1, reason = "AccessDeniedException: not allowed"): Promise<FakeTransaction[]> {
  const txns = Array.from({ length: count }, () => rig.provider.addTransaction());
  rig.publisher.reject = () => reason;
  await pollTransactions(rig.deps);
  rig.publisher.reject = () => undefined;
  return txns;
}

/** A repeatable stand-in for `Math.random` (Park-Miller), for a re-drive's shuffle a test must replay. */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 48271) % 2147483647) / 2147483647;
}

/** A provider read by `qashio_id`: a refund parent's or a re-drive's. */
export function isReadByQashioId(call: ProviderCall): boolean {
  return call.op === "listTransactions" && call.query.qashio_id !== undefined;
}

/** A later turn of the event loop, as a network answer comes: reads started meanwhile overlap the one waiting. */
export const laterTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Makes each read by `qashio_id` answer a turn later and counts how many were in flight at once (`most()`). */
export function countReadsInFlight(rig: TestRig): { most: () => number } {
  let inFlight = 0;
  let most = 0;
  rig.provider.beforeCall = async (call) => {
    if (!isReadByQashioId(call)) return;
    inFlight += 1;
    most = Math.max(most, inFlight);
    await laterTurn();
    inFlight -= 1;
  };
  return { most: () => most };
}

/**
 * Records the qashio_ids of reads by `qashio_id` as they start and as they answer; with `laterStartedAnswerFirst`, a
 * read started later answers sooner (the order of answers differs from the order of reads).
 */
export function orderOfReads(rig: TestRig, laterStartedAnswerFirst: boolean): { started: string[]; answered: string[] } {
  const started: string[] = [];
  const answered: string[] = [];
  rig.provider.beforeCall = async (call) => {
    if (!isReadByQashioId(call) || call.op !== "listTransactions") return;
    const qid = call.query.qashio_id as string;
    started.push(qid);
    const turns = laterStartedAnswerFirst ? 20 - started.length : 1;
    for (let i = 0; i < turns; i++) await laterTurn();
    answered.push(qid);
  };
  return { started, answered };
}
