import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { KEPT_RECORDS_NAMED, REDRIVE_CHUNK_RECORDS, REDRIVE_QUARANTINE_PAGE_SIZE } from "../../shared/bridge/redrive.js";

/** The numbers a document of the repository gives where `pattern` (its one group a number) matches, line breaks read as spaces. */
function numbersIn(path: string, pattern: RegExp): number[] {
  const text = readFileSync(join(import.meta.dirname, "../..", path), "utf8").replace(/\s+/g, " ");
  return [...text.matchAll(new RegExp(pattern, "g"))].map((match) => Number(match[1]?.replace(/,/g, "")));
}

// The other re-drive tests count in these constants, so only these hold them to the numbers operators are told.
describe("the re-drive's bounds, as the docs give them", () => {
  it("names as many kept records as docs/local-mode.md and the runbook say it lists", () => {
    expect(numbersIn("docs/local-mode.md", /\(the first (\d+) listed, the rest counted\)/)).toEqual([KEPT_RECORDS_NAMED]);
    expect(numbersIn("docs/runbook.md", /`kept` lists the records left in place \(their ids, the first (\d+),/)).toEqual([KEPT_RECORDS_NAMED]);
  });

  it("re-drives the chunk of records docs/local-mode.md and the runbook say it holds", () => {
    expect(numbersIn("docs/local-mode.md", /re-drives every ([\d,]+) records taken before it walks on/)).toEqual([REDRIVE_CHUNK_RECORDS]);
    expect(numbersIn("docs/runbook.md", /every ([\d,]+) records taken are read again/)).toEqual([REDRIVE_CHUNK_RECORDS]);
    expect(numbersIn("docs/runbook.md", /chunks of ([\d,]+) records taken before it are re-driven/)).toEqual([REDRIVE_CHUNK_RECORDS]);
  });

  it("reads the quarantine in the pages spec-gaps says", () => {
    expect(numbersIn("docs/spec-gaps.md", /It reads the quarantine a page of (\d+) records at a time/)).toEqual([REDRIVE_QUARANTINE_PAGE_SIZE]);
  });
});
