import { describe, expect, it } from "vitest";
import { errorLabel } from "../shared/error-label.js";

describe("errorLabel", () => {
  it("names an error by its name, never its message", () => {
    expect(errorLabel(Object.assign(new Error("token rt-secret refused"), { name: "ThrottlingException" }))).toBe("ThrottlingException");
    expect(errorLabel(new RangeError("could not write rt-secret"))).toBe("RangeError");
    expect(errorLabel(new Error("could not write rt-secret"))).toBe("Error");
  });

  it("names a plain Error (or one named 'Error') with a system code by that code: ENOSPC, EACCES, ECONNREFUSED", () => {
    for (const code of ["ENOSPC", "EACCES", "ECONNREFUSED"]) {
      expect(errorLabel(Object.assign(new Error(`${code}: /state/tokens.json rt-secret`), { code }))).toBe(code);
      expect(errorLabel({ name: "Error", code })).toBe(code);
    }
  });

  it("keeps a typed error's name even when it carries a code, and the name when the code is empty or not text", () => {
    expect(errorLabel(Object.assign(new Error("unreadable"), { name: "LeaseUnreadableError", code: "EACCES" }))).toBe("LeaseUnreadableError");
    expect(errorLabel(Object.assign(new Error("x"), { code: "" }))).toBe("Error");
    expect(errorLabel(Object.assign(new Error("x"), { code: 28 }))).toBe("Error");
  });

  it("says 'unknown error' for a thrown value that is no error", () => {
    for (const value of [undefined, null, "rt-secret", 42, {}]) expect(errorLabel(value)).toBe("unknown error");
  });
});
