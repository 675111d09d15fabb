import { describe, expect, it } from "vitest";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { COLOURS, NO_COLOURS, formatCycleSummary, formatEvent, mergeCounts, shouldColour, showValue } from "../../shared/cli/printer.js";
import { summaryOf } from "../../shared/cli/run.js";

function event(type: string, subject: BridgeEvent["detail"]["subject"], data: BridgeEvent["detail"]["data"]): BridgeEvent {
  return {
    source: "qashio.bridge",
    detailType: type,
    // Published a day after the change: the line shows when the change happened.
    time: "2026-03-02T08:00:00.000Z",
    detail: { id: "e1", type, schema_version: "1", tenant: "acme", occurred_at: "2026-03-01T10:15:02.000Z", subject, data },
  };
}

/** A transaction.created event of `object`, for the transaction `qashioId`. */
const created = (qashioId: string, object: Record<string, unknown>): BridgeEvent =>
  event("transaction.created", { type: "transaction", id: qashioId, qashio_id: qashioId, sequence: 1 }, { object });

const purchase = event(
  "transaction.created",
  { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
  { object: { transaction_category: "purchase", billing_amount: 120, billing_currency: "AED", merchant_name: "Careem" } },
);

describe("formatEvent", () => {
  it("shows time, type, reference, amount and merchant of a new purchase", () => {
    expect(formatEvent(purchase)).toBe("03-01 10:15:02  transaction.created  CT1001  AED 120.00  Careem");
  });

  it("names the category and the parent of a refund", () => {
    const refund = event(
      "transaction.created",
      { type: "transaction", id: "7a", qashio_id: "CT1002", sequence: 1 },
      { object: { transaction_category: "refund", billing_amount: -20.5, billing_currency: "AED", merchant_name: "Careem" }, parent: { id: "6f1c", qashio_id: "CT1001" } },
    );
    expect(formatEvent(refund)).toBe("03-01 10:15:02  transaction.created  CT1002  refund  AED -20.50  Careem  of CT1001");
  });

  it("lists up to three changes with before and after, counting bookkeeping timestamps", () => {
    const changed = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
      {
        object: { billing_amount: 120, billing_currency: "AED" },
        changes: [
          { path: "/updated_at", before: "a", after: "b" },
          { path: "/approval_status", before: "pending", after: "approved" },
          { path: "/memo", before: null, after: "team lunch" },
          { path: "/line_items/li-1/amount", before: 10, after: 12 },
          { path: "/segments/s-1/code", before: "A", after: "B" },
        ],
      },
    );
    expect(formatEvent(changed)).toBe(
      "03-01 10:15:02  transaction.changed  CT1001  AED 120.00  approval_status: pending → approved, memo: null → team lunch, line_items/li-1/amount: 10 → 12, +2 more",
    );
  });

  it("shows a single substantive change alone, counting the bookkeeping timestamps beside it", () => {
    const approved = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
      {
        object: {},
        changes: [
          { path: "/modified_date", before: "a", after: "b" },
          { path: "/approval_status", before: "pending", after: "approved" },
        ],
      },
    );
    expect(formatEvent(approved)).toBe("03-01 10:15:02  transaction.changed  CT1001  approval_status: pending → approved, +1 more");
  });

  it("shows bookkeeping timestamps when nothing else changed", () => {
    const touched = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
      { object: {}, changes: [{ path: "/updated_at", before: "2026-03-01T10:00:00Z", after: "2026-03-02T10:00:00Z" }] },
    );
    expect(formatEvent(touched)).toBe("03-01 10:15:02  transaction.changed  CT1001  updated_at: 2026-03-01T10:00:00Z → 2026-03-02T10:00:00Z");
  });

  it("shows a card suspension with nickname and status change", () => {
    const suspended = event(
      "card.suspended",
      { type: "card", id: "CA77", sequence: 1 },
      { object: { card_nickname: "Travel", status: "Suspended" }, changes: [{ path: "/status", before: "Active", after: "Suspended" }] },
    );
    expect(formatEvent(suspended)).toBe('03-01 10:15:02  card.suspended       CA77  "Travel"  status: Active → Suspended');
  });

  it("colours the type only when given the colour palette", () => {
    expect(formatEvent(purchase, COLOURS)).toContain("\u001b[32mtransaction.created");
    expect(formatEvent(purchase, NO_COLOURS)).not.toContain("\u001b[");
  });

  it("colours a changed transaction yellow and what changed blue", () => {
    const changed = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
      { object: {}, changes: [{ path: "/memo", before: "a", after: "b" }] },
    );
    const line = formatEvent(changed, COLOURS);
    expect(line).toContain("\u001b[33mtransaction.changed");
    expect(line).toContain("\u001b[34mmemo: a → b\u001b[39m");
  });

  it("colours a card suspension red, other card events magenta", () => {
    const card = (type: string) => event(type, { type: "card", id: "CA77", sequence: 1 }, { object: {} });
    expect(formatEvent(card("card.suspended"), COLOURS)).toContain("\u001b[31mcard.suspended");
    expect(formatEvent(card("card.updated"), COLOURS)).toContain("\u001b[35mcard.updated");
  });

  it("colours every card event but a suspension magenta: card.created and card.status_changed too", () => {
    const card = (type: string) => event(type, { type: "card", id: "CA77", sequence: 1 }, { object: {} });
    for (const type of ["card.created", "card.status_changed"]) expect(formatEvent(card(type), COLOURS)).toContain(`\u001b[35m${type}`);
  });

  it("paints each part of a line in its own colour and closes each one: time and parent dim, reference bold, category cyan", () => {
    const refund = created("CT1002", { transaction_category: "refund", billing_amount: -20.5, billing_currency: "AED", merchant_name: "Careem" });
    const withParent = { ...refund, detail: { ...refund.detail, data: { ...refund.detail.data, parent: { id: "6f1c", qashio_id: "CT1001" } } } };
    expect(formatEvent(withParent, COLOURS)).toBe(
      "\u001b[2m03-01 10:15:02\u001b[22m  \u001b[32mtransaction.created\u001b[39m  \u001b[1mCT1002\u001b[22m  \u001b[36mrefund\u001b[39m  AED -20.50  Careem  \u001b[2mof CT1001\u001b[22m",
    );
  });

  it("dims a card's status, shown when nothing changed, as the line's secondary text", () => {
    const card = event("card.created", { type: "card", id: "CA78", sequence: 1 }, { object: { status: "Active" } });
    expect(formatEvent(card, COLOURS)).toContain("  \u001b[2mActive\u001b[22m");
  });

  it("cuts a changed value at 24 characters in the line", () => {
    const memo = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: "CT1001", sequence: 1 },
      { object: {}, changes: [{ path: "/memo", before: "b".repeat(25), after: "a".repeat(25) }] },
    );
    expect(formatEvent(memo)).toBe(`03-01 10:15:02  transaction.changed  CT1001  memo: ${"b".repeat(23)}… → ${"a".repeat(23)}…`);
  });

  it("falls back to the transaction amount and currency when the billing amount is missing", () => {
    const pending = created("CT1003", { transaction_category: "purchase", transaction_amount: 99, transaction_currency: "USD", merchant_name: "Uber" });
    expect(formatEvent(pending)).toBe("03-01 10:15:02  transaction.created  CT1003  USD 99.00  Uber");
  });

  it("shows the billing amount, not the transaction amount, when the provider sent both", () => {
    const converted = created("CT1006", { billing_amount: 367.3, billing_currency: "AED", transaction_amount: 100, transaction_currency: "USD" });
    expect(formatEvent(converted)).toBe("03-01 10:15:02  transaction.created  CT1006  AED 367.30");
  });

  it("shows an amount the provider sent as text as that text", () => {
    expect(formatEvent(created("CT1007", { billing_amount: "120.5", billing_currency: "AED" }))).toBe("03-01 10:15:02  transaction.created  CT1007  AED 120.5");
  });

  it("shows an amount with its currency's own minor digits, never rounding away a digit the provider sent", () => {
    const priced = (amount: unknown, currency?: string) =>
      formatEvent(
        event(
          "transaction.created",
          { type: "transaction", id: "9c", qashio_id: "CT1004", sequence: 1 },
          { object: { billing_amount: amount, ...(currency === undefined ? {} : { billing_currency: currency }) } },
        ),
      ).replace("03-01 10:15:02  transaction.created  CT1004  ", "");
    expect(priced(1.235, "KWD")).toBe("KWD 1.235");
    expect(priced(1.5, "BHD")).toBe("BHD 1.500");
    expect(priced(1500, "JPY")).toBe("JPY 1500");
    expect(priced(-7, "ISK")).toBe("ISK -7");
    // More decimals than the currency has: as sent, not rounded to the currency's digits.
    expect(priced(1500.5, "JPY")).toBe("JPY 1500.5");
    expect(priced(12.345, "AED")).toBe("AED 12.345");
    expect(priced(1e-7, "USD")).toBe("USD 0.0000001");
    // 100 decimals, the most toFixed writes.
    expect(priced(1e-100, "USD")).toBe(`USD 0.${"0".repeat(99)}1`);
    // Padding to the currency's digits adds zeros, not the binary value's digits the provider did not send.
    expect(priced(123456789012345.6, "KWD")).toBe("KWD 123456789012345.600");
    // A whole number past 2^53 as sent, not the binary value's digits toFixed(0) writes (…567168).
    expect(priced(12345678901234567000, "KWD")).toBe("KWD 12345678901234567000.000");
    expect(priced(1e20, "KWD")).toBe("KWD 100000000000000000000.000");
    // A code the currency tables do not know, one that is no currency code at all, or none: two digits, as before.
    expect(priced(1.5, "XYZ")).toBe("XYZ 1.50");
    expect(priced(1.5, "dollars")).toBe("dollars 1.50");
    expect(priced(1.5)).toBe("1.50");
    // Past what toFixed writes in plain digits: as JavaScript writes the number, never a throw.
    expect(priced(5e-324, "USD")).toBe("USD 5e-324");
    expect(priced(1e21, "KWD")).toBe("KWD 1e+21");
    expect(priced(-1e21, "KWD")).toBe("KWD -1e+21");
  });

  it("shows provider text as inert text: no terminal escapes, no line breaks, whatever field holds it", () => {
    // Every string here is the provider's: ids (`CT\S+` lets ESC through), merchant, category, currency, the parent,
    // changed keys (the diff's paths) and their values.
    const hostile = "\u001b]0;owned\u0007\u001b[2J\r\nerror  forged\u009b31m\u202egnp.exe";
    const changed = event(
      "transaction.changed",
      { type: "transaction", id: "6f1c", qashio_id: `CT1${hostile}`, sequence: 1 },
      {
        object: { transaction_category: hostile, billing_amount: hostile, billing_currency: hostile, merchant_name: hostile },
        parent: { id: "7a", qashio_id: `CT2${hostile}` },
        changes: [{ path: `/memo${hostile}`, before: hostile, after: { [hostile]: hostile } }],
      },
    );
    const card = event("card.updated", { type: "card", id: `CA1${hostile}`, sequence: 1 }, { object: { card_nickname: hostile, status: hostile } });
    const timed = { ...card, detail: { ...card.detail, occurred_at: hostile } };
    for (const e of [changed, card, timed]) {
      for (const palette of [NO_COLOURS, COLOURS]) {
        // The colour palette's own SGR sequences are the only escapes left.
        // eslint-disable-next-line no-control-regex -- taking out the palette's own escapes
        const text = formatEvent(e, palette).replace(/\u001b\[\d+m/g, "");
        // eslint-disable-next-line no-control-regex -- the point: none of them may reach the terminal
        expect(text).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
      }
    }
    expect(formatEvent(changed)).toContain(String.raw`CT1\u001b]0;owned\u0007\u001b[2J\r\nerror  forged\u009b31m\u202egnp.exe`);
  });

  it("leaves out an empty category, currency, merchant, nickname or status", () => {
    const blank = created("CT1005", { transaction_category: "", billing_amount: 5, billing_currency: "", merchant_name: "" });
    expect(formatEvent(blank)).toBe("03-01 10:15:02  transaction.created  CT1005  5.00");
    const card = event("card.updated", { type: "card", id: "CA79", sequence: 1 }, { object: { card_nickname: "", status: "" } });
    expect(formatEvent(card)).toBe("03-01 10:15:02  card.updated         CA79");
  });

  it("shows a numeric field as its number", () => {
    const card = event("card.created", { type: "card", id: "CA78", sequence: 1 }, { object: { card_nickname: 4411, status: "Active" } });
    expect(formatEvent(card)).toBe('03-01 10:15:02  card.created         CA78  "4411"  Active');
  });
});

describe("showValue", () => {
  it("cuts long values with an ellipsis", () => {
    expect(showValue("x".repeat(50), 10)).toBe(`${"x".repeat(9)}…`);
  });

  it("keeps a value of exactly the maximum length whole", () => {
    expect(showValue("x".repeat(10), 10)).toBe("x".repeat(10));
  });

  it("cuts at 40 characters when given no maximum", () => {
    expect(showValue("x".repeat(40))).toBe("x".repeat(40));
    expect(showValue("x".repeat(41))).toBe(`${"x".repeat(39)}…`);
  });

  it("counts the escapes of control characters toward the maximum, so an escaped value stays as narrow", () => {
    expect(showValue("\u001b".repeat(30), 24)).toHaveLength(24);
  });

  it("renders objects as JSON and undefined as the empty set", () => {
    expect(showValue({ a: 1 })).toBe('{"a":1}');
    expect(showValue(undefined)).toBe("∅");
  });
});

describe("formatCycleSummary", () => {
  it("counts events by type", () => {
    expect(formatCycleSummary({ cycle: 3, published: { "transaction.created": 2, "card.created": 0 }, acknowledged: 2, quarantined: 0, durationMs: 84.4 })).toBe(
      "── cycle 3: 2 events (2 transaction.created) · 2 acknowledged · 0 quarantined · 84 ms",
    );
  });

  it("says one event in the singular and rounds the duration to the nearest millisecond", () => {
    expect(formatCycleSummary({ cycle: 1, published: { "card.suspended": 1 }, acknowledged: 1, quarantined: 0, durationMs: 84.6 })).toBe(
      "── cycle 1: 1 event (1 card.suspended) · 1 acknowledged · 0 quarantined · 85 ms",
    );
  });

  it("colours refused acknowledges and the stop yellow, quarantined records red", () => {
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, acknowledgeRefused: 1, quarantined: 2, durationMs: 5, partial: true }, COLOURS)).toBe(
      "\u001b[2m── cycle 1: \u001b[22m0 events · 0 acknowledged · \u001b[33m1 acknowledge refused\u001b[39m · \u001b[31m2 quarantined\u001b[39m · 5 ms · " +
        "\u001b[33mstopped at budget, resumes next cycle\u001b[39m",
    );
  });

  it("leaves no quarantined records uncoloured", () => {
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 0, durationMs: 5 }, COLOURS)).toBe(
      "\u001b[2m── cycle 1: \u001b[22m0 events · 0 acknowledged · 0 quarantined · 5 ms",
    );
  });

  it("shows ids the provider refused to acknowledge next to the acknowledged count, only when there are some", () => {
    expect(formatCycleSummary({ cycle: 2, published: {}, acknowledged: 4, acknowledgeRefused: 1, quarantined: 0, durationMs: 30 })).toBe(
      "── cycle 2: 0 events · 4 acknowledged · 1 acknowledge refused · 0 quarantined · 30 ms",
    );
    expect(formatCycleSummary({ cycle: 2, published: {}, acknowledged: 4, acknowledgeRefused: 0, quarantined: 0, durationMs: 30 })).toBe(
      "── cycle 2: 0 events · 4 acknowledged · 0 quarantined · 30 ms",
    );
  });

  it("takes the refused acknowledges from the transaction cycle's report in run's summary line", () => {
    const transactions = { ...emptyReport("transactions"), acknowledged: 3, acknowledgeRefused: 2 };
    const result = { transactions, cards: emptyReport("cards"), events: 0, complete: true, interrupted: false, durationMs: 12, quarantineSize: 0 };
    expect(summaryOf(5, result, NO_COLOURS)).toBe("── cycle 5: 0 events · 3 acknowledged · 2 acknowledge refused · 0 quarantined · 12 ms");
  });

  it("adds up both halves' events and quarantined records in run's summary line", () => {
    const transactions = { ...emptyReport("transactions"), published: { "transaction.created": 2 }, quarantined: 2 };
    const cards = { ...emptyReport("cards"), published: { "card.suspended": 1 }, quarantined: 1 };
    const result = { transactions, cards, events: 3, complete: true, interrupted: false, durationMs: 9, quarantineSize: 3 };
    expect(summaryOf(4, result, NO_COLOURS)).toBe("── cycle 4: 3 events (2 transaction.created, 1 card.suspended) · 0 acknowledged · 3 quarantined · 9 ms");
  });

  it("says when a cycle stopped at its budget", () => {
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 1, durationMs: 5, partial: true })).toBe(
      "── cycle 1: 0 events · 0 acknowledged · 1 quarantined · 5 ms · stopped at budget, resumes next cycle",
    );
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 0, durationMs: 5, partial: true, interrupted: true })).toBe(
      "── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 5 ms · stopped as asked, the next run resumes",
    );
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 0, durationMs: 5, partial: true, interrupted: true, resumable: false })).toBe(
      "── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 5 ms · stopped as asked",
    );
    // Asked to stop while the event sink also took nothing: the person's own stop is what the line names (as run's error does).
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 0, durationMs: 5, partial: true, interrupted: true, publisherUnavailable: true })).toBe(
      "── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 5 ms · stopped as asked, the next run resumes",
    );
  });

  it("says what each pull status listed when the cycle first read it, only for a cycle that stopped before it finished", () => {
    const transactions = { ...emptyReport("transactions"), outcome: "deadline" as const, backlog: { not_synced: 41, outdated: 2 } };
    const stopped = { transactions, cards: emptyReport("cards"), events: 0, complete: false, interrupted: false, durationMs: 6, quarantineSize: 0 };
    expect(summaryOf(3, stopped, NO_COLOURS)).toBe(
      "── cycle 3: 0 events · 0 acknowledged · 0 quarantined · 6 ms · listed when first read: 41 not_synced, 2 outdated · stopped at budget, resumes next cycle",
    );
    const finished = { ...stopped, transactions: { ...transactions, outcome: "complete" as const }, complete: true };
    expect(summaryOf(3, finished, NO_COLOURS)).toBe("── cycle 3: 0 events · 0 acknowledged · 0 quarantined · 6 ms");
    // A status whose count the provider did not give is left out, not shown as 0; one it gave as 0 is shown.
    expect(formatCycleSummary({ cycle: 1, published: {}, acknowledged: 0, quarantined: 0, durationMs: 5, partial: true, backlog: { not_synced: undefined, outdated: 0 } })).toBe(
      "── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 5 ms · listed when first read: 0 outdated · stopped at budget, resumes next cycle",
    );
  });

  it("says when a cycle stopped because the event sink took none of its events for now", () => {
    const transactions = { ...emptyReport("transactions"), outcome: "publisher_unavailable" as const };
    const result = { transactions, cards: emptyReport("cards"), events: 0, complete: false, interrupted: false, durationMs: 7, quarantineSize: 0 };
    expect(summaryOf(2, result, NO_COLOURS)).toBe(
      "── cycle 2: 0 events · 0 acknowledged · 0 quarantined · 7 ms · stopped: the event sink takes no events for now, resumes next cycle",
    );
  });
});

describe("mergeCounts", () => {
  it("adds counts of the same type", () => {
    expect(mergeCounts({ a: 1 }, { a: 2, b: 1 })).toEqual({ a: 3, b: 1 });
  });
});

describe("shouldColour", () => {
  const tty = { write: () => true, isTTY: true };
  const pipe = { write: () => true, isTTY: false };

  it("colours a TTY", () => {
    expect(shouldColour(tty, {})).toBe(true);
  });

  it("does not colour a pipe", () => {
    expect(shouldColour(pipe, {})).toBe(false);
  });

  it("respects NO_COLOR on a TTY", () => {
    expect(shouldColour(tty, { NO_COLOR: "1" })).toBe(false);
  });

  it("ignores an empty NO_COLOR on a TTY (https://no-color.org)", () => {
    expect(shouldColour(tty, { NO_COLOR: "" })).toBe(true);
  });

  it("does not colour a dumb terminal", () => {
    expect(shouldColour(tty, { TERM: "dumb" })).toBe(false);
  });

  it("does not colour a stream that does not say it is a TTY", () => {
    expect(shouldColour({ write: () => true }, {})).toBe(false);
  });

  it("lets FORCE_COLOR colour a pipe", () => {
    expect(shouldColour(pipe, { FORCE_COLOR: "1" })).toBe(true);
  });

  it("lets FORCE_COLOR colour over NO_COLOR and TERM=dumb (it forces, as Node reads it)", () => {
    expect(shouldColour(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(true);
    expect(shouldColour(pipe, { FORCE_COLOR: "1", TERM: "dumb" })).toBe(true);
  });

  it("ignores FORCE_COLOR=0 on a pipe", () => {
    expect(shouldColour(pipe, { FORCE_COLOR: "0" })).toBe(false);
  });

  it("takes FORCE_COLOR=0 or false as no colour on a terminal too", () => {
    for (const value of ["0", "false"]) expect(shouldColour(tty, { FORCE_COLOR: value })).toBe(false);
  });

  it("ignores an empty or false FORCE_COLOR on a pipe", () => {
    expect(shouldColour(pipe, { FORCE_COLOR: "" })).toBe(false);
    expect(shouldColour(pipe, { FORCE_COLOR: "false" })).toBe(false);
  });
});
