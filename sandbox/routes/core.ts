/**
 * Card and user operations of spec §4.9-§4.10: core card list (`page_info`), card
 * balance, issuance, funding update, asynchronous suspension, velocity limit, invitations.
 */
import type { Hono } from "hono";
import * as z from "zod";
import {
  CardBalanceQuerySchema,
  checkBody,
  ChangeStatusBodySchema,
  CoreCardsQuerySchema,
  DEFAULT_PAGE_SIZES,
  InviteBodySchema,
  SUSPEND_STATUS,
  UpdateCardBodySchema,
  UpdateVelocityLimitBodySchema,
  type UpdateCardBody,
  type UpdateVelocityLimitBody,
} from "../../shared/qashio/schemas/index.js";
import { requireScope } from "../auth.js";
import { nextTopUpAfter, spendableOf } from "../data/balances.js";
import { consumedOf } from "../data/spend-limits.js";
import { isClosed, type CardRecord, type CompanyData } from "../data/model.js";
import { ApiError, ForbiddenError, ValidationError, type FieldError } from "../errors.js";
import { ok, parseBody, parseQuery, readJson, slicePage, type SandboxContext, type SandboxEnv } from "../http.js";
import { Prng } from "../prng.js";
import { suspensionRefused } from "../state.js";
import { coreCardView } from "../views.js";

/** Allowed `velocity_period` values (spec: not shown). */
export const VELOCITY_PERIODS = ["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"] as const;
/** `card_usage_type` values of a card with its own account (spec: not shown). */
export const CARD_USAGE_TYPES = ["RELOADABLE", "ONE_TIME"] as const;
/** The `card_usage_type` of a pool card: its funding model follows the pool, fixed at issuance. */
export const POOL_CARD_USAGE_TYPE = "POOL";
/** Allowed `spend_limit_period` values (spec: not shown). */
export const SPEND_LIMIT_PERIODS = ["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY", "ALL_TIME", "PER_TRANSACTION"] as const;
/** The issuer refuses a spend limit above this amount (a 400 "could not be applied at the issuer"). */
export const ISSUER_MAX_SPEND_LIMIT = 500_000;
/** Invitations of at most this many addresses are processed at once (with `summary`); more are queued. */
export const IMMEDIATE_INVITATION_LIMIT = 10;
/** Most addresses one invitation request takes. */
export const MAX_INVITATIONS = 100;

const UPDATED = "Resource updated successfully";
const CREATED = "Resource created successfully";

export function registerCore(router: Hono<SandboxEnv>): void {
  router.get("/cards", listCoreCards);
  router.get("/cards/balance", cardBalance);
  router.post("/cards", issueCard);
  router.put("/cards/:cardId", updateCard);
  router.put("/cards/:cardId/change_status", changeStatus);
  router.post("/cards/:cardId/update_velocity_limit", updateVelocityLimit);
  router.post("/user_profiles/invite", invite);
}

/** Cards the token's user sees: the sandbox user is an administrator who does not see `Draft` cards. */
function visibleCards(data: CompanyData): CardRecord[] {
  return [...data.cards].reverse().filter((card) => card.status !== "Draft");
}

function listCoreCards(c: SandboxContext): Response {
  requireScope(c, "cards:read");
  const q = parseQuery(c, CoreCardsQuerySchema, { sizeFields: ["page_size", "limit"] });
  const data = c.get("data");
  const page = q.page ?? 1;
  const perPage = q.page_size ?? q.limit ?? DEFAULT_PAGE_SIZES.core_cards;
  // `page_info.offset` is a whole number (§4.9): a page whose offset is past the safe integers is out of range, as a
  // page size past its maximum is, rather than an answer with an offset no client can read exactly.
  const offset = (page - 1) * perPage;
  if (!Number.isSafeInteger(offset)) {
    const last = Math.floor(Number.MAX_SAFE_INTEGER / perPage) + 1;
    throw new ValidationError([{ field: "page", code: "OUT_OF_RANGE", message: `page must be at most ${last} at ${perPage} a page` }]);
  }
  const cards = visibleCards(data);
  const totalPages = Math.ceil(cards.length / perPage);
  return ok(c, {
    cards: slicePage(cards, page, perPage).map((card) => coreCardView(card, data)),
    page_info: {
      current_page: page,
      per_page: perPage,
      total_entries: cards.length,
      total_pages: totalPages,
      next_page: page < totalPages ? page + 1 : null,
      previous_page: page > 1 ? page - 1 : null,
      offset,
    },
  });
}

function cardBalance(c: SandboxContext): Response {
  requireScope(c, "wallet:read");
  const q = parseQuery(c, CardBalanceQuerySchema);
  const data = c.get("data");
  const cards = visibleCards(data).filter(
    (card) =>
      (q.nickname === undefined || card.nickname === q.nickname) &&
      (q.last_four === undefined || card.lastFour === q.last_four) &&
      (q.status === undefined || card.status.toLowerCase() === q.status),
  );
  const round = (n: number) => Math.round(n * 100) / 100;
  return ok(c, {
    company_balance: { amount: data.company.fundingBalance, currency: data.company.currency },
    cards: cards.map((card) => ({
      card_id: card.id,
      nickname: card.nickname,
      last_four: card.lastFour,
      status: card.status.toLowerCase(),
      balance: round(spendableOf(card, data)),
      currency: card.currency,
    })),
  });
}

function findCard(c: SandboxContext): CardRecord {
  const state = c.get("state");
  return state.requireCard(c.get("data"), c.req.param("cardId") ?? "");
}

function refuseClosed(card: CardRecord): void {
  if (isClosed(card)) {
    throw new ValidationError([{ field: null, code: "INVALID_STATE", message: `card is ${card.status.toLowerCase()} and cannot be changed` }], "Card cannot be changed in its current state");
  }
}

/** A card write's `data.card`: the card with its spend limit's object, reporting what the limit's window consumed. */
function writtenCardView(c: SandboxContext, card: CardRecord): Record<string, unknown> {
  const data = c.get("data");
  return coreCardView(card, data, consumedOf(card, data, c.get("state").clock.nowMs()));
}

function isOneOf(value: string, allowed: readonly string[]): boolean {
  return allowed.includes(value);
}

function enumError(field: string, allowed: readonly string[]): FieldError {
  return { field, code: "INVALID_ENUM", message: `${field} must be one of: ${allowed.join(", ")}` };
}

/** A value refused by an enum: text not listed is `INVALID_ENUM`, anything else the wrong type (`INVALID_FORMAT`), as the shared body checks say. */
function sentEnumError(field: string, value: unknown, allowed: readonly string[]): FieldError {
  return typeof value === "string" ? enumError(field, allowed) : { field, code: "INVALID_FORMAT", message: `${field} must be a string` };
}

/** `card_usage_type` values a card takes; any known value while the card is unknown (a 404 follows). */
function usageTypesOf(card: CardRecord | undefined): readonly string[] {
  if (card === undefined) return [...CARD_USAGE_TYPES, POOL_CARD_USAGE_TYPE];
  // The PUT names no pool account, so it cannot move a card onto or off a pool: the value sent must fit the card.
  return card.poolAccountId === null ? CARD_USAGE_TYPES : [POOL_CARD_USAGE_TYPE];
}

/** The sandbox's rules for a funding update of `card` beyond the shared body schema. */
function fundingRules(body: UpdateCardBody, card: CardRecord | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const usageTypes = usageTypesOf(card);
  if (body.velocity_period !== undefined && !isOneOf(body.velocity_period.toUpperCase(), VELOCITY_PERIODS)) errors.push(enumError("velocity_period", VELOCITY_PERIODS));
  if (body.card_usage_type !== undefined && !isOneOf(body.card_usage_type.toUpperCase(), usageTypes)) errors.push(enumError("card_usage_type", usageTypes));
  const amount = positiveAmountError(body.card_usage_type_amount) ?? heldAmountError(body.card_usage_type_amount, card);
  if (amount) errors.push(amount);
  const nickname = body.nickname === undefined ? undefined : nicknameError(body.nickname);
  if (nickname) errors.push(nickname);
  return errors;
}

/** A card's maximum balance holds something: 0 is out of range (the shared check has refused a negative one). */
function positiveAmountError(amount: number | undefined): FieldError | undefined {
  return amount === 0 ? { field: "card_usage_type_amount", code: "OUT_OF_RANGE", message: "card_usage_type_amount must be positive" } : undefined;
}

/**
 * A card's own account may not hold more than its maximum balance (§4.9, §2.3): a new maximum below what it holds now
 * is refused rather than money moved off the card (spec-gaps). A pool card holds nothing itself; its pool is the bound.
 */
function heldAmountError(amount: number | undefined, card: CardRecord | undefined): FieldError | undefined {
  if (amount === undefined || card === undefined || card.poolAccountId !== null || amount >= card.balance) return undefined;
  return { field: "card_usage_type_amount", code: "OUT_OF_RANGE", message: "card_usage_type_amount must be at least the balance the card holds" };
}

/** Issuance checks `card_usage_type_amount` as the funding update does, so one mistake gets one §7 code on both. */
const IssueAmountSchema = z.object({ card_usage_type_amount: UpdateCardBodySchema.shape.card_usage_type_amount });

/**
 * A card name is required when issuing and when sent in an update: not blank, at most 64 characters. Both rules hold
 * for the name as kept, trimmed: spaces around a 63-character name are not part of it.
 */
function nicknameError(nickname: unknown): FieldError | undefined {
  if (!isAbsent(nickname) && typeof nickname !== "string") return { field: "nickname", code: "INVALID_FORMAT", message: "nickname must be a string" };
  if (typeof nickname !== "string" || nickname.trim() === "") return { field: "nickname", code: "REQUIRED", message: "nickname is required" };
  if (nickname.trim().length > 64) return { field: "nickname", code: "OUT_OF_RANGE", message: "nickname must be at most 64 characters" };
  return undefined;
}

async function updateCard(c: SandboxContext): Promise<Response> {
  requireScope(c, "cards:write");
  const known = c.get("data").cards.find((card) => card.id === c.req.param("cardId"));
  const body = await parseBody(c, UpdateCardBodySchema, (b) => fundingRules(b, known));
  const velocity = body.velocity_period?.toUpperCase();
  const usage = body.card_usage_type?.toUpperCase();
  const card = findCard(c);
  refuseClosed(card);
  const state = c.get("state");
  if (body.auto_top_up_amount !== undefined) {
    card.autoTopUpAmount = body.auto_top_up_amount;
    card.autoTopUpEnabled = body.auto_top_up_amount > 0;
    // `topup_type` says how the card is funded (§2.3): it follows the auto top-up, as on seeded cards; a pool card stays `pool`.
    if (card.poolAccountId === null) card.topupType = card.autoTopUpEnabled ? "auto_topup" : "manual";
  }
  if (body.card_usage_type_amount !== undefined) card.allowedMaxBalance = body.card_usage_type_amount;
  if (velocity !== undefined && velocity !== card.velocityPeriod) {
    card.velocityPeriod = velocity;
    // A new top-up period counts from now: its first top-up falls at the start of the next one.
    card.nextTopUpMs = nextTopUpAfter(velocity, state.clock.nowMs());
  }
  if (usage !== undefined) card.cardUsageType = usage;
  if (body.nickname !== undefined) card.nickname = body.nickname.trim();
  card.updatedAt = state.clock.stampIso();
  audit(c, "card.funding_updated", card, body);
  return ok(c, { card: writtenCardView(c, card) }, { message: UPDATED });
}

async function changeStatus(c: SandboxContext): Promise<Response> {
  requireScope(c, "cards:write");
  const body = await parseBody(c, ChangeStatusBodySchema);
  // Exactly `suspended` (§4.9: "any other value ... gives 403"): `Suspended`, the status as lists show it, is another value.
  if (body.status !== SUSPEND_STATUS) {
    throw new ForbiddenError("Only suspension is permitted through the API", "status");
  }
  const card = findCard(c);
  const state = c.get("state");
  // Retrying an accepted or committed suspension has the same final effect (§7 rule 4).
  const alreadySuspending = card.status === "Suspended" || state.isSuspensionPending(card);
  if (!alreadySuspending) {
    if (card.status !== "Active") throw suspensionRefused(`card is ${card.status.toLowerCase()}`);
    state.queueSuspension(card);
    audit(c, "card.suspension_requested", card, { reason_given: body.reason !== undefined });
  }
  return ok(c, { message: "Card status change is being processed" }, { message: UPDATED });
}

async function updateVelocityLimit(c: SandboxContext): Promise<Response> {
  requireScope(c, "cards:write");
  const body = await parseBody(c, UpdateVelocityLimitBodySchema, (b) =>
    b.spend_limit_period !== undefined && !isOneOf(b.spend_limit_period.toUpperCase(), SPEND_LIMIT_PERIODS) ? [enumError("spend_limit_period", SPEND_LIMIT_PERIODS)] : [],
  );
  const period = body.spend_limit_period?.toUpperCase();
  const card = findCard(c);
  const refusal = issuerRefusal(body, card);
  if (refusal !== undefined) {
    // The call reached the issuer, so it is audited too (§4.9 "every call"; spec-gaps); nothing changed, nobody is told.
    audit(c, "card.velocity_limit_refused", card, { ...body, error_code: refusal.code });
    throw new ValidationError([refusal], "Limit could not be applied at the issuer");
  }
  c.get("state").setSpendLimit(card, {
    active: body.spend_limit_active,
    period,
    maxAmount: body.spend_limit_max_amount,
    frequency: body.spend_limit_frequency,
  });
  // Every call is audited and notifies, even when nothing changed (§4.9).
  audit(c, "card.velocity_limit_updated", card, body);
  return ok(c, { card: writtenCardView(c, card) }, { status: 201, message: CREATED });
}

/** Why the issuer refuses a limit the provider accepted: one over what it takes, or a card it has closed. */
function issuerRefusal(body: UpdateVelocityLimitBody, card: CardRecord): FieldError | undefined {
  if (body.spend_limit_max_amount !== undefined && body.spend_limit_max_amount > ISSUER_MAX_SPEND_LIMIT) {
    return { field: "spend_limit_max_amount", code: "OUT_OF_RANGE", message: `the issuer accepts at most ${ISSUER_MAX_SPEND_LIMIT}` };
  }
  if (isClosed(card)) return { field: null, code: "INVALID_STATE", message: `card is ${card.status.toLowerCase()}` };
  return undefined;
}

/**
 * What counts as an address (§4.10 shows only `<EMAIL>`): zod's email pattern, dot-separated non-empty parts on both
 * sides of the one `@` and a top-level domain of letters, so `a@b..c` or `.a@b.co` is listed under failed, not invited.
 */
const EMAIL = z.regexes.email;

async function invite(c: SandboxContext): Promise<Response> {
  requireScope(c, "users:read");
  const body = await parseBody(c, InviteBodySchema, undefined, [{ field: "end_user", max: MAX_INVITATIONS, items: "addresses" }]);
  const valid = body.end_user.filter((e) => EMAIL.test(e.trim()));
  if (valid.length === 0) {
    throw new ValidationError([{ field: "end_user", code: "INVALID_FORMAT", message: "end_user holds no valid email address" }], "No valid email addresses");
  }
  const data = c.get("data");
  const success: string[] = [];
  const failed: string[] = [];
  for (const raw of body.end_user) {
    const email = raw.trim();
    const key = email.toLowerCase();
    if (!EMAIL.test(email) || data.invited.has(key)) {
      failed.push(email);
      continue;
    }
    data.invited.add(key);
    success.push(email);
  }
  audit(c, "users.invited", undefined, { invited: success.length, failed: failed.length });
  if (body.end_user.length > IMMEDIATE_INVITATION_LIMIT) {
    return ok(c, { message: "Invitations are queued for processing" }, { status: 201, message: CREATED });
  }
  return ok(
    c,
    {
      message: `${success.length} invitation(s) sent, ${failed.length} failed`,
      summary: {
        success_emails: { end_user: success },
        failed_emails: { end_user: failed },
        total_processed: { success: success.length, failed: failed.length, total: success.length + failed.length },
      },
    },
    { status: 201, message: CREATED },
  );
}

/** Absent from a body: not sent, or `null`. */
function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** A text value upper-cased for an enum comparison (case-insensitive); undefined for anything else. */
function upperText(value: unknown): string | undefined {
  return typeof value === "string" ? value.toUpperCase() : undefined;
}

/** Body of `POST /public/v1/core/cards` (spec: not shown; the sandbox's choice, see docs/spec-gaps.md). */
interface IssueCardBody {
  nickname: string;
  cardType: "Virtual" | "Physical";
  userId: string;
  accountType: "reloadable" | "pool";
  poolAccountId: string | null;
  /** The `card_usage_type_amount` sent, if any. */
  maxBalance: number | undefined;
}

function checkIssueBody(raw: unknown, data: CompanyData): IssueCardBody {
  const body = (raw !== null && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const errors: FieldError[] = [];
  const nickname = body.nickname;
  const nicknameRefused = nicknameError(nickname);
  if (nicknameRefused) errors.push(nicknameRefused);
  // A field sent with another type than text is named as sent (as the shared body checks do), never read as absent.
  const cardType = upperText(body.card_type);
  if (isAbsent(body.card_type)) errors.push({ field: "card_type", code: "REQUIRED", message: "card_type is required" });
  else if (cardType !== "VIRTUAL" && cardType !== "PHYSICAL") errors.push(sentEnumError("card_type", body.card_type, ["VIRTUAL", "PHYSICAL"]));
  const userId = body.user_id;
  if (isAbsent(userId) || userId === "") errors.push({ field: "user_id", code: "REQUIRED", message: "user_id is required" });
  else if (typeof userId !== "string") errors.push({ field: "user_id", code: "INVALID_FORMAT", message: "user_id must be a string" });
  else if (!data.users.some((u) => u.userId === userId)) errors.push({ field: "user_id", code: "NOT_FOUND", message: "user_id is not a user profile of this company" });
  const accountType = isAbsent(body.account_type) ? "RELOADABLE" : upperText(body.account_type);
  if (accountType !== "RELOADABLE" && accountType !== "POOL") errors.push(sentEnumError("account_type", body.account_type, ["RELOADABLE", "POOL"]));
  // A pool named for a card of its own account is a contradiction, not a detail to drop: the card could not be moved later.
  else if (accountType === "RELOADABLE" && !isAbsent(body.pool_account_id)) {
    errors.push(
      isAbsent(body.account_type)
        ? { field: "account_type", code: "REQUIRED", message: "account_type POOL is required with pool_account_id" }
        : { field: "account_type", code: "INVALID_ENUM", message: "account_type must be POOL when pool_account_id is sent" },
    );
  }
  let poolAccountId: string | null = null;
  if (accountType === "POOL") {
    const pool = data.pools.find((p) => p.id === body.pool_account_id);
    // As `user_id`: an empty id names nothing, and one that is no text is malformed, not an unknown pool.
    if (isAbsent(body.pool_account_id) || body.pool_account_id === "") errors.push({ field: "pool_account_id", code: "REQUIRED", message: "pool_account_id is required for a pool card" });
    else if (typeof body.pool_account_id !== "string") errors.push({ field: "pool_account_id", code: "INVALID_FORMAT", message: "pool_account_id must be a string" });
    else if (!pool) errors.push({ field: "pool_account_id", code: "NOT_FOUND", message: "pool_account_id is not a pool account of this company" });
    else if (pool.status !== "Active") errors.push({ field: "pool_account_id", code: "INVALID_STATE", message: "pool account is not active" });
    else poolAccountId = pool.id;
  }
  const amount = body.card_usage_type_amount;
  if (!isAbsent(amount)) {
    const checked = checkBody(IssueAmountSchema, { card_usage_type_amount: amount });
    const refused = checked.ok ? positiveAmountError(checked.value.card_usage_type_amount) : checked.errors[0];
    if (refused) errors.push(refused);
  }
  if (errors.length > 0) throw new ValidationError(errors);
  return {
    nickname: (nickname as string).trim(),
    cardType: cardType === "PHYSICAL" ? "Physical" : "Virtual",
    userId: userId as string,
    accountType: accountType === "POOL" ? "pool" : "reloadable",
    poolAccountId,
    maxBalance: typeof amount === "number" ? amount : undefined,
  };
}

async function issueCard(c: SandboxContext): Promise<Response> {
  requireScope(c, "cards:write");
  const data = c.get("data");
  const body = checkIssueBody(await readJson(c), data);
  const state = c.get("state");
  const stamp = state.clock.stampIso();
  // Ids of issued cards come from their own stream so issuing does not shift seeded data; the company's place in the
  // seed order keeps two companies issuing in one second from drawing alike.
  const companies = state.listCompanies();
  const prng = new Prng((state.seed * 31 + data.cards.length * 7 + state.clock.nowSeconds() + companies.indexOf(data) * 7919) >>> 0);
  // Card and account ids are unique across the whole sandbox, as the provider's are (another company's id is a 404).
  const used = new Set(companies.flatMap((d) => d.cards.flatMap((card) => [card.id, card.accountExternalId])));
  const fresh = (prefix: string): string => {
    for (;;) {
      const id = `${prefix}${prng.code(10)}`;
      if (!used.has(id)) return id;
    }
  };
  const holder = data.users.find((u) => u.userId === body.userId);
  const pool = body.poolAccountId ? data.pools.find((p) => p.id === body.poolAccountId) : undefined;
  if (!holder) throw new ApiError(500, "user vanished");
  const card: CardRecord = {
    id: fresh("CA"),
    nickname: body.nickname,
    // A virtual card is usable at once; a physical card waits for activation on delivery.
    status: body.cardType === "Virtual" ? "Active" : "Inactive",
    cardType: body.cardType,
    lastFour: prng.digits(4),
    holder,
    accountType: body.accountType,
    accountExternalId: pool ? pool.id : fresh("AC"),
    poolAccountId: pool ? pool.id : null,
    currency: data.company.currency,
    // The amount sent holds for a pool card too, as a funding update's does; unsent, the pool's, or 5000 for a card's own account.
    allowedMaxBalance: body.maxBalance ?? (pool ? pool.allowedMaxBalance : 5_000),
    topupType: pool ? "pool" : "manual",
    velocityPeriod: "MONTHLY",
    cardUsageType: pool ? POOL_CARD_USAGE_TYPE : "RELOADABLE",
    autoTopUpAmount: 0,
    autoTopUpEnabled: false,
    autoLoadOnTransactionApproval: false,
    nextTopUpMs: nextTopUpAfter("MONTHLY", state.clock.nowMs()),
    floatManagementEnabled: false,
    cardReplaced: false,
    replacedByCardId: null,
    atmWithdrawalAllowed: body.cardType === "Physical",
    countryLimitsActive: false,
    categoryLimitsActive: false,
    lowBalanceNotificationActive: false,
    lowBalanceNotificationAmount: 0,
    segments: [],
    customSegments: [],
    issuedAt: stamp,
    activatedAt: body.cardType === "Virtual" ? stamp : null,
    terminatedAt: null,
    createdAt: stamp,
    updatedAt: stamp,
    balance: 0,
    pendingAuthorisations: 0,
    spendLimit: { active: false, period: "MONTHLY", maxAmount: 0, frequency: 0, updatedAt: stamp },
    allowedCountries: [],
    blockedCountries: [],
    allowedMccs: [],
  };
  data.cards.push(card);
  if (!pool) data.statementAccounts.push({ accountExternalId: card.accountExternalId, accountType: "Card", card });
  audit(c, "card.issued", card, { card_type: card.cardType });
  return ok(c, { card: writtenCardView(c, card) }, { status: 201, message: CREATED });
}

function audit(c: SandboxContext, action: string, card: CardRecord | undefined, details: object): void {
  c.get("data").audit.push({
    at: c.get("state").clock.nowIso(),
    action,
    ...(card ? { cardId: card.id } : {}),
    details: { ...details },
  });
}
