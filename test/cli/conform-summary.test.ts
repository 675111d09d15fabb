/** conform-pii's summary line (formatConformSummary): what a pass read and rewrote, in words a count of one reads right in. */
import { describe, expect, it } from "vitest";
import { formatConformSummary } from "../../shared/cli/conform-pii.js";

describe("formatConformSummary", () => {
  const finished = { mode: "hash", outcome: "complete", scanned: 1, rewritten: 1, quarantineRewritten: 0, durationMs: 1 } as const;

  it("says one stored entry, and nothing of the quarantine when the pass rewrote no record there", () => {
    expect(formatConformSummary(finished)).toBe(
      "conform-pii: 1 stored entry read (snapshots, their qashio_id aliases and the bridge's own cursors), 1 rewritten to PII mode hash",
    );
  });

  it("says one quarantine record, and that a pass stopped by a signal stopped as asked", () => {
    const stopped = { ...finished, outcome: "deadline", scanned: 2, quarantineRewritten: 1, cursor: "conform1~x.y" } as const;
    expect(formatConformSummary(stopped, { interrupted: true })).toBe(
      "conform-pii: stopped as asked: 2 stored entries read (snapshots, their qashio_id aliases and the bridge's own cursors), 1 rewritten to PII mode hash, and 1 quarantine record so far",
    );
  });

  it("says entries for none, and that a pass stopped at its deadline, not by a signal, stopped at the time budget", () => {
    const empty = { ...finished, outcome: "deadline", scanned: 0, rewritten: 0 } as const;
    expect(formatConformSummary(empty)).toBe(
      "conform-pii: stopped at the time budget: 0 stored entries read (snapshots, their qashio_id aliases and the bridge's own cursors), 0 rewritten to PII mode hash so far",
    );
  });
});
