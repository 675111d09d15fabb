/**
 * The lease names README.md gives are the ones the handlers take: an operator reading a held lease in the table looks
 * for these, and a renamed lease would let an invocation of the old code and one of the new overlap during a deploy.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { leaseNames } from "../../shared/aws/keys.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("the README's lease names are the handlers'", () => {
  it.each(Object.entries(leaseNames))("names the %s lease as the handlers take it", (_, name) => {
    expect(README).toContain(`\`${name("<tenant>")}\``);
  });
});
