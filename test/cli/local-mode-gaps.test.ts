/**
 * docs/spec-gaps.md's "Local mode" section held to the code: the code it names for each choice, and the bounds,
 * defaults and messages it gives a reader, read out of the section and compared with what the code defines or says.
 */
import { describe, expect, it } from "vitest";
import { expectCitationsHold, specGapsSection } from "../spec-gaps-section.js";

/** The "Local mode" section, line breaks read as spaces. */
const LOCAL = specGapsSection("Local mode");

describe("docs/spec-gaps.md, Local mode: the code it names", () => {
  it("cites files that exist, holding each name it cites there", () => {
    expect(expectCitationsHold(LOCAL)).toBeGreaterThan(50);
  });
});
