import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SINGLE_READ_CONCURRENCY } from "../../shared/bridge/provider.js";
import { KEPT_RECORDS_NAMED, REDRIVE_CHUNK_RECORDS, REDRIVE_QUARANTINE_PAGE_SIZE } from "../../shared/bridge/redrive.js";
import { REDRIVE_READ_PAGES } from "../../shared/bridge/reprocess.js";

/** A document of the repository, line breaks read as spaces. */
const documentText = (path: string): string => readFileSync(join(import.meta.dirname, "../..", path), "utf8").replace(/\s+/g, " ");

/** The numbers a document of the repository gives where `pattern` (its one group a number) matches. */
function numbersIn(path: string, pattern: RegExp): number[] {
  return [...documentText(path).matchAll(new RegExp(pattern, "g"))].map((match) => Number(match[1]?.replace(/,/g, "")));
}

/** Every number of the first match of `pattern` (its groups numbers) in a document of the repository. */
function numbersAt(path: string, pattern: RegExp): number[] {
  return (pattern.exec(documentText(path)) ?? []).slice(1).map((n) => Number(n.replace(/,/g, "")));
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

  it("reads the provider as many records at a time, and as many pages of a qashio_id, as the runbook says", () => {
    const words: Readonly<Record<string, number>> = { two: 2, three: 3, four: 4, five: 5, six: 6, eight: 8 };
    const inFlight = /Each record costs one provider read, (\w+) in flight at a time/.exec(documentText("docs/runbook.md"))?.[1] ?? "";
    expect(words[inFlight]).toBe(SINGLE_READ_CONCURRENCY);
    // The example's time follows from it: records x a read's time / reads in flight.
    const [records = 0, readMs = 0, total = 0] = numbersAt("docs/runbook.md", /so ([\d,]+) records at (\d+) ms a read take about (\d+) s of reads/);
    expect(total).toBe((records * readMs) / 1000 / SINGLE_READ_CONCURRENCY);
    expect(numbersIn("docs/runbook.md", /costs a read per page up to (\d+)/)).toEqual([REDRIVE_READ_PAGES]);
    expect(numbersIn("docs/runbook.md", /when (\d+) pages of them did not list the record's own/)).toEqual([REDRIVE_READ_PAGES]);
  });

  it("reads the quarantine in the pages spec-gaps says", () => {
    expect(numbersIn("docs/spec-gaps.md", /It reads the quarantine a page of (\d+) records at a time/)).toEqual([REDRIVE_QUARANTINE_PAGE_SIZE]);
  });
});
