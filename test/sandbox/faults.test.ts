import { describe, expect, it } from "vitest";
import { FaultQueue } from "../../sandbox/faults.js";

describe("FaultQueue", () => {
  it("fails exactly the next `count` matching requests, then none", () => {
    const queue = new FaultQueue();
    queue.add({ method: "get", pathPrefix: "/public/v1/erp/transactions", status: 500, count: 2 });
    expect(queue.take("GET", "/public/v1/erp/cards")).toBeUndefined();
    expect(queue.take("GET", "/public/v1/erp/transactions")?.status).toBe(500);
    expect(queue.list()).toEqual([expect.objectContaining({ count: 1 })]);
    expect(queue.take("GET", "/public/v1/erp/transactions?page=2")?.status).toBe(500);
    expect(queue.take("GET", "/public/v1/erp/transactions")).toBeUndefined();
    expect(queue.list()).toEqual([]);
  });

  // In-process callers bypass the control surface's schema (count >= 1): a count that fails no request, or a
  // fraction, is refused by name rather than armed as one fault.
  it.each([0, -1, 1.5, Number.NaN])("refuses a count of %s, arming nothing", (count) => {
    const queue = new FaultQueue();
    expect(() => queue.add({ status: 500, count })).toThrow(new RangeError(`fault count must be a whole number of 1 or more, got ${count}`));
    expect(queue.take("GET", "/public/v1/erp/transactions")).toBeUndefined();
  });
});
