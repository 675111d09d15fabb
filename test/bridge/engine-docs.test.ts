/**
 * docs/spec-gaps.md's "Bridge engine" section held to the code: the bounds, sizes and times it gives a reader, and the
 * code it names for each choice. The behaviour tests count in the constants; these read the numbers the doc states.
 */
import { describe, expect, it } from "vitest";
import { BATCH_WRITE_LIMIT } from "../../shared/aws/batch.js";
import {
  CYCLE_SAFETY_MARGIN_MS,
  MAX_CYCLE_BUDGET_MS,
  MIN_CONFORM_TIMEOUT_MS,
  MIN_CYCLE_BUDGET_MS,
  MIN_POLLER_TIMEOUT_MS,
  SDK_CALL_MAX_MS,
  TOKEN_LEASE_TTL_MS,
} from "../../shared/aws/config.js";
import { DEFAULT_CONFORM_PAGE_SIZE } from "../../shared/bridge/conform.js";
import { PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS } from "../../shared/bridge/cycle.js";
import { DEFAULT_DEADLINE_GRACE_MS, DEFAULT_MAX_PAGES, DEFAULT_PAGE_SIZE, MIN_PAGE_SIZE } from "../../shared/bridge/deps.js";
import { wellFormedEntityId } from "../../shared/bridge/entity-id.js";
import { SINGLE_READ_CONCURRENCY } from "../../shared/bridge/provider.js";
import { REDRIVE_READ_PAGES } from "../../shared/bridge/reprocess.js";
import { NOT_SYNCED_BUDGET_SHARE } from "../../shared/bridge/transactions.js";
import { MAX_RECORD_DEPTH } from "../../shared/bridge/validate.js";
import { changeTime, untilLaterSecond } from "../../shared/bridge/versions.js";
import { DEFAULT_LOCK_TTL_MS, DEFAULT_LOCK_WAIT_MS, refreshDeadline } from "../../shared/qashio/auth/refresh-lease.js";
import { DEFAULT_REFRESH_SKEW_MS } from "../../shared/qashio/auth/token-expiry.js";
import { DEFAULT_RETRY, DEFAULT_TIMEOUT_MS } from "../../shared/qashio/http.js";
import { DEFAULT_PAGE_SIZES } from "../../shared/qashio/schemas/queries.js";
import { numbersSaid } from "../doc-text.js";
import { expectCitationsHold, seconds, specGapsSection } from "../spec-gaps-section.js";

/** The "Bridge engine" section, line breaks read as spaces. */
const ENGINE = specGapsSection("Bridge engine");

/** The groups of every match of `pattern` in the section, as numbers; fails when it matches nowhere. */
const said = (pattern: RegExp): number[][] => numbersSaid(ENGINE, pattern);


describe("docs/spec-gaps.md, Bridge engine: page sizes and bounds", () => {
  it("asks the page size it says, halving a refused one down to the spec's transaction default, the card list's being larger", () => {
    expect(said(/asks for `page_size=(\d+)` \(configurable, `pageSize`\)/)).toEqual([[DEFAULT_PAGE_SIZE]]);
    expect(said(/halves the size \(down to (\d+), the spec's default for transactions; the card list's is (\d+)\)/)).toEqual([
      [MIN_PAGE_SIZE, DEFAULT_PAGE_SIZES.erp_cards],
    ]);
    expect(DEFAULT_PAGE_SIZES.transactions).toBe(MIN_PAGE_SIZE);
  });

  it("bounds each walk by the page bound it gives, everywhere it gives it", () => {
    expect(said(/`maxPages`, default ([\d,]+) list calls per status/)).toEqual([[DEFAULT_MAX_PAGES]]);
    const bounds = said(/page bound \(([\d,]+) (?:list calls|pages)/);
    expect(bounds.length).toBeGreaterThanOrEqual(3);
    for (const [bound] of bounds) expect(bound).toBe(DEFAULT_MAX_PAGES);
  });

  it("reads one at a time as many single reads as it says, and drops the answers of the others in flight", () => {
    for (const [n] of said(/(\w+) at a time \(`SINGLE_READ_CONCURRENCY`/)) expect(n).toBe(SINGLE_READ_CONCURRENCY);
    expect(said(/Once the first (\w+) reads of a page \(`SINGLE_READ_CONCURRENCY`/)).toEqual([[SINGLE_READ_CONCURRENCY]]);
    expect(said(/`GET \/erp\/cards\/\{cardId\}`, (\d+) in flight/)).toEqual([[SINGLE_READ_CONCURRENCY]]);
    expect(said(/including those of the reads in flight after it \(up to (\w+), their answers dropped\)/)).toEqual([[SINGLE_READ_CONCURRENCY - 1]]);
  });

  it("has a re-drive read as many pages of a qashio_id as it says", () => {
    expect(said(/up to (\d+) pages a record \(`REDRIVE_READ_PAGES`\)/)).toEqual([[REDRIVE_READ_PAGES]]);
  });

  it("pauses not_synced at the share of the budget it says", () => {
    expect(said(/starts no page after (three quarters|half) of the budget \(`NOT_SYNCED_BUDGET_SHARE`\)/)).toEqual([[NOT_SYNCED_BUDGET_SHARE]]);
  });

  it("stops a cycle as publisher_unavailable after the batches and events it says", () => {
    expect(said(/once (\w+) batches in a row, holding (\d+) events or more/)).toEqual([[PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS]]);
    expect(said(/\(one batch, or under (\d+) in a row\)/)).toEqual([[PUBLISHER_UNAVAILABLE_EVENTS]]);
  });

  it("rejects records nested as deep as it says, with the reason it quotes", () => {
    expect(said(/(\d+) or more levels below itself \(`MAX_RECORD_DEPTH`\)/)).toEqual([[MAX_RECORD_DEPTH]]);
    expect(said(/`\(root\): nested deeper than (\d+) levels`/)).toEqual([[MAX_RECORD_DEPTH]]);
  });

  it("walks snapshots and deletes quarantine records in the batches it says", () => {
    expect(said(/in pages of (\d+) \(`SnapshotStore.scan`/)).toEqual([[DEFAULT_CONFORM_PAGE_SIZE]]);
    expect(said(/one BatchWriteItem per (\d+) records/)).toEqual([[BATCH_WRITE_LIMIT]]);
  });
});

describe("docs/spec-gaps.md, Bridge engine: the values it reads", () => {
  it("takes for no time a provider time before the first date and in the year it names, and the times between", () => {
    const [[year = 0, month = 0, day = 0, placeholderYear = 0] = []] = said(/A provider time before (\d{4})-(\d{2})-(\d{2}) or in year (\d{4})/);
    const first = Date.UTC(year, month - 1, day);
    expect(changeTime(new Date(first - 1).toISOString())).toBeUndefined();
    expect(changeTime(new Date(first).toISOString())).toBe(first);
    const placeholderStart = Date.UTC(placeholderYear, 0, 1);
    expect(changeTime(new Date(placeholderStart).toISOString())).toBeUndefined();
    expect(changeTime(new Date(placeholderStart - 1).toISOString())).toBe(placeholderStart - 1);
  });

  it("names a card by its id only in the length it gives", () => {
    const [[least = 0, most = 0] = []] = said(/a card's, `CA` then (\d+) to (\d+) letters, digits, `_` or `-`/);
    const card = (n: number): string => `CA${"a1_-".repeat(n).slice(0, n)}`;
    expect(wellFormedEntityId("card", card(least))).toBe(card(least));
    expect(wellFormedEntityId("card", card(most))).toBe(card(most));
    expect(wellFormedEntityId("card", card(least - 1))).toBeUndefined();
    expect(wellFormedEntityId("card", card(most + 1))).toBeUndefined();
  });
});

describe("docs/spec-gaps.md, Bridge engine: time budget", () => {
  it("gives the calls the grace and attempt timeout it says, the acknowledge starting at most their difference after the deadline", () => {
    expect(said(/`deadline \+ deadlineGraceMs` \(default (\d+) s, `DEFAULT_DEADLINE_GRACE_MS` in `shared\/bridge\/deps.ts`\)/)).toEqual([
      [seconds(DEFAULT_DEADLINE_GRACE_MS)],
    ]);
    for (const [grace] of said(/grace \((\d+) s\)/)) expect(grace).toBe(seconds(DEFAULT_DEADLINE_GRACE_MS));
    expect(said(/the whole attempt \((\d+) s timeout\)/)).toEqual([[seconds(DEFAULT_TIMEOUT_MS)]]);
    expect(said(/the whole request timeout \((\d+) s\)/)).toEqual([[seconds(DEFAULT_TIMEOUT_MS)]]);
    expect(said(/which may start up to (\d+) s after it/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS - DEFAULT_TIMEOUT_MS)]]);
    expect(said(/up to about (\d+) s for a call to an AWS endpoint that does not answer/)).toEqual([[seconds(SDK_CALL_MAX_MS)]]);
  });

  it("leaves retries to the client's attempt limit and Retry-After bound it says", () => {
    expect(said(/after the client's attempt limit \((\d+)\)/)).toEqual([[DEFAULT_RETRY.maxAttempts]]);
    for (const [wait] of said(/`Retry-After` of up to (\d+) s/)) expect(wait).toBe(seconds(DEFAULT_RETRY.maxRetryAfterMs));
  });

  it("waits as far into the next second as it says before a run that left snapshots unstored lets the lease go", () => {
    const [[intoNext = 0] = []] = said(/waits until (\d+) ms into the clock's next whole second/);
    expect(untilLaterSecond(Date.UTC(2025, 0, 15, 8, 30, 0))).toBe(1000 + intoNext);
  });

  it("gives the token refresh the lease, wait and early refresh it says", () => {
    expect(said(/lock wait up to (\d+) s, refresh up to (\d+) s/)).toEqual([[seconds(DEFAULT_LOCK_WAIT_MS), seconds(refreshDeadline(0, DEFAULT_LOCK_TTL_MS))]]);
    expect(said(/only when its whole (\d+) s lease ends by the call deadline/)).toEqual([[seconds(TOKEN_LEASE_TTL_MS)]]);
    expect(said(/often only the early one \((\d+) s before expiry\)/)).toEqual([[seconds(DEFAULT_REFRESH_SKEW_MS)]]);
  });

  it("gives the AWS budget bounds and margin it says", () => {
    expect(said(/The AWS stack leaves (\d+) s \(`CYCLE_BUDGET_MS` = timeout − (\d+) s\)/)).toEqual([[seconds(CYCLE_SAFETY_MARGIN_MS), seconds(CYCLE_SAFETY_MARGIN_MS)]]);
    const [[grace = 0, more = 0] = []] = said(/`CYCLE_SAFETY_MARGIN_MS` = the (\d+) s grace \+ (\d+) s/);
    expect(grace).toBe(seconds(DEFAULT_DEADLINE_GRACE_MS));
    expect(seconds(CYCLE_SAFETY_MARGIN_MS)).toBe(grace + more);
    expect(said(/under the whole lease, (\d+) s \(`MIN_CYCLE_BUDGET_MS`/)).toEqual([[seconds(MIN_CYCLE_BUDGET_MS)]]);
    expect(said(/one over (\d+) too \(`MAX_CYCLE_BUDGET_MS`, Lambda's longest timeout, (\d+) minutes/)).toEqual([[MAX_CYCLE_BUDGET_MS, MAX_CYCLE_BUDGET_MS / 60_000]]);
    expect(said(/under (\d+) s \(`MIN_POLLER_TIMEOUT_MS`/)).toEqual([[seconds(MIN_POLLER_TIMEOUT_MS)]]);
    const [[conform = 0, margin = 0, reach = 0] = []] = said(/(\d+) s \(`MIN_CONFORM_TIMEOUT_MS`: the (\d+) s margin and (\d+) s/);
    expect(conform).toBe(seconds(MIN_CONFORM_TIMEOUT_MS));
    expect(margin).toBe(seconds(CYCLE_SAFETY_MARGIN_MS));
    expect(conform).toBe(margin + reach);
  });
});

describe("docs/spec-gaps.md, Bridge engine: the code it names", () => {
  it("cites files that exist, holding each name it cites there", () => {
    expect(expectCitationsHold(ENGINE)).toBeGreaterThan(20);
  });
});
