/** HeldTokens by itself: what it says of held tokens a re-save settled, and when it lets go of their provider. */
import { describe, expect, it } from "vitest";
import { AUTHORIZE_AGAIN, TokensLostError } from "../../shared/cli/errors.js";
import { HeldTokens } from "../../shared/cli/held-tokens.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";
import { FakeClock, RecordingLogger } from "../bridge/fakes.js";

function heldTokens(fileKept: boolean): { held: HeldTokens; logger: RecordingLogger } {
  const logger = new RecordingLogger();
  const held = new HeldTokens({ file: "/state/tokens.json", fileKept, signInAgain: AUTHORIZE_AGAIN, clock: new FakeClock(), logger });
  return { held, logger };
}

describe("HeldTokens", () => {
  it.each([
    [true, "/state/tokens.json holds newer ones"],
    [false, "the token file holds newer ones"],
  ])("says held tokens were dropped for newer ones, naming the token file only while it is kept (kept: %s)", (fileKept, named) => {
    const { held, logger } = heldTokens(fileKept);
    held.heard("held_tokens_dropped");
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatchObject({ level: "warn" });
    expect(logger.lines[0]?.message).toContain(`were not saved: ${named} (stored meanwhile by another process or \`authorize\`), used instead`);
  });

  it("lets go of the provider (untracks it) once its held tokens are saved, on a later try too", async () => {
    const { held } = heldTokens(true);
    const answers = [false, true];
    const provider = { close: () => undefined, saveHeldTokens: async () => answers.shift() ?? true, heldTokensFailure: undefined };
    let untracked = 0;
    await held.settle(provider, () => (untracked += 1));
    expect(answers).toEqual([]);
    expect(untracked).toBe(1);
  });

  it("calls held tokens it could not save lost with why the last try failed, so the loss names what must be fixed first", async () => {
    const { held } = heldTokens(true);
    const failure = new LeaseUnreadableError("/state/locks/token-refresh.lock", "EMFILE");
    const provider = { close: () => undefined, saveHeldTokens: async () => false, heldTokensFailure: failure };
    let untracked = 0;
    const error = await held.settle(provider, () => (untracked += 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokensLostError);
    expect((error as TokensLostError).message).toContain("once the token refresh lease can be read again (the lease file /state/locks/token-refresh.lock could not be read (EMFILE))");
    expect(untracked).toBe(1);
  });
});
