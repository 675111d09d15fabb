import { describe, expect, it } from "vitest";
import { emptyReport, totalPublished } from "../../shared/bridge/report.js";

describe("totalPublished", () => {
  it("adds the events published of every type, as the poll functions' results and the local bridge count them", () => {
    expect(totalPublished(emptyReport("transactions"))).toBe(0);
    expect(totalPublished({ ...emptyReport("transactions"), published: { "transaction.created": 2, "transaction.changed": 3 } })).toBe(5);
  });
});
