import { describe, expect, it } from "vitest";
import { issuesOf } from "../../../shared/qashio/parse.js";
import {
  CardBalanceSchema,
  CoreCardSchema,
  ERP_CARD_DETAIL_KEYS,
  ErpCardDetailSchema,
  ErpCardSchema,
  parseWithDrift,
} from "../../../shared/qashio/schemas/index.js";
import {
  CARD_ID,
  cardBalanceFixture,
  coreCardFixture,
  coreCardWriteFixture,
  erpCardDetailFixture,
  erpCardFixture,
} from "./fixtures.js";

describe("ErpCardSchema", () => {
  it("reads a spec-shaped card without drift", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture());
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject({
      id: CARD_ID,
      status: "Active",
      card_type: "Virtual",
      cardholder: { employee_id: "EMP-0042" },
      allowed_max_balance: 10000,
      atm_withdrawal_allowed: false,
    });
  });

  it("normalises amounts sent as strings on the ERP card too, and refuses one that is no number", () => {
    const card = ErpCardSchema.parse(erpCardFixture({ allowed_max_balance: "5000.00", low_balance_notification_amount: "" }));
    expect(card).toMatchObject({ allowed_max_balance: 5000, low_balance_notification_amount: null });
    const bad = ErpCardSchema.safeParse(erpCardFixture({ allowed_max_balance: { amount: 5000 } }));
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["allowed_max_balance"]);
  });

  it("rejects a card id that does not start with CA", () => {
    expect(ErpCardSchema.safeParse(erpCardFixture({ id: "7Q2M9X4K" })).success).toBe(false);
  });

  it("accepts lowercase status and uppercase card type without drift, keeping the raw case", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ status: "suspended", card_type: "PHYSICAL" }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject({ status: "suspended", card_type: "PHYSICAL" });
  });

  it("keeps a company-account account_type and reports it as drift", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ account_type: "company_account" }));
    expect(result.success && result.data.account_type).toBe("company_account");
    expect(result.drift).toEqual([{ schema: "ErpCard", field: "account_type", value: "company_account", count: 1 }]);
  });

  it("keeps an unlisted status and reports it", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ status: "Frozen" }));
    expect(result.drift).toEqual([{ schema: "ErpCard", field: "status", value: "Frozen", count: 1 }]);
  });

  it("reads null for the status, card type, account type and cardholder a card may leave empty", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ status: null, card_type: null, account_type: null, cardholder: null }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject({ status: null, card_type: null, account_type: null, cardholder: null });
  });

  it("reads a cardholder's employee id sent as a number as its decimal text, and keeps the cardholder's other members", () => {
    const card = ErpCardSchema.parse(erpCardFixture({ cardholder: { name: "Aisha Rahman", employee_id: 42, department: "Sales" } }));
    expect(card.cardholder).toEqual({ name: "Aisha Rahman", employee_id: "42", department: "Sales" });
  });

  it("reads an account type in another letter case without drift, keeping the raw case", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ account_type: "POOL" }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data.account_type).toBe("POOL");
  });

  it("normalises the segments' identifiers and refuses segments that are neither a list nor a keyed object", () => {
    const card = ErpCardSchema.parse(erpCardFixture({ segments: [{ id: 7, name: "Dubai Marina", code: 1001 }] }));
    expect(card.segments).toEqual([{ id: "7", name: "Dubai Marina", code: "1001" }]);
    const bad = ErpCardSchema.safeParse(erpCardFixture({ segments: "Dubai Marina" }));
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["segments"]);
  });

  it("keeps unknown fields", () => {
    expect(ErpCardSchema.parse(erpCardFixture({ card_color: "black" }))).toMatchObject({ card_color: "black" });
  });

  it("reports an unlisted card type as drift, as it does a status", () => {
    const result = parseWithDrift(ErpCardSchema, erpCardFixture({ card_type: "Metal" }));
    expect(result.drift).toEqual([{ schema: "ErpCard", field: "card_type", value: "Metal", count: 1 }]);
  });

  it("holds each §2.3 member to its type, null taken for every one", () => {
    // The §2.3 table, written out: a member of the wrong type is a broken record, not kept as sent.
    const wrongByType = { boolean: "yes", number: "lots", string: { text: "x" } };
    const members = {
      boolean: [
        "float_management_enabled",
        "card_replaced",
        "purchase_limits_active",
        "transaction_limits_active",
        "country_limits_active",
        "category_limits_active",
        "atm_withdrawal_allowed",
        "low_balance_notification_active",
      ],
      number: ["allowed_max_balance", "low_balance_notification_amount"],
      string: [
        "card_nickname",
        "masked_card_number",
        "company_name",
        "account_external_id",
        "card_currency",
        "topup_type",
        "issued_at",
        "activated_at",
        "terminated_at",
        "created_at",
      ],
    } as const;
    for (const [type, fields] of Object.entries(members) as [keyof typeof members, readonly string[]][]) {
      for (const field of fields) {
        expect(ErpCardSchema.parse(erpCardFixture({ [field]: null }))[field]).toBeNull();
        const bad = ErpCardSchema.safeParse(erpCardFixture({ [field]: wrongByType[type] }));
        expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual([field]);
      }
    }
  });
});

describe("ErpCardDetailSchema", () => {
  it("reads every configuration object of the single card read", () => {
    const card = ErpCardDetailSchema.parse(erpCardDetailFixture());
    expect(card).toMatchObject({
      purchase_limits: { enabled: true, amount: 5000, number_of_purchases: 50 },
      country_limits: { allowed_countries: ["ARE", "SAU"] },
      merchant_category_limits: { categories: [{ name: "Gambling", mcc_codes: ["7995"] }] },
      topup_configuration: { auto_topup_enabled: true, auto_topup_amount: 1000 },
      auto_top_up_configuration: { amount: 1000, trigger: "below_threshold" },
      atm_configuration: { atm_withdrawal_allowed: false, limit_per_withdrawal: 0 },
    });
  });

  it("accepts null configuration objects", () => {
    const card = ErpCardDetailSchema.parse(erpCardDetailFixture({ purchase_limits: null, atm_configuration: null }));
    expect(card.purchase_limits).toBeNull();
  });

  it("normalises the counts and amounts of the configuration objects sent as strings", () => {
    const card = ErpCardDetailSchema.parse(
      erpCardDetailFixture({
        purchase_limits: { enabled: "true", amount: "5000", number_of_purchases: "50" },
        topup_configuration: { auto_topup_enabled: "false", auto_topup_amount: "1000" },
        atm_configuration: { atm_withdrawal_allowed: "true", max_amount: "2000", number_of_withdrawals: "3", limit_per_withdrawal: "1000" },
      }),
    );
    expect(card).toMatchObject({
      purchase_limits: { enabled: true, amount: 5000, number_of_purchases: 50 },
      topup_configuration: { auto_topup_enabled: false, auto_topup_amount: 1000 },
      atm_configuration: { atm_withdrawal_allowed: true, max_amount: 2000, number_of_withdrawals: 3, limit_per_withdrawal: 1000 },
    });
  });

  it("takes MCC codes as text or numbers, a number read as its four digits as a transaction's mcc_code is, null country lists, and refuses a category that is no object", () => {
    const card = ErpCardDetailSchema.parse(
      erpCardDetailFixture({
        country_limits: { restriction_mode: "allow", allowed_countries: null, blocked_countries: null },
        merchant_category_limits: { restriction_type: "block", categories: [{ name: "Gambling", mcc_codes: [7995, "7800", 742] }] },
      }),
    );
    expect(card.country_limits).toMatchObject({ allowed_countries: null, blocked_countries: null });
    expect(card.merchant_category_limits?.categories).toEqual([{ name: "Gambling", mcc_codes: ["7995", "7800", "0742"] }]);
    const bad = ErpCardDetailSchema.safeParse(erpCardDetailFixture({ merchant_category_limits: { categories: ["Gambling"] } }));
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["merchant_category_limits.categories.0"]);
  });

  it("refuses country lists that are no lists", () => {
    for (const key of ["allowed_countries", "blocked_countries"]) {
      const bad = ErpCardDetailSchema.safeParse(erpCardDetailFixture({ country_limits: { [key]: "ARE" } }));
      expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual([`country_limits.${key}`]);
    }
  });

  it("names the six configuration objects as the members the list view does not carry", () => {
    expect([...ERP_CARD_DETAIL_KEYS].sort()).toEqual([
      "atm_configuration",
      "auto_top_up_configuration",
      "country_limits",
      "merchant_category_limits",
      "purchase_limits",
      "topup_configuration",
    ]);
  });
});

describe("CoreCardSchema", () => {
  it("normalises boolean-like and numeric-like strings", () => {
    const card = CoreCardSchema.parse(coreCardFixture());
    expect(card).toMatchObject({
      allow_atm: false,
      allow_replace_card: true,
      spend_limit_active: true,
      is_account_manager: false,
      auto_top_up_amount: 1000,
      card_usage_type_amount: 10000,
      account_balance: 2350.75,
      spend_limit: 5000,
      transactions_limit: { max_amount: 2000, min_amount: 0, frequency: 10 },
      wallets_status: { apple_pay: true, google_pay: false, samsung_pay: false },
      advanced_velocity_limits: [{ active: true, amount: 500, frequency: 5 }],
    });
  });

  it("accepts the typed forms too", () => {
    const card = CoreCardSchema.parse(coreCardFixture({ allow_atm: true, account_balance: 12 }));
    expect(card).toMatchObject({ allow_atm: true, account_balance: 12 });
  });

  it.each(["yes", "1"])("rejects %j as a boolean", (value) => {
    expect(CoreCardSchema.safeParse(coreCardFixture({ allow_atm: value })).success).toBe(false);
  });

  it("rejects a non-numeric amount string", () => {
    expect(CoreCardSchema.safeParse(coreCardFixture({ account_balance: "12,5" })).success).toBe(false);
  });

  it.each([
    ["status", "active"],
    ["status", "Active"],
    ["card_type", "PHYSICAL"],
    ["card_type", "VIRTUAL"],
    ["card_type", "Virtual"],
  ])("accepts %s %j without drift", (field, value) => {
    const result = parseWithDrift(CoreCardSchema, coreCardFixture({ [field]: value }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data[field as "status" | "card_type"]).toBe(value);
  });

  it("keeps an unlisted card type and reports it", () => {
    const result = parseWithDrift(CoreCardSchema, coreCardFixture({ card_type: "METAL" }));
    expect(result.drift).toEqual([{ schema: "CoreCard", field: "card_type", value: "METAL", count: 1 }]);
  });

  it("reads the object forms of the write responses", () => {
    const card = CoreCardSchema.parse(coreCardWriteFixture());
    expect(card).toMatchObject({
      spend_limit: { max_amount: 5000, remaining_balance: 4200, consumed_limit: 800 },
      card_product: { name: "Corporate Virtual", auth_settings_allowed_list_status_active: false },
    });
  });

  it("reads empty strings as null", () => {
    const card = CoreCardSchema.parse(coreCardFixture({ allow_atm: "", account_balance: "" }));
    expect(card).toMatchObject({ allow_atm: null, account_balance: null });
  });

  it("rejects a card id that does not start with CA", () => {
    expect(CoreCardSchema.safeParse(coreCardFixture({ id: 1234 })).success).toBe(false);
    // A string is not enough: the id must carry the CA prefix, as the ERP card's does.
    const result = CoreCardSchema.safeParse(coreCardFixture({ id: "XX1234" }));
    expect(result.success ? [] : result.error.issues.map((i) => i.path.join("."))).toEqual(["id"]);
  });

  it("reads null for every member a card may leave empty: enums, limits, flags or amounts and nested objects", () => {
    const empty = {
      status: null,
      card_type: null,
      limit_amount_notification: null,
      spend_limit: null,
      atm_limit: null,
      atm_transactions_limit: null,
      transactions_limit: null,
      shipping_details: null,
      wallets_status: null,
      user_profile: null,
      advanced_velocity_limits: null,
      card_product: null,
    };
    const result = parseWithDrift(CoreCardSchema, coreCardFixture(empty));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject(empty);
  });

  it("reads identifiers sent as numbers as their decimal text", () => {
    const card = CoreCardSchema.parse(
      coreCardFixture({ last_four: 4821, account_id: 88120, user_profile: { external_id: 7, user_id: 1001, employee_id: 42, department_id: 3 } }),
    );
    expect(card).toMatchObject({
      last_four: "4821",
      account_id: "88120",
      user_profile: { external_id: "7", user_id: "1001", employee_id: "42", department_id: "3" },
    });
  });

  it("says what a member taking a flag or an amount, or an amount or a limit, takes, not a bare 'Invalid input'", () => {
    const result = CoreCardSchema.safeParse(coreCardFixture({ limit_amount_notification: "yes", spend_limit: "lots" }));
    expect(result.success ? [] : issuesOf(result.error).map(({ path, message }) => `${path}: ${message}`)).toEqual([
      'limit_amount_notification: expected a flag (a boolean, or true or false as text) or an amount (a number, or a decimal number as text), or null',
      'spend_limit: expected an amount (a number, or a decimal number as text) or a limit object, or null',
    ]);
  });

  it("reads a last four sent as a number as its four digits, leading zeros kept", () => {
    expect(CoreCardSchema.parse(coreCardFixture({ last_four: 7 }))).toMatchObject({ last_four: "0007" });
    // A card ending 0000 sent as the number 0.
    expect(CoreCardSchema.parse(coreCardFixture({ last_four: 0 }))).toMatchObject({ last_four: "0000" });
  });

  it("keeps an identifier sent as empty text as that text, not a broken record", () => {
    const card = CoreCardSchema.parse(coreCardFixture({ account_id: "", user_profile: { employee_id: "" } }));
    expect(card).toMatchObject({ account_id: "", user_profile: { employee_id: "" } });
  });

  it("takes a card id of 256 characters and refuses a longer one (it becomes a storage key)", () => {
    const longest = `CA${"7".repeat(254)}`;
    expect(CoreCardSchema.safeParse(coreCardFixture({ id: longest })).success).toBe(true);
    const result = CoreCardSchema.safeParse(coreCardFixture({ id: `${longest}7` }));
    expect(result.success ? [] : result.error.issues.map((i) => i.path.join("."))).toEqual(["id"]);
  });

  it("reads null for an amount and a limit count sent as text as its number, and refuses a timestamp or an id list of another type", () => {
    const card = CoreCardSchema.parse(
      coreCardWriteFixture({ account_balance: null, spend_limit: { max_amount: 5000, num_of_days: "30" } }),
    );
    expect(card).toMatchObject({ account_balance: null, spend_limit: { num_of_days: 30 } });
    for (const [field, value] of [["first_activated_at", 1704877920], ["advanced_velocity_limits", [{ expense_category_ids: "cat-4" }]]] as const) {
      const result = CoreCardSchema.safeParse(coreCardFixture({ [field]: value }));
      expect(result.success ? [] : result.error.issues.map((i) => i.path[0])).toEqual([field]);
    }
  });

  it("reads a member documented only by name as a flag or an amount, on the card and in its limits", () => {
    const card = CoreCardSchema.parse(
      coreCardWriteFixture({
        limit_amount_notification: "500",
        card_balance_running_low_notification: "true",
        spend_limit: { max_amount: 5000, remote_sync: 2 },
        advanced_velocity_limits: [{ id: "avl-1", remote_sync: "false", remote_linked: "true", expense_category_ids: [3, "cat-4"] }],
      }),
    );
    expect(card).toMatchObject({
      limit_amount_notification: 500,
      card_balance_running_low_notification: true,
      spend_limit: { remote_sync: 2 },
      advanced_velocity_limits: [{ remote_sync: false, remote_linked: true, expense_category_ids: [3, "cat-4"] }],
    });
  });

  it("keeps unknown members of its nested objects", () => {
    const extra = { added_later: "kept" };
    const card = CoreCardSchema.parse(
      coreCardWriteFixture({
        shipping_details: { method: "courier", ...extra },
        wallets_status: { apple_pay: true, ...extra },
        user_profile: { user_id: "usr_1001", ...extra },
        transactions_limit: { max_amount: 2000, ...extra },
        spend_limit: { max_amount: 5000, ...extra },
        advanced_velocity_limits: [{ id: "avl-1", ...extra }],
        card_product: { id: "cp-1", ...extra },
      }),
    );
    expect(card).toMatchObject({
      shipping_details: extra,
      wallets_status: extra,
      user_profile: extra,
      transactions_limit: extra,
      spend_limit: extra,
      advanced_velocity_limits: [extra],
      card_product: extra,
    });
  });

  it("refuses shipping details that are no object, or whose method is no text", () => {
    for (const shipping_details of ["courier", { method: 3 }]) {
      const result = CoreCardSchema.safeParse(coreCardFixture({ shipping_details }));
      expect(result.success ? [] : result.error.issues.map((i) => i.path[0])).toEqual(["shipping_details"]);
    }
  });

  it("keeps unknown fields", () => {
    expect(CoreCardSchema.parse(coreCardFixture({ pin_set: "true" }))).toMatchObject({ pin_set: "true" });
  });
});

describe("CardBalanceSchema", () => {
  it("reads the company balance and per-card balances", () => {
    expect(CardBalanceSchema.parse(cardBalanceFixture())).toEqual(cardBalanceFixture());
  });

  it("normalises string balances", () => {
    const data = CardBalanceSchema.parse(
      cardBalanceFixture({ cards: [{ card_id: CARD_ID, balance: "10.50", status: "suspended" }] }),
    );
    expect(data.cards[0]?.balance).toBe(10.5);
  });

  it("reads a card's last four sent as a number as its four digits, leading zeros kept", () => {
    const data = CardBalanceSchema.parse(cardBalanceFixture({ cards: [{ card_id: CARD_ID, last_four: 310 }] }));
    expect(data.cards[0]?.last_four).toBe("0310");
  });

  it("rejects a card entry without a CA id", () => {
    expect(CardBalanceSchema.safeParse(cardBalanceFixture({ cards: [{ card_id: "x" }] })).success).toBe(false);
  });

  it("rejects data without cards rather than reading no balances", () => {
    expect(CardBalanceSchema.safeParse(cardBalanceFixture({ cards: undefined })).success).toBe(false);
  });

  it("reads a null company balance, a company amount sent as text and a null card status", () => {
    expect(CardBalanceSchema.parse(cardBalanceFixture({ company_balance: null })).company_balance).toBeNull();
    const data = CardBalanceSchema.parse(
      cardBalanceFixture({ company_balance: { amount: "125000.50", currency: "AED" }, cards: [{ card_id: CARD_ID, status: null }] }),
    );
    expect(data).toMatchObject({ company_balance: { amount: 125000.5 }, cards: [{ status: null }] });
  });

  it("takes a card status in any letter case as listed, and reports an unlisted one as cards.status", () => {
    const statuses = (status: string) => parseWithDrift(CardBalanceSchema, cardBalanceFixture({ cards: [{ card_id: CARD_ID, status }] })).drift;
    expect(statuses("ACTIVE")).toEqual([]);
    expect(statuses("frozen")).toEqual([{ schema: "CardBalance", field: "cards.status", value: "frozen", count: 1 }]);
  });
});
