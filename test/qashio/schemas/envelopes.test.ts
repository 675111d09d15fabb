import { describe, expect, it } from "vitest";
import * as z from "zod";
import {
  ChangeStatusDataSchema,
  CompanySummarySchema,
  CoreCardListEnvelopeSchema,
  CoreCardWriteDataSchema,
  ErrorEnvelopeSchema,
  InvitationResultSchema,
  PageInfoSchema,
  PaginationSchema,
  TokenSetSchema,
  TransactionSchema,
  ValidateResponseSchema,
  listEnvelope,
  parseEach,
  successEnvelope,
} from "../../../shared/qashio/schemas/index.js";
import {
  REQUEST_ID,
  coreCardFixture,
  coreCardWriteFixture,
  errorEnvelopeFixture,
  invitationResultFixture,
  listEnvelopeFixture,
  pageInfoFixture,
  paginationFixture,
  successEnvelopeFixture,
  tokenSetFixture,
  transactionDetailFixture,
  transactionFixture,
} from "./fixtures.js";

describe("successEnvelope", () => {
  it("reads data and meta", () => {
    const envelope = successEnvelope(TransactionSchema).parse(successEnvelopeFixture(transactionDetailFixture()));
    expect(envelope.meta?.request_id).toBe(REQUEST_ID);
    expect(envelope.data.qashio_id).toBe("CT10023456");
  });

  it("reads a write envelope with a message", () => {
    const envelope = successEnvelope(ChangeStatusDataSchema).parse(
      successEnvelopeFixture({ message: "Status change is being processed" }, { message: "Resource updated" }),
    );
    expect(envelope).toMatchObject({ message: "Resource updated", data: { message: "Status change is being processed" } });
  });

  it("rejects an error envelope", () => {
    expect(successEnvelope(z.unknown()).safeParse(errorEnvelopeFixture()).success).toBe(false);
  });

  it("tolerates a missing meta block", () => {
    expect(successEnvelope(z.unknown()).safeParse({ status_code: 200, success: true, data: {} }).success).toBe(true);
  });

  it("reads a meta block whose request_id or timestamp is absent or null", () => {
    for (const meta of [{}, { request_id: null, timestamp: null }]) {
      expect(successEnvelope(z.unknown()).parse(successEnvelopeFixture({}, { meta })).meta).toEqual(meta);
    }
  });

  it("refuses a meta that is no object (§4.1: `{ request_id, timestamp }`)", () => {
    expect(successEnvelope(z.unknown()).safeParse(successEnvelopeFixture({}, { meta: null })).success).toBe(false);
  });

  it("refuses a status_code that is no integer (§4.1), though it may be absent", () => {
    for (const status_code of [null, 200.5, "200"]) {
      expect(successEnvelope(z.unknown()).safeParse(successEnvelopeFixture({}, { status_code })).success).toBe(false);
    }
  });

  it("reads a null message (§4.1: present on writes only)", () => {
    expect(successEnvelope(z.unknown()).parse(successEnvelopeFixture({}, { message: null })).message).toBeNull();
  });

  it("keeps top-level members the spec does not list", () => {
    expect(successEnvelope(z.unknown()).parse(successEnvelopeFixture({}, { trace_id: "t-1" }))).toMatchObject({ trace_id: "t-1" });
  });
});

describe("listEnvelope", () => {
  it("reads items and the pagination block", () => {
    const page = listEnvelope(TransactionSchema).parse(listEnvelopeFixture([transactionFixture()]));
    expect(page.data).toHaveLength(1);
    expect(page.pagination).toMatchObject({ page: 1, has_next: true, has_previous: false });
  });

  it("rejects a list without pagination", () => {
    expect(listEnvelope(z.unknown()).safeParse(successEnvelopeFixture([])).success).toBe(false);
  });

  it("with unknown items lets a bad record be set aside while the page is read", () => {
    const page = listEnvelope(z.unknown()).parse(listEnvelopeFixture([transactionFixture(), transactionFixture({ id: "bad" })]));
    const { valid, invalid } = parseEach(TransactionSchema, page.data);
    expect([valid.length, invalid.length]).toEqual([1, 1]);
  });
});

describe("CoreCardListEnvelopeSchema", () => {
  it("reads cards and page_info inside data", () => {
    const envelope = CoreCardListEnvelopeSchema.parse(
      successEnvelopeFixture({ cards: [coreCardFixture()], page_info: pageInfoFixture() }),
    );
    expect(envelope.data.page_info).toMatchObject({ next_page: 2, previous_page: null });
    expect(envelope.data.cards[0]?.allow_atm).toBe(false);
  });

  it("refuses data without cards rather than reading an empty card list", () => {
    expect(CoreCardListEnvelopeSchema.safeParse(successEnvelopeFixture({ page_info: pageInfoFixture() })).success).toBe(false);
  });
});

describe("CoreCardWriteDataSchema", () => {
  it("reads data.card of a write", () => {
    expect(CoreCardWriteDataSchema.parse({ card: coreCardWriteFixture() }).card.spend_limit).toMatchObject({ max_amount: 5000 });
  });

  it("refuses a write's data without the card", () => {
    expect(CoreCardWriteDataSchema.safeParse({}).success).toBe(false);
  });
});

describe("ChangeStatusDataSchema", () => {
  it("reads data without a message (the caller falls back to the envelope's)", () => {
    expect(ChangeStatusDataSchema.parse({})).toEqual({});
  });
});

describe("PaginationSchema and PageInfoSchema", () => {
  it("read the spec shapes", () => {
    expect(PaginationSchema.parse(paginationFixture())).toEqual(paginationFixture());
    expect(PageInfoSchema.parse(pageInfoFixture())).toEqual(pageInfoFixture());
  });

  it.each(["page", "page_size", "total_records", "total_pages", "has_next", "has_previous"])("reject a pagination without %s", (member) => {
    expect(PaginationSchema.safeParse(paginationFixture({ [member]: undefined })).success).toBe(false);
  });

  it("accept a page_info without offset, next_page or previous_page", () => {
    expect(PageInfoSchema.safeParse(pageInfoFixture({ offset: undefined, next_page: undefined, previous_page: undefined })).success).toBe(true);
  });

  it("accept the last page_info page with next_page null", () => {
    expect(PageInfoSchema.parse(pageInfoFixture({ current_page: 2, next_page: null, previous_page: 1 })).next_page).toBeNull();
  });
});

describe("ErrorEnvelopeSchema", () => {
  it("reads status, errors with nullable field, and meta", () => {
    const envelope = ErrorEnvelopeSchema.parse(errorEnvelopeFixture());
    expect(envelope.errors.map((e) => e.field)).toEqual(["card_last_four", null]);
    expect(envelope.meta?.request_id).toBe(REQUEST_ID);
  });

  it("has no success field and defaults errors to an empty list", () => {
    const envelope = ErrorEnvelopeSchema.parse({ status_code: 404, message: "Not found" });
    expect(envelope.errors).toEqual([]);
    expect("success" in envelope).toBe(false);
  });
});

describe("TokenSetSchema", () => {
  it("reads a token set", () => {
    expect(TokenSetSchema.parse(tokenSetFixture())).toEqual(tokenSetFixture());
  });

  it("accepts bearer in any case", () => {
    expect(TokenSetSchema.safeParse(tokenSetFixture({ token_type: "bearer" })).success).toBe(true);
  });

  it("reads a null scope, and expires_in sent as text, null or empty text", () => {
    expect(TokenSetSchema.parse(tokenSetFixture({ scope: null })).scope).toBeNull();
    expect(TokenSetSchema.parse(tokenSetFixture({ expires_in: "3600" })).expires_in).toBe(3600);
    for (const expires_in of [null, ""]) expect(TokenSetSchema.parse(tokenSetFixture({ expires_in })).expires_in).toBeNull();
  });

  it.each([
    ["a missing refresh token", { refresh_token: undefined }],
    ["an empty access token", { access_token: "" }],
    ["a non-Bearer type", { token_type: "MAC" }],
    ["a type that only contains Bearer", { token_type: "DPoP-Bearer" }],
    ["an expires_in that is no number", { expires_in: "soon" }],
  ])("rejects %s", (_name, overrides) => {
    expect(TokenSetSchema.safeParse(tokenSetFixture(overrides)).success).toBe(false);
  });

  it("reads the validate response", () => {
    expect(ValidateResponseSchema.parse({ active: true })).toEqual({ active: true });
    expect(ValidateResponseSchema.parse({ active: false })).toEqual({ active: false });
  });

  it("rejects a validate response without a boolean active", () => {
    for (const body of [{}, { active: "true" }]) expect(ValidateResponseSchema.safeParse(body).success).toBe(false);
  });
});

describe("InvitationResultSchema", () => {
  it("reads the summary of invitations processed immediately", () => {
    const result = InvitationResultSchema.parse(invitationResultFixture());
    expect(result.summary?.failed_emails?.end_user).toEqual(["already.invited@example.com"]);
    expect(result.summary?.total_processed).toEqual({ success: 1, failed: 1, total: 2 });
  });

  it("reads a queued invitation without summary", () => {
    expect(InvitationResultSchema.parse({ message: "Invitations queued" }).summary).toBeUndefined();
  });

  it("reads null members, and an email list without end_user as empty", () => {
    expect(InvitationResultSchema.parse({ message: null, summary: null })).toEqual({ message: null, summary: null });
    const summary = { success_emails: {}, failed_emails: null, total_processed: null };
    expect(InvitationResultSchema.parse({ summary }).summary).toEqual({ ...summary, success_emails: { end_user: [] } });
    const swapped = { success_emails: null, failed_emails: {} };
    expect(InvitationResultSchema.parse({ summary: swapped }).summary).toEqual({ ...swapped, failed_emails: { end_user: [] } });
  });

  it.each([
    ["an email that is no string", { success_emails: { end_user: [7] } }],
    ["a total_processed without its total", { total_processed: { success: 1, failed: 0 } }],
  ])("rejects a summary with %s", (_name, summary) => {
    expect(InvitationResultSchema.safeParse(invitationResultFixture({ summary })).success).toBe(false);
  });
});

describe("CompanySummarySchema", () => {
  it("keeps any object whole", () => {
    const summary = { total_balance: 1, currency: "AED", nested: { a: 1 } };
    expect(CompanySummarySchema.parse(summary)).toEqual(summary);
  });

  it("rejects a non-object", () => {
    expect(CompanySummarySchema.safeParse([1]).success).toBe(false);
  });
});
