/**
 * docs/spec-gaps.md's "Local mode" section held to the code: the code it names for each choice, and the bounds,
 * defaults and messages it gives a reader, read out of the section and compared with what the code defines or says.
 */
import { describe, expect, it } from "vitest";
import { unwritableStateDirRemedy } from "../../shared/cli/engine-errors.js";
import { EXIT, TokensLostError } from "../../shared/cli/errors.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";
import { expectCitationsHold, specGapsSection } from "../spec-gaps-section.js";

/** The "Local mode" section, line breaks read as spaces. */
const LOCAL = specGapsSection("Local mode");

describe("docs/spec-gaps.md, Local mode: the code it names", () => {
  it("cites files that exist, holding each name it cites there", () => {
    expect(expectCitationsHold(LOCAL)).toBeGreaterThan(50);
  });
});

/** The first group of `pattern` in the section; fails when the section no longer says it. */
function quoted(pattern: RegExp): string {
  const match = pattern.exec(LOCAL);
  expect(match, `Local mode no longer matches ${pattern}`).not.toBeNull();
  return match?.[1] ?? "";
}

describe("docs/spec-gaps.md, Local mode: the messages it quotes", () => {
  it("quotes a cycle lease's refusal on a state directory that takes no writes as it is worded", () => {
    expect(quoted(/naming `<state>\/locks`, the system's code and "([^"]+)"/)).toBe(unwritableStateDirRemedy("<state>"));
  });

  it("quotes the loss of held tokens that could not be saved as worded, for a directory taking no writes and for an unreadable lease", () => {
    const lost = new TokensLostError("/srv/state/tokens.json");
    expect(lost.exitCode).toBe(EXIT.reauthorize);
    expect(lost.message).toContain(quoted(/the new refresh token is lost and exits 3 \("([^"]+)"/));
    const lease = new LeaseUnreadableError("/srv/state/locks/qashio-token-refresh.lock", "EIO");
    const leaseLost = new TokensLostError("/srv/state/tokens.json", { failure: lease });
    expect(leaseLost.message).toContain(quoted(/could not read the token refresh lease kept for them, "([^"]+)"/));
  });
});
