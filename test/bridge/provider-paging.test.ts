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
});
