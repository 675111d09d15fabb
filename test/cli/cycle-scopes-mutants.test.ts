/**
 * How a scope asked for (`authorize --scope`) and a scope granted are judged, at the edges the command's tests do not
 * reach: near misses of the provider's other scopes, a mix of comma-joined and mistyped values, a grant's escapes.
 */
import { describe, expect, it } from "vitest";
import { grantShortfall, requestedShortfall } from "../../shared/cli/cycle-scopes.js";
import { UsageError } from "../../shared/cli/errors.js";

/** The refusal of `requested`, as its message. */
function refusalOf(requested: string): string {
  try {
    requestedShortfall(requested);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error(`--scope ${requested} was not refused`);
}

describe("requestedShortfall", () => {
  it("suggests the near one among all the provider's scopes, not only those the cycles call with", () => {
    expect(refusalOf("transactions:read cards:read wallet:raed")).toContain('"wallet:raed" (did you mean wallet:read?)');
    expect(refusalOf("transactions:read cards:read users:reed")).toContain('"users:reed" (did you mean users:read?)');
  });

  it("suggests no near scope for a comma-joined value, whose fix is the spaces the note asks for", () => {
    expect(refusalOf("transactions:read, cards:read")).toBe(
      '--scope: "transactions:read," is no scope of the provider\'s (wallet:read, cards:read, cards:write, transactions:read, transactions:write and users:read): ' +
        "separate scopes with spaces, not commas; no sign-in was started",
    );
  });

  it("adds the note on commas when any value refused holds one, beside another refused for a typo", () => {
    expect(refusalOf("cards:all transactions:read,transactions:write")).toMatch(/are no scopes of the provider's \([^)]*\): separate scopes with spaces, not commas; no sign-in was started$/);
  });
});

describe("grantShortfall", () => {
  it("quotes a granted scope lacking a cycle scope as inert text: the provider's answer is untrusted", () => {
    const message = grantShortfall("transactions:read\u001b]0;owned\u0007", "transactions:read")?.message ?? "";
    expect(message).toContain(String.raw`the grant (scope: transactions:read\u001b]0;owned\u0007) lacks`);
    expect(message).not.toContain("\u001b");
  });
});
