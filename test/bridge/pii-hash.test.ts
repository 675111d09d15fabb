import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { applyPii, applyPiiToBody, assertPiiPolicy, conformPii, conformPiiToBody, piiSaltFingerprint, REDACTED, type PiiPolicy } from "../../shared/bridge/pii.js";
import { canonicalJson, contentHash, eventId, sha256Hex, uuidFromHex } from "../../shared/bridge/hash.js";
import { BridgeConfigurationError } from "../../shared/bridge/errors.js";

const txn = { id: "t1", card_holder_name: "Ann Holder", card_holder_email: "Ann@Example.com ", memo: "x" };
const card = { id: "CA1", cardholder: { name: "Ann Holder", email: "ann@example.com", employee_id: "E1" } };

describe("applyPii", () => {
  it("leaves everything as is in full mode", () => {
    expect(applyPii(txn, { mode: "full" })).toBe(txn);
  });

  it("replaces cardholder name, email and employee id in redact mode, top level and nested, without mutating the input", () => {
    expect(applyPii(txn, { mode: "redact" })).toEqual({ ...txn, card_holder_name: REDACTED, card_holder_email: REDACTED });
    expect(applyPii(card, { mode: "redact" }).cardholder).toEqual({ name: REDACTED, email: REDACTED, employee_id: REDACTED });
    expect(card.cardholder.employee_id).toBe("E1");
    expect(txn.card_holder_name).toBe("Ann Holder");
    expect(applyPii({ user_name: "Bo", user_email: "bo@x.io" }, { mode: "redact" })).toEqual({ user_name: REDACTED, user_email: REDACTED });
  });

  it("hashes with the tenant salt: same person same hash, another salt another hash, email case-insensitive", () => {
    const a = applyPii(txn, { mode: "hash", salt: "s1" });
    const b = applyPii({ ...txn, card_holder_email: "ann@example.com" }, { mode: "hash", salt: "s1" });
    const c = applyPii(txn, { mode: "hash", salt: "s2" });
    expect(a.card_holder_email).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(a.card_holder_email).toBe(b.card_holder_email);
    expect(a.card_holder_name).not.toBe(c.card_holder_name);
    expect(applyPii(card, { mode: "hash", salt: "s1" }).cardholder.email).toBe(a.card_holder_email);
  });

  it("leaves null and absent personal fields alone", () => {
    expect(applyPii({ card_holder_name: null }, { mode: "redact" })).toEqual({ card_holder_name: null });
  });

  it("handles a personal field of the wrong type whole, so a record bound for quarantine keeps no name or email", () => {
    const odd = { card_holder_name: { full: "Sara Kapoor" }, card_holder_email: ["sara@example.com"], cardholder: "Sara Kapoor", memo: "x" };
    const redacted = applyPii(odd, { mode: "redact" });
    expect(redacted).toEqual({ card_holder_name: REDACTED, card_holder_email: REDACTED, cardholder: REDACTED, memo: "x" });
    const hashed = applyPii(odd, { mode: "hash", salt: "s1" });
    expect(JSON.stringify(hashed)).not.toMatch(/Sara|sara@/);
    expect(hashed.card_holder_name).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(applyPii({ ...odd }, { mode: "hash", salt: "s1" }).card_holder_name).toBe(hashed.card_holder_name);
  });

  it("gives a name one pseudonym whatever blanks the provider put around it", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const plain = applyPii({ card_holder_name: "Ann Holder" }, policy).card_holder_name;
    expect(applyPii({ card_holder_name: " Ann Holder\t" }, policy).card_holder_name).toBe(plain);
    expect(applyPii({ card_holder_name: "ann holder" }, policy).card_holder_name).not.toBe(plain);
  });

  it("gives a name or email one pseudonym whatever Unicode form it came in (NFC, or NFD with combining marks)", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const nfc = "Jos\u00e9 N\u00fa\u00f1ez";
    const nfd = nfc.normalize("NFD");
    expect(nfd).not.toBe(nfc);
    const name = applyPii({ card_holder_name: nfc }, policy).card_holder_name;
    expect(applyPii({ card_holder_name: nfd }, policy).card_holder_name).toBe(name);
    expect(applyPii({ cardholder: { name: ` ${nfd} ` } }, policy).cardholder.name).toBe(name);
    const email = applyPii({ card_holder_email: "jos\u00e9@example.com" }, policy).card_holder_email;
    expect(applyPii({ card_holder_email: " JOS\u00c9@Example.com ".normalize("NFD") }, policy).card_holder_email).toBe(email);
    // A snapshot stored in clear (under full) in NFD conforms to the pseudonym a fresh NFC pull gets: no change published.
    expect(conformPii({ card_holder_name: nfd }, policy)["card_holder_name"]).toBe(name);
    // Another person (no accent) keeps another pseudonym: NFC composes, it does not fold letters.
    expect(applyPii({ card_holder_name: "Jose Nunez" }, policy).card_holder_name).not.toBe(name);
  });

  it("keeps the pseudonyms already published for ASCII and NFC values: HMAC over the trimmed (emails lower-cased) text", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const hmac = (text: string) => `hmac-sha256:${createHmac("sha256", "s1").update(text).digest("hex")}`;
    expect(applyPii({ card_holder_name: " Ann Holder" }, policy).card_holder_name).toBe(hmac("Ann Holder"));
    expect(applyPii({ card_holder_name: "Jos\u00e9" }, policy).card_holder_name).toBe(hmac("Jos\u00e9"));
    expect(applyPii({ card_holder_email: "Ann@Example.com " }, policy).card_holder_email).toBe(hmac("ann@example.com"));
    expect(applyPii({ card_holder_email: "Jos\u00e9@Example.com" }, policy).card_holder_email).toBe(hmac("jos\u00e9@example.com"));
  });

  it("gives names that differ only in a lone surrogate distinct pseudonyms, none another name's (UTF-8 made each U+FFFD)", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const pseudonym = (name: string) => applyPii({ card_holder_name: name }, policy).card_holder_name;
    // JSON text may carry "\ud800" escapes; JSON.parse gives the lone surrogate as is.
    const illFormed = ["Ann\ud800", "Ann\udbff", "Ann\udc00", "\udc00\ud800Ann"];
    // Well-formed names one could confuse them with: the replacement character, the escapes as text, a pair.
    const wellFormed = ["Ann\ufffd", "Ann\\ud800", '"Ann\\ud800"', "Ann", "\ud800\udc00Ann"];
    const all = [...illFormed, ...wellFormed].map(pseudonym);
    expect(new Set(all).size).toBe(all.length);
    // One person still gets one pseudonym: the same ill-formed name, trimmed, hashes the same every time.
    expect(pseudonym(" Ann\ud800 ")).toBe(pseudonym("Ann\ud800"));
  });

  it("keeps the pseudonyms stored before lone surrogates counted, for well-formed names and emails", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    // Taken from the version before: an existing tenant's stored pseudonyms must not change.
    const published: ReadonlyArray<readonly [string, string, string]> = [
      ["card_holder_name", "Ann Holder", "0b12d4e54848a7b7d8ad8df4ae77ceeaeaeb2e6ed95c4e1fc223a05bc7726c37"],
      ["card_holder_name", "Jos\u00e9 N\u00fa\u00f1ez", "d7bbe81a07fc3210586ebfe0d926e79afaa0d4551af1496997a0b95f70f0c840"],
      ["card_holder_name", "\u{20bb7}\u7530 \u{1f600}", "3f24c87146dcad0ad0c34e75b16563a13f2ab982ca4cfba964fba5cb3c2babfa"],
      ["card_holder_email", "Ann@Example.com ", "557b11d0485581730081d51eabf3f8ea4c79178ea4ad0f04b3a95a7c0bcfeb62"],
    ];
    for (const [field, value, hex] of published) expect(applyPii({ [field]: value }, policy)[field]).toBe(`hmac-sha256:${hex}`);
  });

  it("gives an object-valued personal field (an address) one pseudonym whatever order the provider sends its keys in", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const address = { line1: "Office 1204, Business Bay", city: "Dubai", geo: { lat: 25.18, lng: 55.27 }, country: "AE" };
    const reordered = { country: "AE", geo: { lng: 55.27, lat: 25.18 }, city: "Dubai", line1: "Office 1204, Business Bay" };
    const hashed = applyPii({ shipping_address: address }, policy).shipping_address;
    expect(hashed).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(applyPii({ shipping_address: reordered }, policy).shipping_address).toBe(hashed);
    expect(applyPii({ shipping_details: { shipping_address: reordered } }, policy).shipping_details.shipping_address).toBe(hashed);
    // A snapshot stored in clear with the other order conforms to the same pseudonym: no change published.
    expect(conformPii({ shipping_address: reordered }, policy)["shipping_address"]).toBe(hashed);
    // Another address, another pseudonym; arrays keep their order (it is data).
    expect(applyPii({ shipping_address: { ...address, line1: "Office 1205" } }, policy).shipping_address).not.toBe(hashed);
    expect(applyPii({ return_address: ["a", "b"] }, policy).return_address).not.toBe(applyPii({ return_address: ["b", "a"] }, policy).return_address);
  });

  it("keeps the pseudonym already published for an object whose keys come sorted: HMAC over its JSON text", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const hmac = (text: string) => `hmac-sha256:${createHmac("sha256", "s1").update(text).digest("hex")}`;
    const sorted = { city: "Dubai", country: "AE", line1: "Office 1204" };
    expect(applyPii({ shipping_address: sorted }, policy).shipping_address).toBe(hmac(JSON.stringify(sorted)));
    expect(applyPii({ card_holder_name: { full: "Sara Kapoor" } }, policy).card_holder_name).toBe(hmac('{"full":"Sara Kapoor"}'));
  });

  it("hashes an object under an email field over its JSON text as sent, neither lower-cased nor trimmed as an email string is", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const hmac = (text: string) => `hmac-sha256:${createHmac("sha256", "s1").update(text).digest("hex")}`;
    expect(applyPii({ card_holder_email: { full: "Sara@Example.com" } }, policy).card_holder_email).toBe(hmac('{"full":"Sara@Example.com"}'));
    expect(applyPii({ cardholder: { email: [" Sara@Example.com "] } }, policy).cardholder.email).toBe(hmac('[" Sara@Example.com "]'));
  });

  it("hashes a fresh provider value that looks like a hash: only stored values count as already masked", () => {
    const policy = { mode: "hash" as const, salt: "s1" };
    const lookalike = `hmac-sha256:${"a".repeat(64)}`;
    const hashed = applyPii({ card_holder_name: lookalike }, policy);
    expect(hashed.card_holder_name).not.toBe(lookalike);
    expect(hashed.card_holder_name).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it("rejects hash mode without a salt and unknown modes", () => {
    expect(() => assertPiiPolicy({ mode: "hash" })).toThrow(BridgeConfigurationError);
    expect(() => assertPiiPolicy({ mode: "hash", salt: "" })).toThrow(BridgeConfigurationError);
    expect(() => assertPiiPolicy({ mode: "hash", salt: "s1" })).not.toThrow();
    expect(() => assertPiiPolicy({ mode: "mask" as "full" })).toThrow(/Unknown PII mode/);
  });

  it("refuses a hash salt holding a lone surrogate, as the settings do: its HMAC key would hash as U+FFFD", () => {
    for (const salt of ["tenant-salt-0123456789\ud800", "\udfff-tenant-salt-0123456789", "s1\ud83d"]) {
      const policy: PiiPolicy = { mode: "hash", salt };
      expect(() => assertPiiPolicy(policy)).toThrow(BridgeConfigurationError);
      expect(() => assertPiiPolicy(policy)).toThrow(/lone UTF-16 surrogate/);
      expect(() => applyPii({ card_holder_name: "Ann Holder" }, policy)).toThrow(BridgeConfigurationError);
    }
    // A well-formed surrogate pair (an emoji) is text like any other.
    expect(() => assertPiiPolicy({ mode: "hash", salt: "tenant-salt-0123456789\ud83d\ude00" })).not.toThrow();
    // A salt that is not text at all (a JavaScript caller's number) is no salt: a clear error, not crypto's TypeError.
    expect(() => assertPiiPolicy({ mode: "hash", salt: 1234567890123456 as unknown as string })).toThrow(/needs a per-tenant salt/);
    // The error never shows the salt.
    expect(() => assertPiiPolicy({ mode: "hash", salt: "tenant-salt-0123456789\ud800" })).not.toThrow(/tenant-salt/);
  });

  it("refuses to hash without a salt, or under an unknown mode, wherever a policy is applied: an HMAC keyed with nothing is a pseudonym anyone can recompute", () => {
    const unsalted: readonly PiiPolicy[] = [{ mode: "hash" }, { mode: "hash", salt: "" }, { mode: "Redact" as "redact" }];
    for (const policy of unsalted) {
      expect(() => applyPii({ card_holder_name: "Ann Holder" }, policy)).toThrow(BridgeConfigurationError);
      expect(() => conformPii({ cardholder: { email: "ann@example.com" } }, policy)).toThrow(BridgeConfigurationError);
      expect(() => applyPiiToBody([{ card_holder_email: "ann@example.com" }], policy)).toThrow(BridgeConfigurationError);
      expect(() => conformPiiToBody("Ann Holder", policy)).toThrow(BridgeConfigurationError);
    }
    // Nothing personal to hash: nothing to refuse.
    expect(applyPii({ id: "t1", card_holder_name: null }, { mode: "hash" })).toEqual({ id: "t1", card_holder_name: null });
  });
});

describe("piiSaltFingerprint", () => {
  it("is the first 16 hex digits of HMAC-SHA256 keyed by the salt over its fixed label, as stores record it", () => {
    const salt = "0123456789abcdef-tenant";
    const expected = createHmac("sha256", salt).update("qashio-bridge pii salt fingerprint v1").digest("hex").slice(0, 16);
    expect(piiSaltFingerprint(salt)).toBe(expected);
    expect(piiSaltFingerprint(`${salt}x`)).not.toBe(expected);
  });
});

describe("conformPii", () => {
  const hash = { mode: "hash" as const, salt: "s1" };

  it("brings cleartext stored under full to the current mode, as applyPii would have stored it", () => {
    expect(conformPii(txn, { mode: "redact" })).toEqual(applyPii(txn, { mode: "redact" }));
    expect(conformPii(card, hash)).toEqual(applyPii(card, hash));
    expect(card.cardholder.name).toBe("Ann Holder");
  });

  it("leaves values already masked alone: no hash of the redact marker, no hash of a hash", () => {
    const otherSalt = applyPii(txn, { mode: "hash", salt: "s2" });
    expect(conformPii(otherSalt, hash)).toEqual(otherSalt);
    expect(conformPii({ card_holder_name: REDACTED }, hash)).toEqual({ card_holder_name: REDACTED });
    expect(conformPii(otherSalt, { mode: "redact" })).toMatchObject({ card_holder_name: REDACTED, card_holder_email: REDACTED });
  });

  it("hashes a name that only looks like a hash", () => {
    for (const name of ["hmac-sha256:abc", `hmac-sha256:${"A".repeat(64)}`, ` hmac-sha256:${"a".repeat(64)}`]) {
      expect(conformPii({ card_holder_name: name }, hash)["card_holder_name"]).not.toBe(name);
    }
  });

  it("returns the stored object itself in full mode", () => {
    expect(conformPii(txn, { mode: "full" })).toBe(txn);
  });
});

describe("hashes and event ids", () => {
  it("serialises canonically with sorted keys and drops undefined members", () => {
    expect(canonicalJson({ b: 1, a: [true, null, undefined], c: undefined })).toBe('{"a":[true,null,null],"b":1}');
    expect(contentHash({ a: 1, b: 2 })).toBe(contentHash({ b: 2, a: 1 }));
  });

  it("gives one change one id and any different input another", () => {
    const base = { tenant: "acme", type: "transaction.changed", subjectId: "t1", beforeHash: "h0", beforeVersion: "2025-01-15T10:00:00.000Z", afterHash: "h1" };
    expect(eventId(base)).toBe(eventId({ ...base }));
    const others = [{ tenant: "other" }, { type: "transaction.created" }, { subjectId: "t2" }, { beforeHash: "hx" }, { beforeVersion: "2025-01-15T10:00:00.001Z" }, { afterHash: "hy" }];
    for (const other of others) expect(eventId({ ...base, ...other })).not.toBe(eventId(base));
  });

  it("keeps the id of a first sighting (no snapshot before) as it was before snapshot versions counted", () => {
    const created = { tenant: "acme", type: "transaction.created", subjectId: "t1", beforeHash: "", beforeVersion: "", afterHash: "h1" };
    expect(eventId(created)).toBe(uuidFromHex(sha256Hex("acme\u0000transaction.created\u0000t1\u0000\u0000h1")));
  });

  it("takes an id from the digest's first 128 bits, so ids of released versions stay the same (a re-send after an upgrade is deduplicated)", () => {
    expect(uuidFromHex("0123456789abcdef0123456789abcdef" + "f".repeat(32))).toBe("01234567-89ab-8def-8123-456789abcdef");
  });

  it("formats hash-based ids as RFC 9562 version-8 UUIDs", () => {
    expect(uuidFromHex("f".repeat(64))).toBe("ffffffff-ffff-8fff-bfff-ffffffffffff");
  });
});
