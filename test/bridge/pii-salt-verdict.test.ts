import { describe, expect, it } from "vitest";
import { piiSaltFingerprint, piiSaltVerdict } from "../../shared/bridge/pii.js";

const recorded = piiSaltFingerprint("0123456789abcdef-tenant-a");
const other = piiSaltFingerprint("0123456789abcdef-tenant-b");

describe("piiSaltVerdict", () => {
  it("is same for the recorded salt, and for a caller that does not hash, so a recorded fingerprint stays for a return to hash", () => {
    expect(piiSaltVerdict(recorded, recorded)).toBe("same");
    expect(piiSaltVerdict(recorded, undefined)).toBe("same");
    expect(piiSaltVerdict(recorded, undefined, { newSalt: true })).toBe("same");
    expect(piiSaltVerdict(undefined, undefined)).toBe("same");
  });

  it("records a first salt (a first hashed run, or a store from before fingerprints) and a salt switched on purpose", () => {
    expect(piiSaltVerdict(undefined, recorded)).toBe("record");
    expect(piiSaltVerdict(recorded, other, { newSalt: true })).toBe("record");
  });

  it("is differs for another salt than the recorded one, unless the caller switches salts on purpose", () => {
    expect(piiSaltVerdict(recorded, other)).toBe("differs");
    expect(piiSaltVerdict(recorded, other, { newSalt: false })).toBe("differs");
  });
});
