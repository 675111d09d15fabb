/** cycleDeps: what each cycle is handed of the parts both share. */
import { describe, expect, it } from "vitest";
import { cycleDeps, requireObjectWithId, type ItemValidator } from "../../shared/bridge/index.js";
import { makeRig } from "./fakes.js";

describe("cycleDeps", () => {
  it("hands both cycles every shared part (the event source, the validators), and the card switches to the card cycle alone", () => {
    const { provider, emitCardCreated: _unused, ...common } = makeRig().deps;
    const card: ItemValidator = (raw) => requireObjectWithId(raw);
    const shared = { ...common, source: "acme.cards", validators: { card } };
    const { transactions, cards } = cycleDeps({ ...shared, provider, emitCardCreated: true, cardDetails: true });
    expect(transactions).toStrictEqual({ ...shared, provider });
    expect(cards).toStrictEqual({ ...shared, provider, emitCardCreated: true, cardDetails: true });
  });
});
