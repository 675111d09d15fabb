/**
 * Provider records of shapes no schema expects: nested far too deep for recursive hashing, or not a record at all
 * under a PII mode. Each is quarantined (with nothing personal in it) and the rest of the page goes on.
 */
import { describe, expect, it } from "vitest";
import { pollCards, pollTransactions } from "../../shared/bridge/index.js";
import { quarantineId } from "../../shared/bridge/quarantine-id.js";
import { applyPii, applyPiiToBody, type PiiPolicy } from "../../shared/bridge/pii.js";
import { CUT_DEPTH_MARKER, cutToDepth, MAX_RECORD_DEPTH, nestedDeeperThan, requireObjectWithId } from "../../shared/bridge/validate.js";
import { CycleAbortedError, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { BadRequestError, ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import { pageEntries } from "../../shared/bridge/provider.js";
import { makeRig, refusal as ackRefusal, type TestRig } from "./fakes.js";
import { CrashPoint, crashingPorts } from "./faults.js";
import { clientOverFake, RawJsonText } from "./provider-client.js";

/** JSON.parse takes it; JSON.stringify and any recursive walk overflow the stack from a few thousand levels. */
const DEEP = 20_000;
const deepArrayText = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

/** A new transaction as JSON text, as the provider would list it, with a member nested {@link DEEP} levels. */
function withDeepMember(rig: TestRig, fields: Record<string, unknown> = {}): { id: string; text: string } {
  const t = rig.provider.addTransaction(fields);
  const { client_sync_status: _status, ...body } = t;
  const json = JSON.stringify(body);
  return { id: t.id, text: `${json.slice(0, -1)},"custom_fields":${deepArrayText(DEEP)}}` };
}

describe("a record nested deeper than MAX_RECORD_DEPTH", () => {
  it("is quarantined with its body cut at that depth and acknowledged; the rest of the page is published", async () => {
    const rig = makeRig();
    const good = rig.provider.addTransaction();
    const bad = withDeepMember(rig);
    rig.provider.rawOverrides.set(bad.id, new RawJsonText(bad.text));
    const report = await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    const [record, ...more] = [...rig.quarantine.records.values()];
    expect(more).toEqual([]);
    expect(record).toMatchObject({ entityId: bad.id, reason: `validation: (root): nested deeper than ${MAX_RECORD_DEPTH} levels` });
    expect(JSON.stringify(record!.raw)).toContain(CUT_DEPTH_MARKER);
    expect(nestedDeeperThan(record!.raw)).toBe(false);
    // Acknowledged after its record: nothing is left listed, and the next cycle finds nothing.
    expect(rig.provider.pending()).toEqual([]);
    expect((await pollTransactions(rig.deps)).pulled).toBe(0);
  });

  it("is quarantined also when the client's schema had to normalise it (a numeric string), which reorders its members", async () => {
    const rig = makeRig();
    const good = rig.provider.addTransaction();
    const bad = withDeepMember(rig, { vat_amount: "5" });
    rig.provider.rawOverrides.set(bad.id, new RawJsonText(bad.text));
    const report = await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([bad.id]);
  });

  it("is quarantined also without a usable id, where the walk keys items by content hash", async () => {
    const rig = makeRig();
    const good = rig.provider.addTransaction();
    const bad = rig.provider.addTransaction();
    const { id: _id, client_sync_status: _status, ...body } = bad;
    rig.provider.rawOverrides.set(bad.id, { ...body, custom_fields: JSON.parse(deepArrayText(DEEP)) as unknown });
    const report = await pollTransactions(rig.deps);
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    expect([...rig.quarantine.records.values()].map((r) => r.reason)).toEqual([`validation: (root): nested deeper than ${MAX_RECORD_DEPTH} levels`]);
  });

  it("is quarantined when the client also rejected it (a bad qashio_id), its record id computed from the cut body", async () => {
    const rig = makeRig();
    const good = rig.provider.addTransaction();
    const bad = withDeepMember(rig, { qashio_id: "XX-not-CT" });
    rig.provider.rawOverrides.set(bad.id, new RawJsonText(bad.text));
    await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    const [record] = [...rig.quarantine.records.values()];
    expect(record!.id).toBe(quarantineId("acme", "transaction", "validation", cutToDepth(JSON.parse(bad.text))));
    expect(rig.provider.pending()).toEqual([]);
  });

  it("leaves the card walk going: the deep card is quarantined, the others recorded", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const good = rig.provider.addCard();
    const bad = rig.provider.addCard();
    // Served as they are: the fake clones cards, which a structure this deep would not survive.
    const deep = { ...bad, limits: JSON.parse(deepArrayText(DEEP)) as unknown };
    const provider = Object.assign(Object.create(rig.provider) as typeof rig.provider, {
      listErpCards: () => Promise.resolve({ data: [good, deep], pagination: { has_next: false } }),
    });
    const report = await pollCards({ ...rig.deps, provider });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detail.type, e.detail.subject.id])).toEqual([["card.created", good["id"]]]);
    expect([...rig.quarantine.records.values()].map((r) => [r.entityId, r.reason])).toEqual([
      [bad["id"], `validation: (root): nested deeper than ${MAX_RECORD_DEPTH} levels`],
    ]);
  });

  it("counts own members only, whatever is enumerable on Object.prototype", () => {
    const polluted = Object.prototype as Record<string, unknown>;
    polluted["qbPolluted"] = JSON.parse(deepArrayText(40)) as unknown;
    try {
      expect(nestedDeeperThan({ id: "t1", line_items: [{ id: "li-1" }] })).toBe(false);
    } finally {
      delete polluted["qbPolluted"];
    }
  });

  it("marks the cut in words naming the limit: part of the stored body, and so of its record's quarantine id", () => {
    expect(JSON.stringify(cutToDepth({ id: "t1", custom_fields: [[1]] }, 2))).toBe(`{"id":"t1","custom_fields":["[nested deeper than ${MAX_RECORD_DEPTH} levels]"]}`);
  });

  it("cutToDepth keeps what lies above the limit and own __proto__ members as members", () => {
    const value = JSON.parse(`{"__proto__":{"a":1},"b":${deepArrayText(40)}}`) as unknown;
    const cut = cutToDepth(value, 3) as Record<string, unknown>;
    expect(Object.getPrototypeOf(cut)).toBe(Object.prototype);
    expect(Object.keys(cut)).toEqual(["__proto__", "b"]);
    expect(JSON.stringify(cut)).toBe(`{"__proto__":{"a":1},"b":[["${CUT_DEPTH_MARKER}"]]}`);
    expect(nestedDeeperThan(value, 3)).toBe(true);
    expect(nestedDeeperThan(cut, 3)).toBe(false);
    expect(nestedDeeperThan({ a: [[1]] }, 3)).toBe(false);
  });

  it(`takes a record ${MAX_RECORD_DEPTH} levels deep and finds one a level deeper too deep`, () => {
    // The record is the first level: its member of n nested arrays reaches n levels below it.
    const record = (levelsBelow: number) => ({ id: "t1", custom_fields: JSON.parse(deepArrayText(levelsBelow)) as unknown });
    expect(nestedDeeperThan(record(MAX_RECORD_DEPTH - 1))).toBe(false);
    expect(nestedDeeperThan(record(MAX_RECORD_DEPTH))).toBe(true);
  });
});

describe("a listed item that is no record at all", () => {
  it.each([null, 7, "text"])("is quarantined, keyed by content hash, and the rest of the page is published (%j)", async (listed) => {
    const rig = makeRig();
    const good = rig.provider.addTransaction();
    const bad = rig.provider.addTransaction();
    rig.provider.rawOverrides.set(bad.id, listed);
    const report = await pollTransactions(rig.deps);
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    expect([...rig.quarantine.records.values()].map((r) => r.raw)).toEqual([listed]);
  });
});

describe("a quarantined body of an unexpected shape, under redact and hash", () => {
  const NAME = "Ann Holder";
  const EMAIL = "ann@example.com";
  const EMPLOYEE = "E-77";
  const personal = { card_holder_name: NAME, card_holder_email: EMAIL, employee_id: EMPLOYEE };
  const policies: PiiPolicy[] = [{ mode: "redact" }, { mode: "hash", salt: "salt-1" }];

  it.each(policies)("keeps no personal value of an array around a record, a record as JSON text or a wrapped record (%j)", async (pii) => {
    const rig = makeRig({ pii });
    const good = rig.provider.addTransaction(personal);
    const shapes = [
      (body: object) => [body],
      (body: object) => JSON.stringify(body),
      (body: object) => ({ transaction: body }),
      (body: object) => ({ transaction: JSON.stringify(body) }),
    ];
    for (const shape of shapes) {
      const t = rig.provider.addTransaction(personal);
      const { client_sync_status: _status, ...body } = t;
      rig.provider.rawOverrides.set(t.id, shape(body));
    }
    await pollTransactions(rig.deps);
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    const records = [...rig.quarantine.records.values()];
    expect(records).toHaveLength(4);
    expect(JSON.stringify(records)).not.toMatch(/Ann Holder|ann@example\.com|E-77/);
  });

  it.each(policies)("quarantines a transaction the client's schema rejects with a reason naming each field and what it takes, nothing personal in the record (%j)", async (pii) => {
    const rig = makeRig({ pii });
    const good = rig.provider.addTransaction(personal);
    const bad = rig.provider.addTransaction(personal);
    const { client_sync_status: _status, ...body } = bad;
    // A personal field of the wrong type holding the address, and an amount in a form no schema reads.
    rig.provider.rawOverrides.set(bad.id, { ...body, card_holder_email: { value: EMAIL }, transaction_amount: "1,234.50" });
    const report = await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    const records = [...rig.quarantine.records.values()];
    expect(records.map((r) => [r.entityId, r.reason])).toEqual([
      [
        bad.id,
        'validation: transaction_amount: expected a number, or a decimal number as text ("12.50", "-3"), "" or null; ' +
          "card_holder_email: Invalid input: expected string, received object",
      ],
    ]);
    expect(JSON.stringify(records)).not.toMatch(/Ann Holder|ann@example\.com|E-77/);
    // Nothing lost: acknowledged, so no cycle lists it again, and kept whole but for its personal fields.
    expect(rig.provider.transactions.find((t) => t.id === bad.id)?.client_sync_status).toBe("synced");
    expect(records[0]?.raw).toMatchObject({ id: bad.id, transaction_amount: "1,234.50" });
  });

  it("gives a record id that no personal value moves, and one of its own to each record whatever its shape", () => {
    const shapes = (fields: object) => [[fields], JSON.stringify(fields), { transaction: fields }, { transaction: JSON.stringify(fields) }];
    const ids = (fields: object) => shapes(fields).map((body) => quarantineId("acme", "transaction", "validation", body));
    expect(ids({ id: "t1", ...personal })).toEqual(ids({ id: "t1", ...personal, card_holder_name: "Bob Other" }));
    const all = [...ids({ id: "t1", ...personal }), ...ids({ id: "t2", ...personal })];
    expect(new Set(all).size).toBe(all.length);
  });

  it("masks what is nested in a member the record's paths masked, and JSON text nested deeper than the depth limit", () => {
    const redact = { mode: "redact" } as const;
    const body = {
      cardholder: { name: NAME, extra: { card_holder_email: EMAIL }, note: JSON.stringify({ employee_id: EMPLOYEE }) },
      approved_by: { name: NAME, employee_id: EMPLOYEE, delegate: { card_holder_name: NAME } },
      deep: `${"[".repeat(40)}${JSON.stringify(personal)}${"]".repeat(40)}`,
    };
    const masked = applyPiiToBody(body, redact) as typeof body;
    expect(JSON.stringify(masked)).not.toMatch(/Ann Holder|ann@example\.com|E-77/);
    expect(masked.cardholder.name).toBe("[redacted]");
    // Written back cut, the marker masked whole like any string outside an object.
    expect(masked.deep).toBe(`${"[".repeat(32)}"[redacted]"${"]".repeat(32)}`);
  });

  it("masks a record held as JSON text anywhere in the body, keeping text with nothing personal as sent", () => {
    const redact = { mode: "redact" } as const;
    const body = {
      transaction: JSON.stringify({ id: "t1", ...personal }),
      twice: JSON.stringify(JSON.stringify({ id: "t2", ...personal })),
      thrice: JSON.stringify(JSON.stringify(JSON.stringify({ id: "t3", ...personal }))),
      // A key given twice: JSON.parse keeps the last value, the text the first; nested, or spelled with an escape too.
      repeated: `{"card_holder_name":"${NAME}","card_holder_name":null}`,
      repeatedNested: `{"id":"x","approved_by":{"name":"${NAME}","name":""}}`,
      repeatedParent: `{"id":"x","approved_by":{"name":"${NAME}"},"approved_by":null}`,
      // A parent given whole (a string) and then again: no personal member's name in the text, only the parent's.
      repeatedParentWhole: `{"id":"x","approved_by":"${NAME}","approved_by":null}`,
      repeatedEscaped: `{"id":"x","card\\u005fholder_email":"${EMAIL}","card\\u005fholder_email":""}`,
      note: '{"kept":"as sent"}',
      spaced: '{ "kept":  "as sent", "amount": 1.50, "big": 12345678901234567890 }',
      list: [JSON.stringify(personal)],
    };
    const masked = applyPiiToBody(body, redact) as typeof body;
    expect(JSON.stringify(masked)).not.toMatch(/Ann Holder|ann@example\.com|E-77/);
    expect(JSON.parse(masked.transaction)).toEqual({ id: "t1", card_holder_name: "[redacted]", card_holder_email: "[redacted]", employee_id: "[redacted]" });
    expect(JSON.parse(masked.twice)).toMatchObject({ id: "t2", card_holder_name: "[redacted]" });
    expect(JSON.parse(masked.thrice)).toMatchObject({ id: "t3", card_holder_name: "[redacted]" });
    // Nothing personal in them: kept byte for byte, numbers, spaces and all (so their record ids stay as they were).
    expect(masked.note).toBe(body.note);
    expect(masked.spaced).toBe(body.spaced);
    expect(applyPiiToBody("Ann Holder", redact)).toBe("[redacted]");
  });

  it("applyPiiToBody masks a record's fields as applyPii does, once (no hash of a hash), wrapped or not, and leaves full mode alone", () => {
    const hash = { mode: "hash", salt: "salt-1" } as const;
    const record = { cardholder: { name: NAME, employee_id: EMPLOYEE } };
    const once = applyPiiToBody(record, hash);
    expect(once).toEqual(applyPii(record, hash));
    expect(JSON.stringify(once)).not.toMatch(/Ann Holder|E-77/);
    expect((applyPiiToBody({ outer: record }, hash) as { outer: unknown }).outer).toEqual(once);
    // A fresh body's value that looks masked is the provider's, hashed as applyPii hashes it: only stored ones are kept.
    const lookalike = { card_holder_name: `hmac-sha256:${"a".repeat(64)}`, card_holder_email: "[redacted]" };
    expect(applyPiiToBody(lookalike, hash)).toEqual(applyPii(lookalike, hash));
    expect(JSON.stringify(applyPiiToBody(lookalike, hash))).not.toMatch(/a{64}|\[redacted\]/);
    const body = [{ ...personal }];
    expect(applyPiiToBody(body, { mode: "full" })).toBe(body);
    expect(applyPiiToBody({ tags: ["keep"], note: "keep" }, { mode: "redact" })).toEqual({ tags: ["keep"], note: "keep" });
  });
});

/** A provider error answer with this HTTP status. */
const refusal = (status: number) => Object.assign(new Error(`refused ${status}`), { name: "ProviderError", status });

describe("a refund whose parent cannot be had", () => {
  it.each([400, 404, 414])("is published without parent when the provider refuses the parent read with %i, the page going on", async (status) => {
    const rig = makeRig();
    const purchase = rig.provider.addTransaction();
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-odd-reference" });
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id) throw refusal(status);
    };
    const report = await pollTransactions(rig.deps);
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.parent])).toEqual([
      [purchase.id, undefined],
      [refund.id, undefined],
    ]);
    expect(rig.provider.pending()).toEqual([]);
    // Naming the reference and the provider's status: an operator tells an odd reference from an outage by it.
    expect(rig.logger.lines).toContainEqual(
      expect.objectContaining({ level: "warn", message: "provider refused the parent read; published without parent", attributes: { parentQashioId: "CT-odd-reference", status } }),
    );
    // Refused is not found: the provider did not say the parent is missing.
    expect(rig.logger.lines.filter((l) => l.message === "parent transaction not found")).toEqual([]);
    // One read per reference and cycle, as for a parent not found.
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id)).toHaveLength(1);
  });

  it.each([
    ["a revoked token family", new ReauthorizationRequiredError("refresh token rejected", { status: 400, method: "POST", path: "/oauth2/token" }), ReauthorizationNeededError],
    ["refused client credentials", new BadRequestError("client refused", { status: 400, method: "POST", path: "/oauth2/token" }), CycleAbortedError],
  ])("stops before publishing when getting a token for the parent read answers 400 (%s): the refund is not sent without its parent for good", async (_, failure, stopped) => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction();
    parent.client_sync_status = "synced";
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });
    let tokenFails = true;
    rig.provider.beforeCall = (call) => {
      if (tokenFails && call.op === "listTransactions" && call.query.qashio_id) throw failure;
    };
    await expect(pollTransactions(rig.deps)).rejects.toBeInstanceOf(stopped);
    expect(rig.publisher.events).toEqual([]);
    tokenFails = false;
    await pollTransactions(rig.deps);
    expect(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.parent])).toEqual([[refund.id, { id: parent.id, qashio_id: parent.qashio_id }]]);
  });

  it.each([401, 403, 408, 429, 500])("stops the cycle as any failed call does when the parent read fails with %i", async (status) => {
    const rig = makeRig();
    rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-missing" });
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id) throw refusal(status);
    };
    await expect(pollTransactions(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.publisher.events).toEqual([]);
  });

  it("is published without parent when it names itself, also when another refund of the page names it as parent", async () => {
    const rig = makeRig();
    const self = rig.provider.addTransaction({ transaction_category: "refund" });
    self.parent_qashio_id = self.qashio_id;
    const child = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: self.qashio_id });
    await pollTransactions(rig.deps);
    const parents = new Map(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.parent]));
    expect(parents.get(self.id)).toBeUndefined();
    expect(parents.get(child.id)).toEqual({ id: self.id, qashio_id: self.qashio_id });
  });

  it("is published without parent when it names itself, by qashio_id or by id, without a provider read", async () => {
    const rig = makeRig();
    const self = rig.provider.addTransaction({ transaction_category: "refund" });
    self.parent_qashio_id = self.qashio_id;
    const byId = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-elsewhere" });
    byId.parent_id = byId.id;
    await pollTransactions(rig.deps);
    expect(rig.publisher.events.map((e) => e.detail.data.parent)).toEqual([undefined, undefined]);
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id)).toEqual([]);
    // Each warning names the transaction, so an operator can find which one.
    const warned = rig.logger.lines.filter((l) => l.message === "transaction names itself as its parent; published without parent");
    expect(warned.map((l) => l.attributes).sort((a, b) => String(a?.["id"]).localeCompare(String(b?.["id"])))).toEqual([{ id: self.id }, { id: byId.id }]);
  });

  it("is published without parent when it names itself by qashio_id, though its parent_id names another transaction", async () => {
    const rig = makeRig();
    const other = rig.provider.addTransaction();
    const self = rig.provider.addTransaction({ transaction_category: "refund", parent_id: other.id });
    self.parent_qashio_id = self.qashio_id;
    await pollTransactions(rig.deps);
    // Not a parent pairing the other's id with its own qashio_id: the provider contradicts itself.
    expect(rig.publisher.events.find((e) => e.detail.subject.id === self.id)?.detail.data.parent).toBeUndefined();
    expect(rig.logger.lines.filter((l) => l.message === "transaction names itself as its parent; published without parent")).toHaveLength(1);
  });
});

describe("a transaction listed again in another version while the walk goes on", () => {
  /** A provider serving fixed pages (acknowledged ids drop out), as a read-ahead across a change would see them. */
  function pagedProvider(pages: Record<number, Record<string, unknown>[]>) {
    const acked: string[] = [];
    return {
      acked,
      listTransactions: (q: { client_sync_status?: string; page: number }) => {
        const listed = q.client_sync_status === "not_synced" ? (pages[q.page] ?? []).filter((t) => !acked.includes(t["id"] as string)) : [];
        return Promise.resolve({ data: structuredClone(listed), pagination: { has_next: q.client_sync_status === "not_synced" && q.page < 2 } });
      },
      acknowledgeTransactions: (ids: string[]) => Promise.resolve(void acked.push(...ids)),
    };
  }

  // A page that also lists another id twice records the copies' versions beside the batch's: x's must stay recorded.
  it.each([
    ["listed once each", 1],
    ["the first page listing another id twice", 2],
  ])("publishes the second version as a change instead of dropping it as a duplicate (%s)", async (_case, copiesOfA) => {
    const rig = makeRig();
    const [a, x, b] = [rig.provider.addTransaction(), rig.provider.addTransaction({ memo: "v1" }), rig.provider.addTransaction()];
    const v2 = { ...x, memo: "v2", transaction_amount: 999 };
    const provider = pagedProvider({ 1: [...Array<typeof a>(copiesOfA).fill(a), x], 2: [v2, b] });
    const report = await pollTransactions({ ...rig.deps, provider }, { pageSize: copiesOfA + 1 });
    expect(report.outcome).toBe("complete");
    const ofX = rig.publisher.events.filter((e) => e.detail.subject.id === x.id);
    expect(ofX.map((e) => [e.detail.type, e.detail.data.object["memo"]])).toEqual([
      ["transaction.created", "v1"],
      ["transaction.changed", "v2"],
    ]);
    expect(ofX[1]!.detail.data.changes).toContainEqual({ path: "/memo", before: "v1", after: "v2" });
  });

  it("keeps the first of two copies the provider lists side by side, and takes no copy again on re-reads or later cycles", async () => {
    const rig = makeRig();
    const x = rig.provider.addTransaction({ memo: "copy A" });
    const y = rig.provider.addTransaction();
    const copyB = { ...x, memo: "copy B" };
    // Quarantined and never acknowledged (no id): the page stays listed and is read again.
    const { id: _id, ...idless } = rig.provider.addTransaction();
    const acked: string[] = [];
    const provider = {
      // x stays listed, acknowledged or not (a provider that keeps listing it).
      listTransactions: (q: { client_sync_status?: string; page: number }) =>
        Promise.resolve({
          data: q.client_sync_status === "not_synced" && q.page === 1 ? structuredClone([x, copyB, y, idless].filter((t) => t.id !== y.id || !acked.includes(y.id))) : [],
          pagination: { has_next: false },
        }),
      acknowledgeTransactions: (ids: string[]) => Promise.resolve(void acked.push(...ids)),
    };
    for (let cycle = 0; cycle < 3; cycle += 1) {
      expect((await pollTransactions({ ...rig.deps, provider }, { pageSize: 100, maxPages: 40 })).outcome).toBe("complete");
    }
    // As within one page (docs/spec-gaps.md, "An id listed twice on one page"): the first copy, once.
    const ofX = rig.publisher.events.filter((e) => e.detail.subject.id === x.id).map((e) => [e.detail.type, e.detail.data.object["memo"]]);
    expect(ofX).toEqual([["transaction.created", "copy A"]]);
  });

  it("takes no copy again once a page lists two new copies of an id it handled earlier in the pass, however often re-read", async () => {
    const rig = makeRig();
    const x = rig.provider.addTransaction({ memo: "v0" });
    const [copyA, copyB] = [{ ...x, memo: "copy A" }, { ...x, memo: "copy B" }];
    const { id: _id, ...idless } = rig.provider.addTransaction();
    let reads = 0;
    const provider = {
      // The first read shows x as handled first; every later one two other copies side by side (x stays listed).
      listTransactions: (q: { client_sync_status?: string; page: number }) => {
        if (q.client_sync_status !== "not_synced" || q.page !== 1) return Promise.resolve({ data: [], pagination: { has_next: false } });
        reads += 1;
        return Promise.resolve({ data: structuredClone(reads === 1 ? [x, idless] : [copyA, copyB, idless]), pagination: { has_next: false } });
      },
      acknowledgeTransactions: () => Promise.resolve(undefined),
    };
    const report = await pollTransactions({ ...rig.deps, provider }, { pageSize: 100, maxPages: 40 });
    expect(report.outcome).toBe("complete");
    expect(reads).toBe(3);
    const ofX = rig.publisher.events.filter((e) => e.detail.subject.id === x.id).map((e) => [e.detail.type, e.detail.data.object["memo"]]);
    // The change to the copies is published once, from the first copy, as within one page.
    expect(ofX).toEqual([
      ["transaction.created", "v0"],
      ["transaction.changed", "copy A"],
    ]);
  });

  it("publishes a valid copy met after an invalid copy of the same id was quarantined and acknowledged", async () => {
    const rig = makeRig();
    const [a, x, b] = [rig.provider.addTransaction(), rig.provider.addTransaction({ memo: "valid" }), rig.provider.addTransaction()];
    const invalid = { ...x, qashio_id: "not-CT" };
    const acked: string[] = [];
    const keep = (t: Record<string, unknown>) => !acked.includes(t["id"] as string);
    const provider = {
      listTransactions: (q: { client_sync_status?: string; page: number }) => {
        if (q.client_sync_status !== "not_synced") return Promise.resolve({ data: [], pagination: { has_next: false } });
        if (q.page === 1) {
          const rejected = keep(invalid) ? [{ index: 1, raw: structuredClone(invalid), issues: [{ path: "qashio_id", message: "must start with CT" }] }] : [];
          return Promise.resolve({ data: [a].filter(keep), invalid: rejected, pagination: { has_next: true } });
        }
        return Promise.resolve({ data: structuredClone([x, b].filter(keep)), pagination: { has_next: false } });
      },
      acknowledgeTransactions: (ids: string[]) => Promise.resolve(void acked.push(...ids)),
    };
    await pollTransactions({ ...rig.deps, provider }, { pageSize: 2 });
    expect(rig.publisher.events.map((e) => e.detail.subject.id).sort()).toEqual([a.id, x.id, b.id].sort());
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([x.id]);
  });

  it("skips an invalid copy met after a valid one was handled in the pass (the valid state went out): no quarantine, no second acknowledge; the next cycle quarantines it", async () => {
    const rejectBad = (raw: unknown) =>
      (raw as { memo?: string }).memo === "bad" ? { success: false as const, reason: "memo: rejected" } : requireObjectWithId(raw);
    const rig = makeRig({}, { validators: { transaction: rejectBad } });
    for (let i = 0; i < 3; i += 1) rig.provider.addTransaction();
    // On top, so the page re-read after the read-ahead chain still lists it.
    const x = rig.provider.addTransaction();
    const acks: string[][] = [];
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      acks.push([...call.ids]);
      if (!call.ids.includes(x.id)) return;
      // The provider refuses x by name, so it stays listed; meanwhile it turns invalid.
      rig.provider.rawOverrides.set(x.id, { ...structuredClone(x), memo: "bad" });
      throw ackRefusal(call.ids, [x.id]);
    };
    const report = await pollTransactions(rig.deps, { pageSize: 2 });
    expect(report).toMatchObject({ outcome: "complete", quarantined: 0, acknowledgeRefused: 1 });
    expect(await rig.quarantine.list()).toEqual([]);
    expect(rig.metrics.sum("Quarantined")).toBe(0);
    expect(acks.filter((ids) => ids.includes(x.id))).toHaveLength(1);
    expect(rig.publisher.ids).toHaveLength(4);
    // Still listed after the pass: not dropped, the next cycle's pass quarantines its invalid state.
    expect(rig.provider.pending().map((t) => t.id)).toEqual([x.id]);
    const next = await pollTransactions(rig.deps, { pageSize: 2 });
    expect(next).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect((await rig.quarantine.list()).map((r) => [r.entityId, r.reason])).toEqual([[x.id, "validation: memo: rejected"]]);
  });

  it("skips a copy the client rejected when met again in the pass, also when the engine's own validator would take it: no second quarantine or acknowledge", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3; i += 1) rig.provider.addTransaction();
    // On top, so the page re-read after the read-ahead chain still lists it.
    const x = rig.provider.addTransaction();
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list(query);
      // The client's schema rejects x (a field the engine's validator does not check): handed over as invalid.
      const data: unknown[] = [];
      const invalid: { index: number; raw: unknown; issues: { path: string; message: string }[] }[] = [];
      page.data.forEach((raw, index) => {
        if ((raw as { id?: string }).id === x.id) invalid.push({ index, raw, issues: [{ path: "memo", message: "rejected by the client" }] });
        else data.push(raw);
      });
      return { ...page, data, invalid };
    };
    const acks: string[][] = [];
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      acks.push([...call.ids]);
      // The provider refuses x by name, so it stays listed and the walk meets it again.
      if (call.ids.includes(x.id)) throw ackRefusal(call.ids, [x.id]);
    };
    const report = await pollTransactions(rig.deps, { pageSize: 2 });
    expect(report).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect(rig.metrics.sum("Quarantined")).toBe(1);
    expect(acks.filter((ids) => ids.includes(x.id))).toHaveLength(1);
  });

  it("still skips a copy listed again in the version already handled", async () => {
    const rig = makeRig();
    const [a, x, b] = [rig.provider.addTransaction(), rig.provider.addTransaction(), rig.provider.addTransaction()];
    const provider = pagedProvider({ 1: [a, x], 2: [x, b] });
    await pollTransactions({ ...rig.deps, provider }, { pageSize: 2 });
    expect(rig.publisher.events.map((e) => e.detail.subject.id).sort()).toEqual([a.id, x.id, b.id].sort());
    expect(provider.acked.filter((id) => id === x.id)).toHaveLength(1);
  });
});

describe("items the client's schema rejected", () => {
  it("are put back at their place in the page as the provider listed it, whatever order the client hands them over in", () => {
    const entries = pageEntries({
      data: ["a", "c", "e"],
      invalid: [
        { index: 3, raw: "d", issues: [{ path: "id", message: "invalid UUID" }] },
        { index: 1, raw: "b" },
      ],
    });
    expect(entries).toEqual([
      { raw: "a" },
      { raw: "b", rejected: "rejected by the client schema" },
      { raw: "c" },
      { raw: "d", rejected: "id: invalid UUID" },
      { raw: "e" },
    ]);
  });
});

describe("a provider answering with more items than asked", () => {
  it("gets its acknowledges in calls of at most the page size asked, so its own acknowledge limit is never passed", async () => {
    const rig = makeRig();
    for (let i = 0; i < 250; i += 1) rig.provider.addTransaction();
    const calls: number[] = [];
    const provider = Object.assign(Object.create(rig.provider) as typeof rig.provider, {
      // Ignores page_size: the whole list in one page.
      listTransactions: (q: Parameters<typeof rig.provider.listTransactions>[0]) => rig.provider.listTransactions({ ...q, page_size: 1_000 }),
      acknowledgeTransactions: (ids: string[]) => {
        calls.push(ids.length);
        if (ids.length > 100) return Promise.reject(Object.assign(new Error("too many ids"), { status: 400, errors: [{ field: "transaction_ids", code: "OUT_OF_RANGE" }] }));
        return rig.provider.acknowledgeTransactions(ids);
      },
    });
    const report = await pollTransactions({ ...rig.deps, provider }, { pageSize: 100 });
    expect(report).toMatchObject({ outcome: "complete", acknowledged: 250 });
    expect(calls).toEqual([100, 100, 50]);
    expect(rig.provider.pending()).toEqual([]);
  });

  it("counts the acknowledge calls that went through when a later one fails", async () => {
    const rig = makeRig();
    for (let i = 0; i < 250; i += 1) rig.provider.addTransaction();
    let calls = 0;
    const provider = Object.assign(Object.create(rig.provider) as typeof rig.provider, {
      listTransactions: (q: Parameters<typeof rig.provider.listTransactions>[0]) => rig.provider.listTransactions({ ...q, page_size: 1_000 }),
      acknowledgeTransactions: (ids: string[]) => (++calls === 2 ? Promise.reject(refusal(503)) : rig.provider.acknowledgeTransactions(ids)),
    });
    await expect(pollTransactions({ ...rig.deps, provider }, { pageSize: 100 })).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.metrics.sum("Acknowledged")).toBe(100);
    expect(rig.provider.pending()).toHaveLength(150);
  });

  it("reads again, and acknowledges in the same cycle, the ids of the later calls when an earlier acknowledge call fails for now", async () => {
    const rig = makeRig();
    for (let i = 0; i < 5; i += 1) rig.provider.addTransaction();
    // Ignores page_size: the whole list in one page, acknowledged in calls of 2.
    const serving = Object.assign(Object.create(rig.provider) as typeof rig.provider, {
      listTransactions: (q: Parameters<typeof rig.provider.listTransactions>[0]) => rig.provider.listTransactions({ ...q, page_size: 1_000 }),
    });
    let failed = false;
    const provider = clientOverFake(serving, rig.clock, (call) => {
      if (call.op !== "acknowledgeTransactions" || failed) return undefined;
      failed = true;
      return { status: 503, retryAfterSeconds: 2 };
    });
    const report = await pollTransactions({ ...rig.deps, provider }, { pageSize: 2 });
    expect(failed).toBe(true);
    expect(report).toMatchObject({ outcome: "complete", acknowledged: 5 });
    expect(rig.provider.pending()).toEqual([]);
  });
});

describe("a re-send after a crash, the provider sending one field in another accepted form meanwhile", () => {
  it("keeps the event id: the client's normalised item hashes as the same content sent in output form", async () => {
    const rig = makeRig();
    const t = rig.provider.addTransaction({ vat_amount: 5 });
    const client = clientOverFake(rig.provider, rig.clock);
    // Crash right after the publish (effects: list, publish): the event is out, no snapshot stored.
    const crash = new CrashPoint({ at: 1, after: true });
    await expect(pollTransactions({ ...rig.deps, ...crashingPorts({ ...rig.deps, provider: client }, crash) })).rejects.toBeInstanceOf(CycleAbortedError);
    expect(crash.effects).toEqual(["provider.listTransactions", "publisher.publish"]);
    // The same amount as a numeric string: the schema normalises it back to 5.
    t["vat_amount"] = "5";
    await pollTransactions({ ...rig.deps, provider: client });
    const created = rig.publisher.ofType("transaction.created");
    expect(created).toHaveLength(2);
    expect(created[1]!.detail.id).toBe(created[0]!.detail.id);
    expect(created[1]!.detail.data.object["vat_amount"]).toBe(5);
  });
});
