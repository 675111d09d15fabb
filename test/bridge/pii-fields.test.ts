import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { applyPii, applyPiiInPlace, applyPiiToBody, conformPii, PERSONAL_FIELDS, REDACTED, type PiiPolicy } from "../../shared/bridge/pii.js";
import { TransactionSchema } from "../../shared/qashio/schemas/transaction.js";
import { ErpCardSchema } from "../../shared/qashio/schemas/erp-card.js";
import { CoreCardSchema } from "../../shared/qashio/schemas/core-card.js";
import { PoolAccountSchema } from "../../shared/qashio/schemas/pool-account.js";
import { normaliseTransaction } from "../../shared/bridge/transactions.js";
import { quotedNames } from "../doc-text.js";

type Json = Record<string, unknown>;

const redact: PiiPolicy = { mode: "redact" };
const hash: PiiPolicy = { mode: "hash", salt: "tenant-salt-0123456789" };
const HASHED = /^hmac-sha256:[0-9a-f]{64}$/;

/** §2.2: a transaction with every personal field, and the fields kept on purpose. */
const transaction = {
  id: "5f0c7a5e-2d4b-4f6a-9b1e-3c8d2a7e9f10",
  qashio_id: "CT0000042",
  card_name: "Travel card",
  card_external_id: "CA7Q2M9X4K",
  card_holder_name: "Aisha Rahman",
  card_holder_email: " Aisha.Rahman@Example.com",
  employee_id: "EMP-0042",
  approval_status: "approved",
  approved_by: { user_external_id: "USR-APPROVER-1", name: "Omar Said", employee_id: "EMP-0099", email: "Omar.Said@Example.com" },
  memo: "client lunch",
  transaction_description: "Careem ride",
  line_items: [{ id: "li-1", amount: 10, description: "ride to the office" }],
  receipts: [{ id: "rcpt-1", name: "receipt.jpg" }],
};

/** §2.3: an ERP card. */
const erpCard = {
  id: "CA7Q2M9X4K",
  card_nickname: "Travel card",
  status: "Active",
  cardholder: { name: "Bilal Khan", email: "bilal.khan@example.com", employee_id: "EMP-0077" },
};

/** §2.4: an operational card: the holder, the addresses, the step-up delegate. */
const coreCard = {
  id: "CA7Q2M9X4L",
  nickname: "Ops card",
  status: "active",
  user_name: "Chen Wei",
  user_email: "chen.wei@example.com",
  shipping_address: { line1: "Villa Seven Jumeirah Road", city: "Umm Suqeim", recipient: "Chen Wei" },
  return_address: { line1: "Warehouse Road Seven", city: "Al Quoz" },
  shipping_details: {
    method: "courier",
    return_address: { line1: "Return Lane Nine" },
    shipping_address: { line1: "Shipping Lane Three" },
  },
  step_up_auth_delegated_user_profile: { first_name: "Dana", last_name: "Levi", email: "dana.levi@example.com" },
  user_profile: {
    department_name: "Finance",
    first_name: "Chen",
    last_name: "Wei",
    company_name: "Falcon Trading",
    user_name: "chenwei.login",
    system_role_name: "Employee",
    email: "Chen.Wei@Example.com ",
    user_email: "chen.wei+card@example.com",
    external_id: "USR-EXT-9",
    user_id: "u-123",
    status: "active",
    fullname: "Chen Wei",
    employee_id: "EMP-0099",
    department_id: "dep-1",
    managing_departments: [],
  },
};

/** §2.5: a pool account: its creator and managers. */
const poolAccount = {
  id: "pool-1",
  account_name: "Marketing pool",
  created_by: { user_id: "usr_1", name: "Elif Demir", email: "elif.demir@example.com" },
  account_managers: [
    { user_id: "usr_2", name: "Farah Aziz", email: "farah.aziz@example.com" },
    { user_id: "usr_3", name: "Gita Rao", email: "GITA.RAO@example.com" },
  ],
};

/** An ERP card with members the spec shows only inside the objects of people (§2.3, §2.4), as a provider may add them. */
const addedMembers = {
  id: "CA7Q2M9X4M",
  card_nickname: "Hotel card",
  first_name: "Hana",
  last_name: "Takeshita",
  fullname: "Hana Takeshita",
  email: "Hana.Takeshita@Example.com",
  cardholder: { name: "Hana Takeshita", first_name: "Hana", email: "hana.takeshita@example.com" },
};

const FIXTURES: readonly [string, Json][] = [
  ["transaction (§2.2)", transaction],
  ["ERP card (§2.3)", erpCard],
  ["operational card (§2.4)", coreCard],
  ["pool account (§2.5)", poolAccount],
  ["a card with members a provider added", addedMembers],
];

/** Every personal value of the fixtures, as sent (parts of masked-whole addresses and profiles included). */
const CLEARTEXT = [
  "Aisha Rahman", "Aisha.Rahman@Example.com", "EMP-0042", "Omar Said",
  "Bilal Khan", "bilal.khan@example.com", "EMP-0077",
  "Chen Wei", "chen.wei@example.com", "Villa Seven", "Umm Suqeim", "Warehouse Road", "Al Quoz", "Return Lane",
  "Shipping Lane", "Dana", "Levi", "dana.levi@example.com", "Chen", "Wei", "chenwei.login", "chen.wei+card",
  "EMP-0099",
  "Omar.Said@Example.com", "Elif Demir", "elif.demir@example.com", "Farah Aziz", "farah.aziz@example.com", "Gita Rao", "GITA.RAO@example.com",
  "Hana", "Takeshita",
];

/** What must pass unchanged: provider user ids, card names, free text. */
const KEPT: readonly [Json, string, unknown][] = [
  [transaction, "approved_by.user_external_id", "USR-APPROVER-1"],
  [transaction, "card_name", "Travel card"],
  [transaction, "memo", "client lunch"],
  [transaction, "transaction_description", "Careem ride"],
  [erpCard, "card_nickname", "Travel card"],
  [coreCard, "nickname", "Ops card"],
  [coreCard, "user_profile.user_id", "u-123"],
  [coreCard, "user_profile.external_id", "USR-EXT-9"],
  [coreCard, "user_profile.department_name", "Finance"],
  [coreCard, "shipping_details.method", "courier"],
  [poolAccount, "created_by.user_id", "usr_1"],
  [poolAccount, "account_name", "Marketing pool"],
  [addedMembers, "card_nickname", "Hotel card"],
];

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const member of Object.values(value)) deepFreeze(member);
    Object.freeze(value);
  }
  return value;
}
for (const [, fixture] of FIXTURES) deepFreeze(fixture);

/** Values at a PERSONAL_FIELDS path (`a`, `a.b`, `a[].b`); none when a step is missing. */
function valuesAt(object: Json, path: string): unknown[] {
  const [head = "", member] = path.split(".");
  const each = head.endsWith("[]");
  const parent = object[each ? head.slice(0, -2) : head];
  if (parent === undefined) return [];
  if (member === undefined) return [parent];
  const holders = each ? (parent as Json[]) : [parent as Json];
  return holders.filter((h) => h && member in h).map((h) => h[member]);
}

/** The member at a dotted path. */
function at(object: Json, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (o as Json)[k], object);
}

/** Member names of every object, depth first, to compare order. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value !== "object" || value === null) return typeof value;
  return Object.entries(value).map(([k, v]) => [k, shape(v)]);
}

describe("the personal fields of §2.2-§2.5", () => {
  it("are all carried by the fixtures, so the checks below cover the whole table", () => {
    for (const path of PERSONAL_FIELDS) {
      const found = FIXTURES.flatMap(([, fixture]) => valuesAt(fixture, path));
      expect(found.length, path).toBeGreaterThan(0);
    }
  });

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("leave no cleartext under %s, mask each path, keep ids, card names and free text", (_, policy) => {
    for (const [name, fixture] of FIXTURES) {
      const out = applyPii(fixture, policy);
      const text = JSON.stringify(out).toLowerCase();
      for (const value of CLEARTEXT) expect(text, `${name}: ${value}`).not.toContain(value.toLowerCase().trim());
      for (const path of PERSONAL_FIELDS) {
        for (const value of valuesAt(out, path)) {
          if (policy.mode === "redact") expect(value, `${name}: ${path}`).toBe(REDACTED);
          else expect(value, `${name}: ${path}`).toMatch(HASHED);
        }
      }
      for (const [kept, path, value] of KEPT) if (kept === fixture) expect(at(out, path), path).toEqual(value);
      // Member order holds, except that a masked-whole object becomes a string.
      expect(Object.keys(out)).toEqual(Object.keys(fixture));
    }
    expect(shape(applyPii(transaction, policy))).toEqual(shape(transaction));
    expect(shape(applyPii(poolAccount, policy))).toEqual(shape(poolAccount));
  });

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("leave no cleartext under %s after the typed client's schemas parsed the objects", (_, policy) => {
    const parsed: Json[] = [
      TransactionSchema.parse(transaction),
      ErpCardSchema.parse(erpCard),
      CoreCardSchema.parse(coreCard),
      PoolAccountSchema.parse(poolAccount),
    ];
    for (const object of parsed) {
      const text = JSON.stringify(applyPii(object, policy)).toLowerCase();
      for (const value of CLEARTEXT) expect(text, value).not.toContain(value.toLowerCase().trim());
    }
  });

  it("give one person one pseudonym under hash wherever they appear: employee ids and normalised emails", () => {
    const txn = applyPii(transaction, hash);
    const card = applyPii({ ...erpCard, cardholder: { ...erpCard.cardholder, employee_id: "EMP-0042", email: "aisha.rahman@example.com" } }, hash);
    const core = applyPii(coreCard, hash);
    expect(card.cardholder.employee_id).toBe(txn.employee_id);
    expect(card.cardholder.email).toBe(txn.card_holder_email);
    expect(core.user_profile.email).toBe(core.user_email);
    expect(core.user_profile.employee_id).not.toBe(txn.employee_id);
    // Addresses are masked whole: one marker or one hash in place of the object.
    expect(applyPii(coreCard, redact).shipping_address).toBe(REDACTED);
    expect(core.shipping_details.shipping_address).toMatch(HASHED);
    expect(core.shipping_details.method).toBe("courier");
  });

  it("handle a parent of the wrong shape whole, and array elements that are not objects one by one", () => {
    const odd = {
      approved_by: "Omar Said",
      account_managers: { name: "Farah Aziz" },
      created_by: ["Elif Demir"],
      user_profile: "Chen Wei",
    };
    expect(applyPii(odd, redact)).toEqual({ approved_by: REDACTED, account_managers: REDACTED, created_by: REDACTED, user_profile: REDACTED });
    const managers = applyPii({ account_managers: ["Farah Aziz", null, "", { user_id: "usr_3", name: "Gita Rao" }] }, hash).account_managers;
    expect(managers[0]).toMatch(HASHED);
    expect(managers.slice(1, 3)).toEqual([null, ""]);
    expect(managers[3]).toEqual({ user_id: "usr_3", name: expect.stringMatching(HASHED) });
    expect(JSON.stringify(applyPii(odd, hash))).not.toMatch(/Omar|Farah|Elif|Chen/);
  });

  it("leave null, absent and empty values alone and copy no nested object without a personal value", () => {
    const approvedBy = deepFreeze({ user_external_id: "USR-1", name: null });
    const managers = deepFreeze([{ user_id: "usr_2", name: "", email: null }, { user_id: "usr_3" }]);
    const cardholder = deepFreeze({ name: "", email: null, employee_id: null });
    const target: Json = { employee_id: null, approved_by: approvedBy, account_managers: managers, cardholder, user_profile: undefined };
    applyPiiInPlace(target, redact);
    expect(target).toEqual({ employee_id: null, approved_by: approvedBy, account_managers: managers, cardholder, user_profile: undefined });
    expect(target["cardholder"]).toBe(cardholder);
    expect(target["approved_by"]).toBe(approvedBy);
    expect(target["account_managers"]).toBe(managers);
  });
});

describe("conformPii on the new personal fields", () => {
  /** A snapshot as the bridge stored it before employee ids and approver names were masked. */
  function storedByOldRules(policy: PiiPolicy): Json {
    const masked = applyPii(transaction, policy);
    return { ...masked, employee_id: transaction.employee_id, approved_by: transaction.approved_by };
  }

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("brings a snapshot stored under %s by the old rules to what applyPii stores now", (_, policy) => {
    const conformed = conformPii(storedByOldRules(policy), policy) as typeof transaction;
    expect(conformed).toEqual(applyPii(transaction, policy));
    expect([conformed.employee_id, conformed.approved_by.name]).toEqual(policy.mode === "redact" ? [REDACTED, REDACTED] : [expect.stringMatching(HASHED), expect.stringMatching(HASHED)]);
    expect(conformed.approved_by.user_external_id).toBe("USR-APPROVER-1");
    const oldCard = { ...applyPii(erpCard, policy), cardholder: { ...applyPii(erpCard, policy).cardholder, employee_id: "EMP-0077" } };
    expect(conformPii(oldCard, policy)).toEqual(applyPii(erpCard, policy));
    for (const [, fixture] of FIXTURES) expect(conformPii(fixture, policy)).toEqual(applyPii(fixture, policy));
  });

  it("keeps masked values in nested objects and arrays, and masks the cleartext beside them", () => {
    const otherSalt = applyPii(poolAccount, { mode: "hash", salt: "another-salt-0123" });
    const stored = { ...otherSalt, account_managers: [otherSalt.account_managers[0], poolAccount.account_managers[1]] };
    const conformed = conformPii(stored, hash) as typeof poolAccount;
    expect(conformed.account_managers[0]).toEqual(otherSalt.account_managers[0]);
    expect(conformed.account_managers[1]).toEqual(applyPii(poolAccount, hash).account_managers[1]);
    expect(conformed.account_managers[1]).toEqual({ user_id: "usr_3", name: expect.stringMatching(HASHED), email: expect.stringMatching(HASHED) });
    expect(conformed.created_by).toEqual(otherSalt.created_by);
    expect(conformPii({ approved_by: { name: REDACTED } }, hash)).toEqual({ approved_by: { name: REDACTED } });
  });
});

describe("conformPii copies on change", () => {
  it.each([
    ["full", { mode: "full" } as PiiPolicy],
    ["redact", redact],
    ["hash", hash],
  ] as const)("returns an object already in %s form itself", (_, policy) => {
    for (const [name, fixture] of FIXTURES) {
      const stored = deepFreeze(applyPii(fixture, policy));
      expect(conformPii(stored, policy), name).toBe(stored);
    }
    const markers = deepFreeze({ card_holder_name: REDACTED, employee_id: "", approved_by: { user_external_id: "USR-1", name: REDACTED }, cardholder: null });
    expect(conformPii(markers, policy)).toBe(markers);
  });

  it("returns an object hashed with another salt itself under hash, as a hash is never hashed again", () => {
    for (const [name, fixture] of FIXTURES) {
      const stored = deepFreeze(applyPii(fixture, { mode: "hash", salt: "another-salt-0123" }));
      expect(conformPii(stored, hash), name).toBe(stored);
    }
  });

  it("hashes a value that only starts like a hash (cleartext after the 64 digits): it is no pseudonym, so not kept", () => {
    const lookalike = `hmac-sha256:${"a".repeat(64)} Ann Holder`;
    const conformed = conformPii({ card_holder_name: lookalike, approved_by: { name: `${lookalike}@x` } }, hash) as Json;
    expect(conformed.card_holder_name).toMatch(HASHED);
    expect((conformed.approved_by as Json).name).toMatch(HASHED);
    expect(JSON.stringify(conformed)).not.toContain("Ann Holder");
  });

  it("returns a copy of a changed object and leaves the deep-frozen input as it was", () => {
    const before = structuredClone(transaction);
    for (const policy of [redact, hash]) {
      const conformed = conformPii(transaction, policy);
      expect(conformed).not.toBe(transaction);
      expect(conformed).toEqual(applyPii(transaction, policy));
    }
    expect(transaction).toEqual(before);
  });

  it("copies only the nested objects and arrays on the way to a changed value; the rest is shared", () => {
    const txn = deepFreeze({ ...applyPii(transaction, hash), approved_by: transaction.approved_by });
    const conformedTxn = conformPii(txn, hash) as typeof transaction;
    expect(conformedTxn.approved_by).not.toBe(txn.approved_by);
    expect(conformedTxn.approved_by.name).toMatch(HASHED);
    expect(conformedTxn.line_items).toBe(txn.line_items);
    expect(conformedTxn.receipts).toBe(txn.receipts);

    const masked = applyPii(poolAccount, redact);
    const pool = deepFreeze({ ...masked, account_managers: [masked.account_managers[0], poolAccount.account_managers[1]] });
    const conformedPool = conformPii(pool, redact) as typeof poolAccount;
    expect(conformedPool.account_managers).not.toBe(pool.account_managers);
    expect(conformedPool.account_managers[0]).toBe(pool.account_managers[0]);
    expect(conformedPool.account_managers[1]).toEqual(masked.account_managers[1]);
    expect(conformedPool.created_by).toBe(pool.created_by);
  });
});

describe("an approver's employee id", () => {
  // The quarantine masks it (applyPiiToBody takes the record's rule inside a member it masked): an event holding the
  // same approver must not carry it in clear.
  const approved = { ...transaction, approved_by: { user_external_id: "USR-APPROVER-1", name: "Omar Said", employee_id: "EMP-0099" } };

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("is masked in events and snapshots under %s, as in a quarantined body", (_name, policy) => {
    const published = applyPii(approved, policy).approved_by as Json;
    const quarantined = (applyPiiToBody(approved, policy) as Json)["approved_by"] as Json;
    expect(published["employee_id"]).not.toBe("EMP-0099");
    expect(published).toEqual(quarantined);
    expect(published["user_external_id"]).toBe("USR-APPROVER-1");
  });

  it("is masked in a snapshot stored before, by conformPii", () => {
    expect((conformPii(approved, redact)["approved_by"] as Json)["employee_id"]).toBe(REDACTED);
  });
});

describe("an approver's and a pool creator's email", () => {
  // §2.2 and §2.5 show no email for them, but the managers beside a creator carry one (§2.5) and so do cardholders
  // (§2.3, §2.4): sent, it names the employee as their name does.
  const record = { id: "r-1", approved_by: { user_external_id: "USR-1", email: "Omar.Said@Example.com" }, created_by: { user_id: "usr_1", email: "elif.demir@example.com" } };

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("is masked under %s in events, snapshots and quarantine records alike", (_name, policy) => {
    const published = applyPii(record, policy);
    expect(JSON.stringify(published)).not.toMatch(/omar\.said|elif\.demir/i);
    expect(published.approved_by.user_external_id).toBe("USR-1");
    expect(conformPii(record, policy)).toEqual(published);
    expect(applyPiiToBody(record, policy)).toEqual(published);
    if (policy.mode === "hash") expect(published.approved_by.email).toBe(applyPii({ ...record, approved_by: { email: "omar.said@example.com" } }, hash).approved_by.email);
  });
});

describe("inside a parent of a nested personal path (approved_by, cardholder, user_profile, ...)", () => {
  // A quarantined body masks there what the record's rule masks (applyPiiToBody takes the record's rule inside every
  // object): an event's copy (applyPii) and a snapshot's (conformPii) of the same record must mask no less, and give the
  // same pseudonym. Every personal path of the table, and every member name it ends in, put inside every parent.
  const parents = [...new Set(PERSONAL_FIELDS.filter((path) => path.includes(".")).map((path) => (path.split(".")[0] ?? "").replace("[]", "")))];
  const placed = [...new Set([...PERSONAL_FIELDS, ...PERSONAL_FIELDS.map((path) => path.split(".").at(-1) ?? "")])];
  const CLEAR = "Zara Clearvalue ZC@Example.com";

  /** `{ a: value }`, `{ a: { b: value } }` or `{ a: [{ b: value }] }` for the path `a`, `a.b` or `a[].b`. */
  function holding(path: string, value: unknown): Json {
    const [head = "", member] = path.split(".");
    if (member === undefined) return { [head]: value };
    return head.endsWith("[]") ? { [head.slice(0, -2)]: [{ [member]: value }] } : { [head]: { [member]: value } };
  }

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("masks under %s in events and snapshots what the quarantine masks, with the same pseudonym", (_name, policy) => {
    let masked = 0;
    for (const parent of parents) {
      const own = PERSONAL_FIELDS.find((path) => path.startsWith(`${parent}.`) || path.startsWith(`${parent}[].`))?.split(".")[1] ?? "";
      const each = PERSONAL_FIELDS.some((path) => path.startsWith(`${parent}[].`));
      for (const path of placed) {
        // Once alone (the paths leave the parent as sent) and once beside a member of its own the paths mask.
        for (const beside of [{}, { [own]: "Own Person" }]) {
          const inner = { user_id: "u-1", ...beside, ...holding(path, CLEAR) };
          const record = { id: "r-1", [parent]: each ? [inner] : inner };
          const quarantined = (applyPiiToBody(record, policy) as Json)[parent];
          const label = `${parent} holding ${path}${own in beside ? ` beside ${own}` : ""}`;
          expect(applyPii(record, policy)[parent], label).toEqual(quarantined);
          expect(conformPii(record, policy)[parent], label).toEqual(quarantined);
          if (!JSON.stringify(quarantined).includes(CLEAR)) masked += 1;
        }
      }
    }
    // Not a vacuous match: the quarantine masks most placements (user_external_id-like members stay, none placed here).
    expect(masked).toBeGreaterThan(parents.length * 2);
  });

  it("masks a cardholder's user_email and a creator's employee_id in events, as the same value is masked at the top", () => {
    const card = { id: "CA1", cardholder: { user_email: "Bilal.Khan@Example.com" }, created_by: { user_id: "usr_1", employee_id: "EMP-7" } };
    const published = applyPii(card, hash);
    expect(published.cardholder).toEqual({ user_email: applyPii({ user_email: "bilal.khan@example.com" }, hash).user_email });
    expect(published.created_by).toEqual({ user_id: "usr_1", employee_id: applyPii({ employee_id: "EMP-7" }, hash).employee_id });
    expect(applyPiiToBody(card, hash)).toEqual(published);
  });
});

describe("outside the parents of nested personal paths (line_items, segments, erp_supplier, ...)", () => {
  // A quarantined body masks every object in it as a record (applyPiiToBody): the event's copy (applyPii, and
  // normaliseTransaction's applyPiiInPlace) and the snapshot's (conformPii) of the same transaction must mask the same
  // members there, with the same pseudonym. Every personal path of the table, placed in the record's other objects.
  const CLEAR = "Zara Clearvalue ZC@Example.com";

  /** `{ a: value }`, `{ a: { b: value } }` or `{ a: [{ b: value }] }` for the path `a`, `a.b` or `a[].b`. */
  function holding(path: string, value: unknown): Json {
    const [head = "", member] = path.split(".");
    if (member === undefined) return { [head]: value };
    return head.endsWith("[]") ? { [head.slice(0, -2)]: [{ [member]: value }] } : { [head]: { [member]: value } };
  }

  /** The transaction fixture with `inner` in each kind of place the spec shows objects a person is not expected in. */
  const placements: readonly [string, (inner: Json) => Json][] = [
    ["line_items[]", (inner) => ({ ...transaction, line_items: [{ id: "li-1", amount: 10, ...inner }] })],
    ["line_items[].segments[]", (inner) => ({ ...transaction, line_items: [{ id: "li-1", segments: [{ id: "s-1", ...inner }] }] })],
    ["segments{}", (inner) => ({ ...transaction, segments: { Location: { id: "s-1", ...inner } } })],
    ["erp_supplier", (inner) => ({ ...transaction, erp_supplier: { id: "sup-1", remote_name: "Careem", ...inner } })],
    ["receipts[][]", (inner) => ({ ...transaction, receipts: [[{ id: "r-1", ...inner }]] })],
    ["erp_company", (inner) => ({ ...transaction, erp_company: { id: "co-1", name: "Falcon Trading", ...inner } })],
  ];

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("masks under %s in events and snapshots what the quarantine masks, with the same pseudonym", (_name, policy) => {
    let masked = 0;
    for (const [where, place] of placements) {
      for (const path of PERSONAL_FIELDS) {
        const record = place(holding(path, CLEAR));
        const quarantined = applyPiiToBody(record, policy);
        const label = `${where} holding ${path}`;
        expect(applyPii(record, policy), label).toEqual(quarantined);
        expect(conformPii(record, policy), label).toEqual(quarantined);
        expect(normaliseTransaction(record, policy), label).toEqual(quarantined);
        if (!JSON.stringify(quarantined).includes(CLEAR)) masked += 1;
      }
    }
    // Not a vacuous match: the quarantine masks every placement.
    expect(masked).toBe(placements.length * PERSONAL_FIELDS.length);
  });

  it("masks a line item's employee id in the event as the transaction's own, and shares the untouched objects", () => {
    const record = deepFreeze({ ...transaction, line_items: [{ id: "li-1", employee_id: "EMP-0042" }, { id: "li-2" }] });
    const published = applyPii(record, hash);
    expect(published.line_items[0]).toEqual({ id: "li-1", employee_id: published.employee_id });
    expect(published.line_items[1]).toBe(record.line_items[1]);
    expect(published.receipts).toBe(record.receipts);
    expect(conformPii(published, hash)).toBe(published);
  });
});

describe("the typed client's schemas and the published objects' personal fields", () => {
  // The event schemas (docs/events/*.json) declare each personal field of a transaction and an ERP card a string or
  // null; under `full` it is published as validated, so the client's schema must refuse another type or make it one.
  it.each([
    ["transaction", transaction, TransactionSchema],
    ["ERP card", erpCard, ErpCardSchema],
  ] as const)("refuse a %s whose personal field is not a string, or make it one", (_name, fixture, schema) => {
    const paths = PERSONAL_FIELDS.filter((path) => valuesAt(fixture, path).length > 0);
    expect(paths.length).toBeGreaterThan(2);
    for (const path of paths) {
      for (const odd of [42, { full: "Ann Holder" }, ["Ann Holder"], true]) {
        const [head = "", member] = path.split(".");
        const input = member === undefined ? { ...fixture, [head]: odd } : { ...fixture, [head]: { ...(fixture as Json)[head] as Json, [member]: odd } };
        const parsed = schema.safeParse(input);
        if (parsed.success) expect(typeof at(parsed.data as Json, path), `${path} = ${JSON.stringify(odd)}`).toBe("string");
      }
    }
  });
});

describe("docs/events.md, PII modes", () => {
  it("lists exactly the personal fields the bridge masks", () => {
    const text = readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8");
    const section = text.slice(text.indexOf("## PII modes"), text.indexOf("\n## ", text.indexOf("## PII modes") + 1));
    // The table of personal fields: | spec | object | masked | kept |
    const rows = section.split("\n").filter((line) => /^\| §/.test(line));
    const listed = rows.flatMap((row) => quotedNames(row.split("|")[3] ?? ""));
    expect([...listed].sort()).toEqual([...PERSONAL_FIELDS].sort());
  });
});

describe("a person's first_name, last_name, fullname or email outside the objects the spec shows them in", () => {
  // §2.4 shows the names only in user_profile and §2.3-§2.5 emails only in a cardholder, a profile or a manager; a
  // provider adding fields (the schemas keep unknown members) may send them on the record itself or in any object.
  const record = {
    id: "r-9",
    first_name: "Yusuf",
    last_name: "Karimov",
    fullname: "Yusuf Karimov",
    email: "Yusuf.Karimov@Example.com",
    cardholder: { name: "Yusuf Karimov", first_name: "Yusuf" },
    approved_by: { user_external_id: "USR-1", last_name: "Karimov" },
    line_items: [{ id: "li-1", fullname: "Yusuf Karimov", email: "yusuf.karimov@example.com", segments: [{ id: "s-1", name: "Dubai" }] }],
    erp_company: { id: "co-1", name: "Falcon Trading" },
  };

  it.each([
    ["redact", redact],
    ["hash", hash],
  ] as const)("are masked under %s in events, snapshots and quarantine records alike; other names are kept", (_name, policy) => {
    const published = applyPii(record, policy);
    expect(JSON.stringify(published)).not.toMatch(/yusuf|karimov/i);
    expect(conformPii(record, policy)).toEqual(published);
    expect(applyPiiToBody(record, policy)).toEqual(published);
    expect(published.approved_by.user_external_id).toBe("USR-1");
    expect(published.erp_company.name).toBe("Falcon Trading");
    expect(published.line_items[0]?.segments[0]?.name).toBe("Dubai");
  });

  it("give under hash the pseudonym the same value has in a user_profile", () => {
    const published = applyPii(record, hash);
    const profile = applyPii({ user_profile: { first_name: "Yusuf", fullname: "Yusuf Karimov", email: "yusuf.karimov@example.com" } }, hash).user_profile;
    expect(published.first_name).toBe(profile.first_name);
    expect(published.cardholder.first_name).toBe(profile.first_name);
    expect(published.fullname).toBe(profile.fullname);
    expect(published.line_items[0]?.fullname).toBe(profile.fullname);
    expect(published.email).toBe(profile.email);
    expect(published.line_items[0]?.email).toBe(profile.email);
  });
});
