/**
 * The line and column a JSON.parse message is given, whichever Node version wrote it (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { withLineAndColumn } from "../../infra/json-position.js";

const text = '{\n  "tenants": [\n    { "id": "initech" "environment": "eu" }\n  ]\n}\n';

describe("withLineAndColumn", () => {
  it("adds the line and column to Node 20's offset-only message", () => {
    expect(withLineAndColumn("Expected ',' or '}' after property value in JSON at position 39", text)).toBe(
      "Expected ',' or '}' after property value in JSON at position 39 (line 3, column 23)",
    );
  });

  // Mutant: newer Node's own "(line 3 column 23)" kept, so the message named the place twice in two forms.
  it("replaces the line and column newer Node versions add, so the note reads the same on every version", () => {
    expect(withLineAndColumn("Expected ',' or '}' after property value in JSON at position 39 (line 3 column 23)", text)).toBe(
      "Expected ',' or '}' after property value in JSON at position 39 (line 3, column 23)",
    );
  });
});
