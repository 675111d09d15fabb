/**
 * The list-answer rules of provider.ts and page-size.ts, case by case: pinned where hand mutation testing found a
 * change to them that no walk test noticed.
 */
import { describe, expect, it } from "vitest";
import { ServedPageSize } from "../../shared/bridge/page-size.js";
import { otherPageAnswered, repeatsPage, type WalkedPage } from "../../shared/bridge/provider.js";

const page = (n: number, rows: readonly unknown[], pagination: Record<string, unknown>) => ({ data: rows, pagination: { page: n, ...pagination } });

describe("otherPageAnswered", () => {
  it("names the page answered in place of the one asked while has_next says more follow, with no total_pages", () => {
    expect(otherPageAnswered(page(1, [{ id: "a" }], { has_next: true }), 2)).toBe(1);
  });

  it("names no page for a list's last page answered for one past it (a list that shrank under the walk)", () => {
    expect(otherPageAnswered(page(2, [{ id: "a" }], { has_next: false, total_pages: 2 }), 3)).toBeUndefined();
    // One page before the last answered in place of the last is another page.
    expect(otherPageAnswered(page(1, [{ id: "a" }], { has_next: false, total_pages: 2 }), 2)).toBe(1);
  });

  it("names a page past the one asked even when it is the last: no list that shrank answers so, and the pages between go unread", () => {
    expect(otherPageAnswered(page(3, [{ id: "a" }], { has_next: false, total_pages: 3 }), 2)).toBe(3);
    expect(otherPageAnswered(page(2, [], { has_next: false, total_pages: 0 }), 1)).toBe(2);
  });
});

describe("repeatsPage", () => {
  const before: WalkedPage = { page: 1, size: 2, total: 10, keys: ["a", "b"] };

  it("is true for the rows of the page before at the same size and count", () => {
    expect(repeatsPage({ page: 2, size: 2, total: 10, keys: ["a", "b"] }, before)).toBe(true);
  });

  it("takes a page asked in another size, or under another count, for no evidence", () => {
    expect(repeatsPage({ page: 2, size: 3, total: 10, keys: ["a", "b"] }, before)).toBe(false);
    expect(repeatsPage({ page: 2, size: 2, total: 12, keys: ["a", "b"] }, before)).toBe(false);
  });

  it("takes rows naming no item for no evidence: such rows are alike on any page", () => {
    const malformed: WalkedPage = { page: 1, size: 2, total: 10, keys: [undefined, undefined] };
    expect(repeatsPage({ page: 2, size: 2, total: 10, keys: [undefined, undefined] }, malformed)).toBe(false);
  });
});

describe("ServedPageSize", () => {
  it.each([true, false])("takes an empty page that says more follow for no evidence of the size served (lowersOnce: %s)", (lowersOnce) => {
    const served = new ServedPageSize({ lowersOnce });
    expect(served.weigh({ data: [], pagination: { has_next: true } }, 0, 50, true)).toBe(50);
    expect(served.in(50)).toBe(50);
  });

  /** A list answer of `held` rows; `pagination` as the provider sent it. */
  const answer = (held: number, pagination: Record<string, unknown> = { has_next: true }) => ({
    data: Array.from({ length: held }, (_, i) => ({ id: `c${i}` })),
    pagination,
  });

  it("takes a page short of the size asked that is not the last for the size served, and the last page short for none", () => {
    expect(new ServedPageSize().weigh(answer(30), 30, 50, true)).toBe(30);
    expect(new ServedPageSize().weigh(answer(30, { has_next: false }), 30, 50, false)).toBe(50);
  });

  it("takes a page holding more than asked for the size served", () => {
    expect(new ServedPageSize().weigh(answer(60), 60, 50, true)).toBe(60);
  });

  it.each([true, false])("takes a page_size that counts no pages but exceeds the items held for the size served (lowersOnce: %s)", (lowersOnce) => {
    expect(new ServedPageSize({ lowersOnce }).weigh(answer(30, { has_next: true, page_size: 40 }), 30, 50, true)).toBe(40);
  });

  it("lets a short page lower a size a fuller page showed only when lowersOnce", () => {
    const kept = new ServedPageSize();
    kept.weigh(answer(50), 50, 50, true);
    expect(kept.weigh(answer(30), 30, 50, true)).toBe(50);
    const lowered = new ServedPageSize({ lowersOnce: true });
    lowered.weigh(answer(50), 50, 50, true);
    expect(lowered.weigh(answer(30), 30, 50, true)).toBe(30);
  });

  it("starts over at a new size asked: neither the most held nor a short page at the old size carries over", () => {
    const fuller = new ServedPageSize();
    fuller.weigh(answer(50), 50, 50, true);
    expect(fuller.weigh(answer(25), 25, 25, true)).toBe(25);
    const shorter = new ServedPageSize();
    shorter.weigh(answer(30), 30, 50, true);
    expect(shorter.in(25)).toBe(25);
    expect(shorter.weigh(answer(10, { has_next: false }), 10, 25, false)).toBe(25);
  });
});
