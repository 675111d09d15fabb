/**
 * How a scope asked for (`authorize --scope`) and a scope granted are judged, at the edges the command's tests do not
 * reach: near misses of the provider's other scopes, a mix of comma-joined and mistyped values, a grant's escapes.
 */
import { describe, expect, it } from "vitest";
import { checkRequestedScope, grantShortfall } from "../../shared/cli/cycle-scopes.js";
import { UsageError } from "../../shared/cli/errors.js";

/** The refusal of `requested`, as its message. */
function refusalOf(requested: string): string {
  try {
    checkRequestedScope(requested);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error(`--scope ${requested} was not refused`);
}

describe("checkRequestedScope", () => {
  it("suggests the near one among all the spec's scopes, not only those the cycles call with", () => {
    expect(checkRequestedScope("transactions:read transactions:write cards:read wallet:raed").warnings[0]).toContain('"wallet:raed" (did you mean wallet:read?)');
    expect(checkRequestedScope("transactions:read transactions:write cards:read users:reed").warnings[0]).toContain('"users:reed" (did you mean users:read?)');
  });

  it("warns of nothing for the default scopes or any of the spec's, and tells a single unknown value as 'it'", () => {
    expect(checkRequestedScope("transactions:read transactions:write cards:read wallet:read cards:write users:read")).toEqual({ warnings: [], missing: [] });
    const [warning] = checkRequestedScope("transactions:read transactions:write cards:read erp:export").warnings;
    expect(warning).toMatch(/^--scope: "erp:export" is no scope the spec names \(.*\); the provider may refuse it \(invalid_scope\) at the sign-in: if it is a typo/);
  });

  it("names a value given twice once, in the warning and in the refusal", () => {
    const [warning] = checkRequestedScope("transactions:read transactions:write cards:read erp:export erp:export").warnings;
    expect(warning).toMatch(/^--scope: "erp:export" is no scope the spec names \(.*\); the provider may refuse it \(invalid_scope\)/);
    expect(refusalOf("a,b transactions:read a,b")).toMatch(/^--scope: "a,b" joins scopes with a comma/);
    expect(refusalOf("erp:export erp:export")).toMatch(/^--scope: "erp:export" is no scope the spec names\. --scope \(erp:export erp:export\) lacks /);
  });

  it("refuses a comma-joined value whatever else the set holds, before judging what it lacks", () => {
    expect(refusalOf("cards:all transactions:read,transactions:write")).toBe(
      '--scope: "transactions:read,transactions:write" joins scopes with a comma: separate them with spaces; no sign-in was started',
    );
  });

  it("says what the set lacks after any unknown value's warning, and returns what it lacks for the grant's warning not to repeat", () => {
    const asked = checkRequestedScope("transactions:read cards:read ledger:read");
    expect(asked.missing).toEqual(["transactions:write"]);
    expect(asked.warnings).toHaveLength(2);
    expect(asked.warnings[0]).toMatch(/^--scope: "ledger:read" is no scope/);
    expect(asked.warnings[1]).toMatch(/^--scope \(transactions:read cards:read ledger:read\) lacks transactions:write, .* To ask for them, stop with Ctrl-C and authorize with /);
  });

  it("warns, not refuses, a set that reads cards but not transactions: a cycle can still read something with it", () => {
    const asked = checkRequestedScope("cards:read transactions:write");
    expect(asked.missing).toEqual(["transactions:read"]);
    expect(asked.warnings).toEqual([expect.stringMatching(/^--scope \(cards:read transactions:write\) lacks transactions:read, /)]);
  });

  it("quotes the set it judges as inert text, as the person's terminal shows it", () => {
    const [warning] = checkRequestedScope("transactions:read cards:read \u001b[2J").warnings.slice(-1);
    expect(warning).toContain(String.raw`--scope (transactions:read cards:read \u001b[2J) lacks transactions:write`);
    expect(warning).not.toContain("\u001b");
  });
});

describe("grantShortfall", () => {
  it("quotes a granted scope lacking a cycle scope as inert text: the provider's answer is untrusted", () => {
    const message = grantShortfall("transactions:read\u001b]0;owned\u0007", "transactions:read")?.message ?? "";
    expect(message).toContain(String.raw`the grant (scope: transactions:read\u001b]0;owned\u0007) lacks`);
    expect(message).not.toContain("\u001b");
  });
});
