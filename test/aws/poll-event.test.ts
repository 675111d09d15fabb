import { describe, expect, it } from "vitest";
import { PollEventError } from "../../shared/aws/errors.js";
import { cardModeOf, checkPollTarget, conformCursorOf, pollActionOf, type PollEvent } from "../../shared/aws/poll-event.js";
import { thrown } from "../thrown.js";

/** The error `fn` throws (fails the test when it returns). */
describe("pollActionOf", () => {
  it("reads a cycle from no event, no action, or the cycle action itself, on either poller", () => {
    for (const kind of ["transactions", "cards"] as const) {
      expect(pollActionOf(undefined, kind)).toBe("cycle");
      expect(pollActionOf({}, kind)).toBe("cycle");
      expect(pollActionOf({ action: "cycle" }, kind)).toBe("cycle");
    }
  });

  it("reads the operator actions on the transaction poller", () => {
    expect(pollActionOf({ action: "redrive" }, "transactions")).toBe("redrive");
    expect(pollActionOf({ action: "conform-pii" }, "transactions")).toBe("conform-pii");
  });

  it.each(["redrive", "conform-pii"] as const)("refuses the operator action %s on the card poller, naming the field", (action) => {
    const error = thrown(() => pollActionOf({ action }, "cards"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "action", message: 'Poll event field action must be "cycle" on the card poller' });
  });

  it("refuses an unknown action on the transaction poller, naming the field without echoing the value", () => {
    const error = thrown(() => pollActionOf({ action: "replay-SECRET" as never }, "transactions"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "action", message: 'Poll event field action must be "cycle", "redrive" or "conform-pii"' });
    expect((error as Error).message).not.toContain("SECRET");
  });

  it("refuses an action that is not a string", () => {
    expect(() => pollActionOf({ action: 7 as never }, "transactions")).toThrow(PollEventError);
    expect(() => pollActionOf({ action: null as never }, "cards")).toThrow('Poll event field action must be "cycle" on the card poller');
  });
});

describe("an event that is not a JSON object", () => {
  it.each([
    ["a string", "redrive"],
    ["an array", [{ action: "redrive" }]],
    ["a number", 7],
    ["a boolean", true],
  ])("is refused as %s by every reader, naming the event without echoing it", (_, event) => {
    for (const read of [
      () => pollActionOf(event as never, "transactions"),
      () => pollActionOf(event as never, "cards"),
      () => conformCursorOf(event as never, "conform-pii"),
      () => cardModeOf(event as never),
    ]) {
      const error = thrown(read);
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field: "(event)", message: 'Poll event must be a JSON object, such as {"action":"redrive"}' });
    }
  });

  it("reads a JSON null as no event: a cycle, full mode, no cursor", () => {
    expect(pollActionOf(null as never, "transactions")).toBe("cycle");
    expect(conformCursorOf(null as never, "cycle")).toBeUndefined();
    expect(cardModeOf(null as never)).toBe("full");
  });
});

describe("a field spelled in another case", () => {
  it.each([
    [{ Action: "redrive" }, "Action", "action"],
    [{ action: "conform-pii", Cursor: "eyJ9" }, "Cursor", "cursor"],
    [{ MODE: "suspended-only" }, "MODE", "mode"],
  ])("is refused by every reader, naming the field it means, rather than read as absent (%o)", (event, field, meant) => {
    for (const read of [() => pollActionOf(event as never, "transactions"), () => cardModeOf(event as never)]) {
      const error = thrown(read);
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field, message: `Poll event field ${field} is no field; did you mean ${meant}?` });
    }
  });

  it("leaves a rule event's own members and a schedule's scheduledTime alone", () => {
    const rule = { version: "0", id: "e1", "detail-type": "Scheduled Event", source: "aws.events", account: "1", time: "t", region: "r", resources: [], detail: { mode: "suspended-only" } };
    expect(pollActionOf(rule as never, "cards")).toBe("cycle");
    expect(cardModeOf(rule as never)).toBe("suspended-only");
    expect(pollActionOf({ kind: "cards", tenant: "acme", scheduledTime: "t" } as never, "cards")).toBe("cycle");
  });
});

describe("a field that is none of the poll event's", () => {
  it.each([
    [{ acton: "redrive" }, "acton", "action"],
    [{ action: "conform-pii", cursr: "eyJ9" }, "cursr", "cursor"],
    [{ mod: "suspended-only" }, "mod", "mode"],
    [{ tennant: "acme" }, "tennant", "tenant"],
  ])("is refused by every reader, naming it and the field it is nearest, rather than ignored (%o)", (event, field, meant) => {
    for (const read of [
      () => pollActionOf(event as never, "transactions"),
      () => conformCursorOf(event as never, "conform-pii"),
      () => cardModeOf(event as never),
      () => checkPollTarget(event as never, "transactions", "acme"),
    ]) {
      const error = thrown(read);
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field, message: `Poll event field ${field} is no field; did you mean ${meant}?` });
    }
  });

  it("is refused with the fields listed when none is near", () => {
    const error = thrown(() => pollActionOf({ key1: "value1" } as never, "transactions"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({
      field: "key1",
      message: "Poll event field key1 is no field; a poll event has kind, tenant, mode, detail, action, cursor (and a schedule's scheduledTime)",
    });
  });

  it("is refused quoting a name of up to 64 characters, as long as a field name it takes", () => {
    const key = "x".repeat(64);
    const error = thrown(() => pollActionOf({ [key]: 1 } as never, "transactions"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: key, message: `Poll event field ${key} is no field; a poll event has kind, tenant, mode, detail, action, cursor (and a schedule's scheduledTime)` });
  });

  it.each([
    // A schedule's or a rule event's own member is a field too: the one meant may be among them.
    [{ scheduledtime: "t" }, "scheduledtime", "scheduledTime"],
    [{ regoin: "r" }, "regoin", "region"],
    // Of equally near ones, the poll event's own field comes first (detai starts both detail and detail-type).
    [{ detai: {} }, "detai", "detail"],
    // A field name may hold a hyphen, as a rule event's own members do: the name is quoted, not taken for a value.
    [{ "detail-typ": "Scheduled Event" }, "detail-typ", "detail-type"],
    [{ "replay-nam": "r1" }, "replay-nam", "replay-name"],
  ])("is refused naming the nearest of all the fields an event may have (%o)", (event, field, meant) => {
    const error = thrown(() => cardModeOf(event as never));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field, message: `Poll event field ${field} is no field; did you mean ${meant}?` });
  });

  it("is refused without quoting a name that is no plausible field name (it may hold a value)", () => {
    for (const key of ['cursor:"eyJwayI6IngifQ-SECRET"', "x".repeat(65), "a\nb"]) {
      const error = thrown(() => pollActionOf({ [key]: 1 } as never, "transactions"));
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field: "(field)", message: "Poll event has a field whose name is no field name; a poll event has kind, tenant, mode, detail, action, cursor (and a schedule's scheduledTime)" });
      expect((error as Error).message).not.toMatch(/SECRET|xxx/);
    }
  });

  it("leaves a replayed rule event's replay-name alone", () => {
    const replayed = { version: "0", id: "e1", "detail-type": "Scheduled Event", source: "aws.events", account: "1", time: "t", region: "r", resources: [], "replay-name": "r1", detail: {} };
    expect(pollActionOf(replayed as never, "cards")).toBe("cycle");
    expect(cardModeOf(replayed as never)).toBe("full");
  });
});

describe("conformCursorOf", () => {
  it("reads no cursor when the event has none, whatever the action", () => {
    expect(conformCursorOf(undefined, "cycle")).toBeUndefined();
    expect(conformCursorOf({ action: "redrive" }, "redrive")).toBeUndefined();
    expect(conformCursorOf({ action: "conform-pii" }, "conform-pii")).toBeUndefined();
  });

  it("reads the cursor of a conform-pii pass as given", () => {
    expect(conformCursorOf({ action: "conform-pii", cursor: "eyJwayI6IngifQ" }, "conform-pii")).toBe("eyJwayI6IngifQ");
  });

  it.each(["cycle", "redrive"] as const)("refuses a cursor with the %s action", (action) => {
    const error = thrown(() => conformCursorOf({ cursor: "abc" }, action));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "cursor", message: 'Poll event field cursor goes only with action "conform-pii"' });
  });

  it.each([7, "", "abc"])("refuses a cursor (%j) with the redrive action as one that goes with conform-pii only, whatever it holds", (cursor) => {
    const error = thrown(() => conformCursorOf({ action: "redrive", cursor: cursor as never }, "redrive"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "cursor", message: 'Poll event field cursor goes only with action "conform-pii"' });
  });

  it.each([
    ["an empty string", ""],
    ["a number", 7],
    ["null", null],
    ["an object", { pk: "x" }],
  ])("refuses a cursor that is %s, naming the field", (_, cursor) => {
    const error = thrown(() => conformCursorOf({ action: "conform-pii", cursor: cursor as never }, "conform-pii"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "cursor", message: "Poll event field cursor must be the cursor a conform-pii result gave" });
  });
});

describe("cardModeOf", () => {
  it("reads full when no mode is set", () => {
    expect(cardModeOf(undefined)).toBe("full");
    expect(cardModeOf({})).toBe("full");
    expect(cardModeOf({ detail: null })).toBe("full");
    expect(cardModeOf({ detail: {} })).toBe("full");
  });

  it("reads the mode from the input, else from the rule event's detail", () => {
    expect(cardModeOf({ mode: "suspended-only" })).toBe("suspended-only");
    expect(cardModeOf({ mode: "full" })).toBe("full");
    expect(cardModeOf({ detail: { mode: "suspended-only" } })).toBe("suspended-only");
    // The input's own mode comes first.
    expect(cardModeOf({ mode: "full", detail: { mode: "suspended-only" } })).toBe("full");
  });

  it.each([
    ["a string", "suspended-only-SECRET"],
    ["an array", [{ mode: "SECRET" }]],
    ["a number", 7],
  ])("refuses a detail that is %s, which would read as no mode and run a full walk, naming the field without echoing it", (_, detail) => {
    for (const read of [() => cardModeOf({ detail } as never), () => pollActionOf({ detail } as never, "cards")]) {
      const error = thrown(read);
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field: "detail", message: "Poll event field detail must be a JSON object, such as {\"mode\":\"suspended-only\"}" });
      expect((error as Error).message).not.toMatch(/SECRET|7/);
    }
  });

  it.each([
    [{ mode: "suspend-only-SECRET" }, "mode"],
    [{ detail: { mode: "FULL-SECRET" } }, "detail.mode"],
    [{ mode: 7 }, "mode"],
    [{ mode: "constructor" }, "mode"],
    // An array whose text is a mode ("full") is no mode: a property lookup by it would find one.
    [{ mode: ["full"] }, "mode"],
    [{ detail: { mode: ["suspended-only"] } }, "detail.mode"],
    [{ mode: null }, "mode"],
    [{ detail: { mode: null } }, "detail.mode"],
    [{ mode: "suspended-only-SECRET", detail: { mode: "suspended-only" } }, "mode"],
  ])("refuses a mode it does not know (%j), naming the field without echoing the value", (event, field) => {
    const error = thrown(() => cardModeOf(event as PollEvent));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ name: "PollEventError", field, message: `Poll event field ${field} must be "full" or "suspended-only"` });
    expect((error as Error).message).not.toMatch(/SECRET|constructor|7/);
  });
});

describe("checkPollTarget", () => {
  it("accepts an event naming this poller and tenant, or naming neither (a hand-made invoke, a rule event)", () => {
    for (const event of [undefined, null, {}, { kind: "transactions", tenant: "falcon", scheduledTime: "2026-01-01T00:00:00Z" }, { detail: {} }]) {
      expect(() => checkPollTarget(event as never, "transactions", "falcon")).not.toThrow();
    }
    expect(() => checkPollTarget({ kind: "cards", tenant: "falcon", mode: "suspended-only" }, "cards", "falcon")).not.toThrow();
  });

  it("refuses the input of another poller's schedule, naming the field", () => {
    const error = thrown(() => checkPollTarget({ kind: "cards" }, "transactions", "falcon"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "kind", message: 'Poll event field kind must be "transactions" on this poller (invoke the other poller\'s function for the other kind)' });
    expect(() => checkPollTarget({ kind: 7 as never }, "cards", "falcon")).toThrow('Poll event field kind must be "cards" on this poller');
  });

  it.each(["suspended-only", "full"])("refuses a card mode (%s) on the transaction poller, which would run a transaction cycle and answer completed", (mode) => {
    for (const event of [{ mode }, { action: "redrive", mode }]) {
      const error = thrown(() => checkPollTarget(event as PollEvent, "transactions", "falcon"));
      expect(error).toBeInstanceOf(PollEventError);
      expect(error).toMatchObject({ field: "mode", message: "Poll event field mode goes only to the card poller (invoke the card poller's function for a card mode)" });
    }
    expect(() => checkPollTarget({ mode } as PollEvent, "cards", "falcon")).not.toThrow();
  });

  it.each(["suspended-only", "full"])("refuses a card mode (%s) in a rule event's detail on the transaction poller, as one in the input", (mode) => {
    const error = thrown(() => checkPollTarget({ detail: { mode } } as PollEvent, "transactions", "falcon"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "detail.mode", message: "Poll event field detail.mode goes only to the card poller (invoke the card poller's function for a card mode)" });
    expect(() => checkPollTarget({ detail: { mode } } as PollEvent, "cards", "falcon")).not.toThrow();
    expect(() => checkPollTarget({ detail: {} } as PollEvent, "transactions", "falcon")).not.toThrow();
  });

  it("refuses the input of another tenant's schedule, naming the field without echoing either tenant", () => {
    const error = thrown(() => checkPollTarget({ tenant: "heron-SECRET" }, "transactions", "falcon"));
    expect(error).toBeInstanceOf(PollEventError);
    expect(error).toMatchObject({ field: "tenant", message: "Poll event field tenant must be this function's TENANT_ID (invoke the other tenant's function)" });
    expect((error as Error).message).not.toMatch(/SECRET|falcon/);
    expect(() => checkPollTarget({ tenant: null as never }, "transactions", "falcon")).toThrow(PollEventError);
  });
});
