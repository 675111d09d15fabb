/**
 * Deterministic seed data: the same seed and start time always give the same
 * companies, cards, master data, statements and transactions.
 */
import { Prng, round2 } from "../prng.js";
import {
  BANK_ACCOUNTS,
  CHART_OF_ACCOUNTS,
  DEPARTMENTS,
  FIRST_NAMES,
  LAST_NAMES,
  SEGMENTS,
  SUPPLIERS,
  TAX_RATES,
} from "./catalog.js";
import { holdSeeded, nextTopUpAfter } from "./balances.js";
import type {
  CardRecord,
  CompanyData,
  ErpCardStatus,
  MasterRecord,
  PoolAccountRecord,
  SandboxCompany,
  SegmentEntry,
  StatementAccount,
  StatementRecord,
  UserProfile,
} from "./model.js";
import { TransactionFactory } from "./transactions.js";
import { TransactionStore } from "./transaction-store.js";

const DAY_MS = 86_400_000;

/** Fixed companies: ids and names do not depend on the seed, so tokens survive a reset. */
export interface CompanyDefinition {
  readonly id: string;
  readonly name: string;
  readonly legalName: string;
  readonly country: string;
  readonly currency: string;
  readonly apiAccessEnabled: boolean;
  readonly apiKey: string;
  readonly domain: string;
  readonly transactions: number;
}

export const COMPANY_DEFINITIONS: readonly CompanyDefinition[] = [
  {
    id: "3f6c1a52-8d4e-4b7a-9c21-5e0f7d9a1b01",
    name: "Falcon Gate Trading",
    legalName: "Falcon Gate Trading LLC",
    country: "AE",
    currency: "AED",
    apiAccessEnabled: true,
    apiKey: "sandbox-legacy-key-falcon-gate",
    domain: "falcongate.ae",
    transactions: 40,
  },
  {
    id: "8b2d4e6f-1a3c-4d5e-8f70-9a1b2c3d4e02",
    name: "Najd Retail",
    legalName: "Najd Retail Company",
    country: "SA",
    currency: "SAR",
    apiAccessEnabled: true,
    apiKey: "sandbox-legacy-key-najd-retail",
    domain: "najdretail.sa",
    transactions: 30,
  },
  {
    id: "c4e5f6a7-b8c9-4dae-9f01-2b3c4d5e6f03",
    name: "Oasis Events",
    legalName: "Oasis Events LLC",
    country: "AE",
    currency: "AED",
    apiAccessEnabled: false,
    apiKey: "sandbox-legacy-key-oasis-events",
    domain: "oasisevents.ae",
    transactions: 25,
  },
];

export interface SeedOptions {
  readonly seed: number;
  /** Sandbox time at seeding (epoch ms): data lies in the past of it. */
  readonly nowMs: number;
  /** Transactions of the first company instead of its default count: a backlog, every one `not_synced`. */
  readonly backlog?: number;
  /** Company that gets the backlog (default: the first). */
  readonly backlogCompanyId?: string;
}

/** Builds every company's data. */
export function seedCompanies(options: SeedOptions): CompanyData[] {
  const backlogCompanyId = options.backlogCompanyId ?? COMPANY_DEFINITIONS[0]?.id;
  return COMPANY_DEFINITIONS.map((definition, ordinal) => {
    // One PRNG stream per company, so a backlog in one company leaves the others unchanged.
    const prng = new Prng((options.seed * 7919 + ordinal * 104_729 + 17) >>> 0);
    const backlog = options.backlog !== undefined && definition.id === backlogCompanyId ? options.backlog : undefined;
    return seedCompany(definition, ordinal + 1, prng, options.nowMs, backlog);
  });
}

function seedCompany(
  definition: CompanyDefinition,
  ordinal: number,
  prng: Prng,
  nowMs: number,
  backlog: number | undefined,
): CompanyData {
  const iso = (ms: number) => new Date(ms).toISOString();
  const createdAtMs = nowMs - 540 * DAY_MS;
  const company: SandboxCompany = {
    id: definition.id,
    name: definition.name,
    legalName: definition.legalName,
    country: definition.country,
    currency: definition.currency,
    createdAt: iso(createdAtMs),
    apiAccessEnabled: definition.apiAccessEnabled,
    apiKey: definition.apiKey,
    fundingAccountId: `FA${prng.code(10)}`,
    // Then its latest statement's closing (seedStatements); still drawn, so the rest of the seed stays as it was.
    fundingBalance: prng.money(180_000, 950_000),
  };
  const users = seedUsers(prng, definition);
  const admin = users[0] as UserProfile;
  const segments = seedSegments(prng);
  const pools = seedPools(prng, company, users, nowMs);
  const cards = seedCards(prng, company, users, pools, segments, nowMs);
  const suppliers = seedMasterRecords(prng, nowMs, SUPPLIERS.map((s, i) => ({
    remoteName: s.name,
    remoteId: `SUP-${String(1001 + i)}`,
    extra: { qashio_external_id: `QSUP-${ordinal}-${String(1001 + i)}`, key: s.key },
  })));
  const chartOfAccounts = seedMasterRecords(prng, nowMs, CHART_OF_ACCOUNTS.map((a) => ({
    remoteName: a.name,
    remoteId: `ACC-${a.number}`,
    extra: {
      qashio_external_id: `QCOA-${ordinal}-${a.number}`,
      account_number: a.number,
      account_type: a.type,
      account_currency: company.currency,
      description: a.description,
    },
  })));
  const taxRates = seedMasterRecords(prng, nowMs, TAX_RATES.map((t) => ({
    remoteName: t.name,
    remoteId: `TAX-${t.code}`,
    extra: { tax_rate_code: t.code, total_tax_rate: t.rate, country_code: t.country },
  })));
  const bankAccounts = seedMasterRecords(prng, nowMs, BANK_ACCOUNTS.map((b, i) => ({
    remoteName: b.name,
    remoteId: `BANK-${String(201 + i)}`,
    extra: {
      account_type: b.type,
      account_number: b.type === "CLEARING" ? `CLR-${prng.digits(6)}` : `AE${prng.digits(2)}0260001${prng.digits(10)}`,
      reconciliation_account: b.reconciliation,
    },
  })));
  const { accounts: statementAccounts, statements } = seedStatements(prng, company, pools, cards, nowMs, ordinal);
  const data: CompanyData = {
    company,
    users,
    cards,
    pools,
    bankAccounts,
    chartOfAccounts,
    taxRates,
    suppliers,
    statements,
    statementAccounts,
    segments,
    transactions: new TransactionStore(),
    holds: new Map(),
    loadedOnApproval: new Set(),
    invited: new Set(users.map((u) => u.email.toLowerCase())),
    audit: [],
    factory: undefined as unknown as TransactionFactory,
  };
  const factory = new TransactionFactory(data, prng, ordinal, admin);
  data.factory = factory;
  const count = backlog ?? definition.transactions;
  factory.seedHistory(count, nowMs, backlog !== undefined ? "backlog" : "mixed");
  holdSeeded(data);
  return data;
}

function seedUsers(prng: Prng, definition: CompanyDefinition): UserProfile[] {
  const users: UserProfile[] = [];
  const used = new Set<string>();
  for (let i = 0; i < 8; i++) {
    let first = prng.pick(FIRST_NAMES);
    let last = prng.pick(LAST_NAMES);
    while (used.has(`${first} ${last}`)) {
      first = prng.pick(FIRST_NAMES);
      last = prng.pick(LAST_NAMES);
    }
    used.add(`${first} ${last}`);
    const local = `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, "");
    users.push({
      userId: prng.uuid(),
      externalId: `USR${prng.code(8)}`,
      firstName: first,
      lastName: last,
      email: `${local}@${definition.domain}`,
      employeeId: `EMP-${String(1001 + i)}`,
      department: i === 0 ? "Finance" : prng.pick(DEPARTMENTS),
      role: i === 0 ? "Admin" : "End User",
    });
  }
  return users;
}

function seedSegments(prng: Prng): SegmentEntry[] {
  const entries: SegmentEntry[] = [];
  for (const segment of SEGMENTS) {
    for (const [code, name] of segment.values) {
      entries.push({ id: prng.uuid(), name, label: segment.label, code, erp_internal_id: String(prng.int(100, 999)), erp_code: code });
    }
  }
  return entries;
}

function seedPools(prng: Prng, company: SandboxCompany, users: UserProfile[], nowMs: number): PoolAccountRecord[] {
  const specs: readonly [string, PoolAccountRecord["status"]][] = [
    ["Travel Pool", "Active"],
    ["Marketing Pool", "Active"],
    ["Events Pool", "Inactive"],
    ["Legacy Projects Pool", "Terminated"],
  ];
  const admin = users[0] as UserProfile;
  const pools = specs.map(([name, status], i): PoolAccountRecord => ({
    id: `PA${prng.code(10)}`,
    accountName: name,
    status,
    currency: company.currency,
    topupType: prng.pick(["manual", "auto_topup"]),
    allowedMaxBalance: prng.pick([50_000, 75_000, 100_000, 150_000]),
    lowBalanceNotificationActive: i % 2 === 0,
    lowBalanceNotificationAmount: prng.pick([2_500, 5_000, 10_000]),
    createdBy: admin,
    managers: [admin, users[1 + i] as UserProfile],
    createdAt: new Date(nowMs - (400 - i * 60) * DAY_MS + prng.int(0, DAY_MS)).toISOString(),
    // Then its latest statement's closing (seedStatements); still drawn, so the rest of the seed stays as it was.
    balance: status === "Active" ? prng.money(8_000, 60_000) : 0,
  }));
  // Oldest first; views list newest first.
  return pools;
}

interface CardSpec {
  readonly nickname: string;
  readonly status: ErpCardStatus;
  readonly cardType: "Virtual" | "Physical";
  readonly pool: number | null;
  readonly ageDays: number;
}

const CARD_SPECS: readonly CardSpec[] = [
  { nickname: "AWS Billing", status: "Active", cardType: "Virtual", pool: null, ageDays: 420 },
  { nickname: "SaaS Subscriptions", status: "Active", cardType: "Virtual", pool: null, ageDays: 380 },
  { nickname: "Office Supplies", status: "Terminated", cardType: "Physical", pool: null, ageDays: 360 },
  { nickname: "Travel - Sales Team", status: "Active", cardType: "Virtual", pool: 0, ageDays: 330 },
  { nickname: "Fuel Card - Van 3", status: "Active", cardType: "Physical", pool: null, ageDays: 300 },
  { nickname: "Marketing Ads", status: "Active", cardType: "Virtual", pool: 1, ageDays: 280 },
  { nickname: "Client Entertainment", status: "Suspended", cardType: "Virtual", pool: null, ageDays: 250 },
  { nickname: "Travel - Leadership", status: "Active", cardType: "Physical", pool: 0, ageDays: 220 },
  { nickname: "Office Supplies (replacement)", status: "Active", cardType: "Physical", pool: null, ageDays: 200 },
  { nickname: "Events Budget", status: "Cancelled", cardType: "Virtual", pool: 2, ageDays: 150 },
  { nickname: "Warehouse Team", status: "Inactive", cardType: "Physical", pool: null, ageDays: 20 },
  { nickname: "New Hire Equipment", status: "Draft", cardType: "Virtual", pool: null, ageDays: 0 },
];

/**
 * A card's funding settings, consistent with each other: auto top-up on exactly when its amount is positive and the
 * top-up type says so (spec-gaps, Sandbox). Pool cards are funded by their pool. Draws what earlier seeds drew, in
 * the same order, so the rest of the seeded data stays as it was.
 */
function topUp(pool: boolean, prng: Prng): { topupType: string; autoTopUpAmount: number; autoTopUpEnabled: boolean } {
  if (pool) return { topupType: "pool", autoTopUpAmount: 0, autoTopUpEnabled: false };
  prng.pick(["manual", "auto_topup"]);
  const amount = prng.pick([1_000, 2_500, 5_000]);
  const enabled = prng.chance(0.5);
  return { topupType: enabled ? "auto_topup" : "manual", autoTopUpAmount: enabled ? amount : 0, autoTopUpEnabled: enabled };
}

/** A draw kept only so the rest of the seed stays as it was: its value goes unused. */
function undrawn(_drawn: number): number {
  return 0;
}

/** A card's own balance: what was drawn for it, or 0 for a pool card, whose money is its pool's. */
function ownBalance(pool: PoolAccountRecord | undefined, drawn: number): number {
  return pool ? 0 : drawn;
}

function seedCards(
  prng: Prng,
  company: SandboxCompany,
  users: UserProfile[],
  pools: PoolAccountRecord[],
  segments: readonly SegmentEntry[],
  nowMs: number,
): CardRecord[] {
  const cards = CARD_SPECS.map((spec, i): CardRecord => {
    const holder = users[(i % (users.length - 1)) + 1] as UserProfile;
    const pool = spec.pool === null ? undefined : pools[spec.pool];
    // A zero-age card is created just now: it has no statement yet (valid account, empty statements).
    const createdMs = spec.ageDays === 0 ? nowMs - prng.int(1_000, 50_000) : nowMs - spec.ageDays * DAY_MS - prng.int(3_600_000, 20 * 3_600_000);
    const issued = spec.status !== "Draft";
    const activated = spec.status === "Active" || spec.status === "Suspended" || spec.status === "Terminated";
    const maxBalance = pool ? pool.allowedMaxBalance : prng.pick([5_000, 10_000, 20_000, 25_000, 50_000]);
    const pick = (label: string) => {
      const options = segments.filter((s) => s.label === label);
      return prng.pick(options);
    };
    return {
      id: `CA${prng.code(10)}`,
      nickname: spec.nickname,
      status: spec.status,
      cardType: spec.cardType,
      lastFour: prng.digits(4),
      holder,
      accountType: pool ? "pool" : "reloadable",
      accountExternalId: pool ? pool.id : `AC${prng.code(10)}`,
      poolAccountId: pool ? pool.id : null,
      currency: company.currency,
      allowedMaxBalance: maxBalance,
      ...topUp(pool !== undefined, prng),
      autoLoadOnTransactionApproval: false,
      velocityPeriod: "MONTHLY",
      nextTopUpMs: nextTopUpAfter("MONTHLY", nowMs),
      cardUsageType: pool ? "POOL" : "RELOADABLE",
      floatManagementEnabled: prng.chance(0.3),
      cardReplaced: spec.status === "Terminated",
      replacedByCardId: null,
      atmWithdrawalAllowed: spec.cardType === "Physical",
      countryLimitsActive: prng.chance(0.4),
      categoryLimitsActive: prng.chance(0.4),
      lowBalanceNotificationActive: prng.chance(0.6),
      lowBalanceNotificationAmount: prng.pick([250, 500, 1_000]),
      segments: [pick("Location"), pick("Department")],
      customSegments: [pick("cost_centre")],
      issuedAt: issued ? new Date(createdMs + 3_600_000).toISOString() : null,
      activatedAt: activated ? new Date(createdMs + 2 * DAY_MS).toISOString() : null,
      terminatedAt: spec.status === "Terminated" ? new Date(nowMs - 200 * DAY_MS).toISOString() : null,
      createdAt: new Date(createdMs).toISOString(),
      updatedAt: new Date(createdMs + 2 * DAY_MS).toISOString(),
      // A pool card holds nothing of its own: it spends its pool's balance. A card account with statements then holds
      // its latest closing (seedStatements). The draw is still made, so the rest of the seed stays as it was.
      balance: spec.status === "Active" || spec.status === "Suspended" ? ownBalance(pool, round2(prng.money(0.2, 0.9) * maxBalance / 1)) : 0,
      // What its seeded spend not yet cleared holds (holdSeeded). The draw is still made, so the rest of the seed stays as it was.
      pendingAuthorisations: spec.status === "Active" ? undrawn(prng.money(0, 450)) : 0,
      spendLimit: {
        active: prng.chance(0.6),
        period: "MONTHLY",
        maxAmount: Math.min(maxBalance, prng.pick([2_000, 5_000, 10_000, 15_000])),
        frequency: prng.pick([0, 20, 50]),
        updatedAt: new Date(createdMs + 2 * DAY_MS).toISOString(),
      },
      allowedCountries: ["AE", "SA", "GB", "US"],
      blockedCountries: ["KP", "IR"],
      allowedMccs: ["4511", "7011", "4121"],
    };
  });
  const terminated = cards.find((c) => c.status === "Terminated");
  const replacement = cards.find((c) => c.nickname === "Office Supplies (replacement)");
  if (terminated && replacement) terminated.replacedByCardId = replacement.id;
  return cards;
}

interface MasterSpec {
  readonly remoteName: string;
  readonly remoteId: string;
  readonly extra: Record<string, unknown>;
}

function seedMasterRecords(prng: Prng, nowMs: number, specs: readonly MasterSpec[]): MasterRecord[] {
  const step = (300 * DAY_MS) / Math.max(1, specs.length);
  return specs.map((spec, i): MasterRecord => {
    const createdMs = nowMs - 320 * DAY_MS + Math.floor(i * step) + prng.int(0, 3_600_000);
    const updatedMs = prng.chance(0.35) ? createdMs + prng.int(1, 200) * DAY_MS : createdMs;
    const roll = prng.next();
    return {
      id: prng.uuid(),
      remote_id: spec.remoteId,
      remote_name: spec.remoteName,
      status: roll < 0.08 ? "draft" : roll < 0.18 ? "inactive" : "active",
      is_deleted: prng.chance(0.06),
      created_at: new Date(createdMs).toISOString(),
      updated_at: new Date(Math.min(updatedMs, nowMs - DAY_MS)).toISOString(),
      extra: spec.extra,
    };
  });
}

/** A stretch of time an account could be used in, `toMs` exclusive (Infinity while it still can be). */
interface UsableSpan {
  readonly fromMs: number;
  readonly toMs: number;
}

/** When a card could spend (as the seeded history has it): from its activation until its termination, if any. */
function usableSpans(cards: readonly CardRecord[]): UsableSpan[] {
  return cards.flatMap((c) =>
    c.activatedAt === null ? [] : [{ fromMs: Date.parse(c.activatedAt), toMs: c.terminatedAt === null ? Infinity : Date.parse(c.terminatedAt) }],
  );
}

function seedStatements(
  prng: Prng,
  company: SandboxCompany,
  pools: PoolAccountRecord[],
  cards: CardRecord[],
  nowMs: number,
  ordinal: number,
): { accounts: StatementAccount[]; statements: StatementRecord[] } {
  // Funding and subsidiary accounts are always usable; a card account while its card is, a pool while one of its cards is.
  const always: UsableSpan[] = [{ fromMs: -Infinity, toMs: Infinity }];
  // A card or pool account never holds more than its allowed_max_balance (§2.3, §2.5); the others have no cap.
  // `hold` sets the current balance the API shows for the account (the subsidiary has none).
  const opened = (account: StatementAccount, iso: string, spans: UsableSpan[], hold: (balance: number) => void, max = Infinity) => ({
    account,
    createdMs: Date.parse(iso),
    spans,
    hold,
    max,
  });
  const accounts = [
    opened(
      { accountExternalId: company.fundingAccountId, accountName: `${company.name} Funding Account`, accountType: "CompanyFundAccount" },
      company.createdAt,
      always,
      (b) => (company.fundingBalance = b),
    ),
    ...pools.map((p) =>
      opened(
        { accountExternalId: p.id, accountName: p.accountName, accountType: "PoolAccount" },
        p.createdAt,
        usableSpans(cards.filter((c) => c.poolAccountId === p.id)),
        (b) => (p.balance = b),
        p.allowedMaxBalance,
      ),
    ),
    ...cards
      .filter((c) => c.accountType === "reloadable")
      .map((c) =>
        opened({ accountExternalId: c.accountExternalId, accountType: "Card", card: c }, c.createdAt, usableSpans([c]), (b) => (c.balance = b), c.allowedMaxBalance),
      ),
  ];
  if (ordinal === 1) {
    const subsidiary: StatementAccount = { accountExternalId: `SUB${prng.code(9)}`, accountName: `${company.name} - Abu Dhabi Branch`, accountType: "Subsidiary" };
    accounts.push(opened(subsidiary, company.createdAt, always, () => undefined));
  }
  const now = new Date(nowMs);
  const months: { month: string; from: string; to: string; startMs: number; endMs: number }[] = [];
  for (let back = 6; back >= 1; back--) {
    const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1);
    const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back + 1, 0);
    const s = new Date(start).toISOString();
    months.push({ month: s.slice(0, 7), from: s.slice(0, 10), to: new Date(end).toISOString().slice(0, 10), startMs: start, endMs: end + DAY_MS });
  }
  const windowStartMs = months[0]?.startMs ?? 0;
  const statements: StatementRecord[] = [];
  for (const { account, createdMs, spans, hold, max } of accounts) {
    const usableAt = (ms: number) => spans.some((s) => s.fromMs <= ms && ms < s.toMs);
    const usableIn = (fromMs: number, toMs: number) => spans.some((s) => s.fromMs < toMs && fromMs < s.toMs);
    const drawn = account.accountType === "CompanyFundAccount" ? prng.money(150_000, 600_000) : prng.money(0, 20_000);
    // An account holds nothing while it cannot be used, as the seeded balances of such cards and pools are 0: nothing
    // loaded before a card's activation, its balance returned to the funding account at its termination. One opened
    // within the window held nothing at the start of its first month (§2.7: balance at period start). Every draw is
    // still made, so the rest of the seed stays as it was.
    let balance = createdMs > windowStartMs || !usableAt(windowStartMs) ? 0 : Math.min(max, drawn);
    for (const period of months) {
      // Statements start with the month the account was opened in.
      if (createdMs >= period.endMs) continue;
      const scale = account.accountType === "CompanyFundAccount" ? 80_000 : 6_000;
      const moved = Math.min(max, Math.max(0, round2(balance + prng.money(-scale, scale))));
      // No movement in a month the account could not be used in; the month its use ended closes at 0.
      const closing = !usableIn(period.startMs, period.endMs) ? balance : usableAt(period.endMs) ? moved : 0;
      statements.push({ month: period.month, from: period.from, to: period.to, account, currency: company.currency, opening: balance, closing });
      balance = closing;
    }
    // The account holds now what its latest statement closed at: the seeded history moves no balance (spec-gaps,
    // Balances), so nothing moved it since, and a balance drawn apart from its statements could sit far from them (the
    // funding account hundreds of thousands away within a month). The balance draws made earlier are kept, so the rest
    // of the seed stays as it was. One opened this month has no statement and keeps its seeded balance.
    if (createdMs < (months.at(-1)?.endMs ?? -Infinity)) hold(balance);
  }
  // Most recent month first, then accounts in a stable order.
  statements.sort((a, b) => (a.month === b.month ? 0 : a.month < b.month ? 1 : -1));
  return { accounts: accounts.map((a) => a.account), statements };
}
