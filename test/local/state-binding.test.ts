import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  bindStateDir,
  CorruptStateError,
  PiiSaltAlreadyRecordedError,
  PiiSaltMismatchError,
  SnapshotStoreMissingError,
  StateBindingMismatchError,
  StateBindingMissingError,
  TEMP_SUFFIX,
} from "../../shared/local/index.js";

const owner = { baseUrl: "https://api.provider.test", clientId: "client-1", tenant: "acme" };

function freshDir(): string {
  return join(mkdtempSync(join(tmpdir(), "binding-")), "state");
}

/** Gives the directory what the binding protects: tokens, or a snapshot segment. */
function holdState(dir: string, what: "tokens" | "snapshots"): void {
  if (what === "tokens") writeFileSync(join(dir, "tokens.json"), "{}");
  else {
    mkdirSync(join(dir, "snapshots"), { recursive: true });
    writeFileSync(join(dir, "snapshots", "seg-000000000001-abcd.log"), "");
  }
}

function mismatch(promise: Promise<unknown>): Promise<StateBindingMismatchError> {
  return promise.then(
    () => {
      throw new Error("expected a StateBindingMismatchError");
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(StateBindingMismatchError);
      return error as StateBindingMismatchError;
    },
  );
}

describe("bindStateDir", () => {
  it("binds a directory to its first user, creating it, and lets that user in again", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
    await expect(bindStateDir(dir, owner)).resolves.toBeUndefined();
  });

  it("writes the binding as one line of JSON ending in a newline, as a text file read by hand", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    expect(readFileSync(join(dir, "binding.json"), "utf8")).toBe(`${JSON.stringify(owner)}\n`);
  });

  it("checks, with checkOnly, the tenant alone against the recorded binding, writing nothing (conform-pii knows no provider)", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "snapshots");
    const before = readFileSync(join(dir, "binding.json"), "utf8");
    await expect(bindStateDir(dir, { tenant: "acme" }, { checkOnly: true })).resolves.toBeUndefined();
    expect((await mismatch(bindStateDir(dir, { tenant: "globex" }, { checkOnly: true }))).fields).toEqual(["tenant"]);
    expect(readFileSync(join(dir, "binding.json"), "utf8")).toBe(before);
    rmSync(join(dir, "binding.json"));
    await expect(bindStateDir(dir, { tenant: "acme" }, { checkOnly: true })).rejects.toBeInstanceOf(StateBindingMissingError);
    expect(existsSync(join(dir, "binding.json"))).toBe(false);
  });

  it("refuses the state of another provider, client or tenant, naming every field that differs and no value", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "tokens");
    expect((await mismatch(bindStateDir(dir, { ...owner, baseUrl: "https://evil.test" }))).fields).toEqual(["baseUrl"]);
    expect((await mismatch(bindStateDir(dir, { ...owner, clientId: "client-2", tenant: "globex" }))).fields).toEqual(["clientId", "tenant"]);
    const error = await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }));
    expect(error.message).not.toMatch(/globex|acme/);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("names the fields that differ and the binding file in its message, and holds both bindings", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "tokens");
    const given = { ...owner, clientId: "client-2", tenant: "globex" };
    const error = await mismatch(bindStateDir(dir, given));
    expect(error.message).toBe(`state directory belongs to another clientId, tenant (recorded in ${join(dir, "binding.json")})`);
    expect(error).toMatchObject({ name: "StateBindingMismatchError", file: join(dir, "binding.json"), recorded: owner, given });
  });

  it("creates the directory and its binding file readable by their owner only", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "binding.json")).mode & 0o777).toBe(0o600);
  });

  it("records the tenant the first run learns in a directory that authorize bound and filled with tokens", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId });
    holdState(dir, "tokens");
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("records the tenant once it is known (authorize binds without one) and holds it from then on", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId });
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
    await expect(bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId })).resolves.toBeUndefined();
    holdState(dir, "snapshots");
    expect((await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }))).fields).toEqual(["tenant"]);
  });

  it("writes the binding file no more once nothing new is learnt: a bind of the recorded owner leaves it as it was", async () => {
    // Every cycle binds: a rewrite each time would cost an atomic write and two fsyncs per cycle, for nothing.
    const dir = freshDir();
    await bindStateDir(dir, owner);
    const before = statSync(join(dir, "binding.json"), { bigint: true });
    await bindStateDir(dir, owner);
    expect(statSync(join(dir, "binding.json"), { bigint: true }).ino).toBe(before.ino);
  });

  it("writes the binding file no more when neither it nor the bind names a tenant (authorize run again)", async () => {
    const dir = freshDir();
    const unlearnt = { baseUrl: owner.baseUrl, clientId: owner.clientId };
    await bindStateDir(dir, unlearnt);
    const before = statSync(join(dir, "binding.json"), { bigint: true });
    await bindStateDir(dir, unlearnt);
    expect(statSync(join(dir, "binding.json"), { bigint: true }).ino).toBe(before.ino);
  });

  it("follows the settings while the directory holds no tokens and no snapshots (a first run with a typo)", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { ...owner, clientId: "clinet-1" });
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("keeps the recorded tenant when a client that names none (authorize) takes a directory without state", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { ...owner, clientId: "clinet-1" });
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId });
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("follows the settings while the snapshots directory is there but empty", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { ...owner, clientId: "clinet-1" });
    mkdirSync(join(dir, "snapshots"));
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("leaves another owner's binding of a directory without state as it is with keepOther, and still refuses one with state", async () => {
    // A bridge opening outside the cycle lease: the first owner's first cycle may be about to store its first token.
    const dir = freshDir();
    await bindStateDir(dir, owner);
    const other = { ...owner, clientId: "client-2", tenant: "globex" };
    await expect(bindStateDir(dir, other, { keepOther: true })).resolves.toBeUndefined();
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
    holdState(dir, "tokens");
    expect((await mismatch(bindStateDir(dir, other, { keepOther: true }))).fields).toEqual(["clientId", "tenant"]);
  });

  it("records neither a tenant nor a salt fingerprint of the recorded owner with keepOther: the bind under the lease does", async () => {
    const dir = freshDir();
    const unlearnt = { baseUrl: owner.baseUrl, clientId: owner.clientId };
    await bindStateDir(dir, unlearnt);
    await bindStateDir(dir, { ...owner, piiSaltFingerprint: "0123456789abcdef" }, { keepOther: true });
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(unlearnt);
  });

  it("writes nothing when only asked to check (authorize before its sign-in), but still refuses another owner", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { checkOnly: true });
    expect(existsSync(dir)).toBe(false);
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId });
    await bindStateDir(dir, owner, { checkOnly: true });
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual({ baseUrl: owner.baseUrl, clientId: owner.clientId });
    holdState(dir, "tokens");
    await mismatch(bindStateDir(dir, { ...owner, baseUrl: "https://evil.test" }, { checkOnly: true }));
  });

  it.each([
    ["another owner's binding of a directory without state", owner, { ...owner, clientId: "client-2", tenant: "globex" }, {}],
    ["a salt fingerprint other than the recorded one, no snapshots held", { ...owner, piiSaltFingerprint: "0123456789abcdef" }, { ...owner, piiSaltFingerprint: "fedcba9876543210" }, {}],
    ["the recorded owner, no salt on either side", owner, owner, {}],
    ["a binding without a snapshot store id, checked by a caller that diffs against snapshots", owner, owner, { snapshots: true }],
  ])("rewrites nothing with checkOnly for %s", async (_what, recorded, given, options) => {
    const dir = freshDir();
    await bindStateDir(dir, recorded);
    const file = join(dir, "binding.json");
    const before = statSync(file, { bigint: true });

    await bindStateDir(dir, given, { ...options, checkOnly: true });

    expect(statSync(file, { bigint: true }).ino).toBe(before.ino);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(recorded);
    expect(existsSync(join(dir, "snapshots"))).toBe(false);
  });

  it("does not let a new client id bring another tenant along, even when asked to rebind the client", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "tokens");
    const error = await mismatch(bindStateDir(dir, { ...owner, clientId: "client-2", tenant: "globex" }, { rebindClient: true }));
    expect(error.fields).toEqual(["clientId", "tenant"]);
  });

  it("does not let rebindClient move a directory with state to another tenant of the same client", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "tokens");
    const error = await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }, { rebindClient: true }));
    expect(error.fields).toEqual(["tenant"]);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("lets a new client id take over a directory with state only when asked (authorize), never a new provider", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    holdState(dir, "tokens");
    await mismatch(bindStateDir(dir, { ...owner, clientId: "client-2" }));
    // Authorize's check before its sign-in writes nothing: a sign-in that then fails leaves the tokens their client's.
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: "client-2" }, { rebindClient: true, checkOnly: true });
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: "client-2" }, { rebindClient: true });
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual({ ...owner, clientId: "client-2" });
    const error = await mismatch(bindStateDir(dir, { baseUrl: "https://evil.test", clientId: "client-3" }, { rebindClient: true }));
    expect(error.fields).toEqual(["baseUrl", "clientId"]);
  });

  it("refuses a directory holding tokens or snapshots but no binding file to anyone, and lets it in once restored", async () => {
    for (const what of ["tokens", "snapshots"] as const) {
      const dir = freshDir();
      await bindStateDir(dir, owner);
      holdState(dir, what);
      rmSync(join(dir, "binding.json"));
      await expect(bindStateDir(dir, { ...owner, tenant: "globex" })).rejects.toBeInstanceOf(StateBindingMissingError);
      await expect(bindStateDir(dir, owner)).rejects.toMatchObject({
        name: "StateBindingMissingError",
        message: "state directory holds tokens or snapshots but no binding file",
        file: join(dir, "binding.json"),
      });
      await expect(bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: "client-2" }, { rebindClient: true })).rejects.toBeInstanceOf(StateBindingMissingError);
      writeFileSync(join(dir, "binding.json"), JSON.stringify(owner));
      await expect(bindStateDir(dir, owner)).resolves.toBeUndefined();
    }
  });

  it.each([
    ["no client id", JSON.stringify({ baseUrl: owner.baseUrl })],
    ["no provider", JSON.stringify({ clientId: owner.clientId })],
    ["a tenant that is not a string", JSON.stringify({ ...owner, tenant: 7 })],
    ["a salt fingerprint that is not a string", JSON.stringify({ ...owner, piiSaltFingerprint: 7 })],
    ["a snapshot store id that is not a string", JSON.stringify({ ...owner, snapshotStoreId: 7 })],
    ["text that is not JSON", "{ not json"],
  ])("reports a binding file with %s as corrupt state instead of rebinding the directory", async (_what, text) => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    writeFileSync(join(dir, "binding.json"), text);
    const error = await bindStateDir(dir, owner).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptStateError);
    expect(error).toMatchObject({
      message: "state directory binding is not valid JSON of a binding",
      file: join(dir, "binding.json"),
    });
    // What is wrong with the file is told by its cause.
    expect((error as Error).cause).toBeInstanceOf(Error);
  });

  it("fails, naming the file, when the binding file is there but cannot be read, rather than binding the directory afresh", async () => {
    const dir = freshDir();
    mkdirSync(join(dir, "binding.json"), { recursive: true });
    await expect(bindStateDir(dir, owner)).rejects.toMatchObject({
      name: "LocalStateError",
      message: "state directory binding cannot be read",
      file: join(dir, "binding.json"),
      cause: expect.objectContaining({ code: "EISDIR" }),
    });
  });

  describe("the salt fingerprint of hash mode", () => {
    const salted = { ...owner, piiSaltFingerprint: "0123456789abcdef" };
    const binding = (dir: string) => readFileSync(join(dir, "binding.json"), "utf8");

    it("records it on first use, and refuses another once the directory holds snapshots, writing nothing", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      expect(JSON.parse(binding(dir))).toEqual(salted);
      holdState(dir, "snapshots");
      const before = binding(dir);
      await expect(bindStateDir(dir, salted)).resolves.toBeUndefined();
      const error = await bindStateDir(dir, { ...salted, piiSaltFingerprint: "fedcba9876543210" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PiiSaltMismatchError);
      expect(error).toMatchObject({
        name: "PiiSaltMismatchError",
        file: join(dir, "binding.json"),
        message: "state directory's pseudonyms were made with another PII salt (its fingerprint is recorded in the binding file)",
      });
      expect((error as Error).message).not.toMatch(/0123456789abcdef|fedcba9876543210/);
      // conform-pii's check refuses it as well.
      await expect(bindStateDir(dir, { tenant: "acme", piiSaltFingerprint: "fedcba9876543210" }, { checkOnly: true })).rejects.toBeInstanceOf(PiiSaltMismatchError);
      expect(binding(dir)).toBe(before);
    });

    it("lets newPiiSalt replace it (a switch of salts on purpose), the owner still checked", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      holdState(dir, "snapshots");
      const next = { ...salted, piiSaltFingerprint: "fedcba9876543210" };
      await mismatch(bindStateDir(dir, { ...next, tenant: "globex" }, { newPiiSalt: true }));
      await bindStateDir(dir, next, { newPiiSalt: true });
      expect(JSON.parse(binding(dir))).toEqual(next);
      await expect(bindStateDir(dir, salted)).rejects.toBeInstanceOf(PiiSaltMismatchError);
    });

    it("refuses, at the start of a switch (refuseRecordedPiiSalt), the fingerprint recorded already, snapshots or not, writing nothing", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      const before = binding(dir);
      const start = { newPiiSalt: true, refuseRecordedPiiSalt: true } as const;
      for (const state of ["tokens", "snapshots"] as const) {
        holdState(dir, state);
        for (const keepOther of [false, true]) {
          const error = await bindStateDir(dir, salted, { ...start, keepOther }).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(PiiSaltAlreadyRecordedError);
          expect(error).toMatchObject({
            name: "PiiSaltAlreadyRecordedError",
            file: join(dir, "binding.json"),
            message: "a new PII salt was asked for, but the state directory records the given salt already (its fingerprint is in the binding file)",
          });
          expect((error as Error).message).not.toContain("0123456789abcdef");
        }
      }
      expect(binding(dir)).toBe(before);
      // The binds of the cycles after the switch (newPiiSalt alone) take the fingerprint they recorded.
      await expect(bindStateDir(dir, salted, { newPiiSalt: true })).resolves.toBeUndefined();
    });

    it("takes, at the start of a switch, another fingerprint, and one where none is recorded (first use, an upgrade)", async () => {
      const start = { newPiiSalt: true, refuseRecordedPiiSalt: true } as const;
      const next = { ...salted, piiSaltFingerprint: "fedcba9876543210" };
      const switched = freshDir();
      await bindStateDir(switched, salted);
      holdState(switched, "snapshots");
      await bindStateDir(switched, next, start);
      expect(JSON.parse(binding(switched))).toEqual(next);
      const fresh = freshDir();
      await bindStateDir(fresh, salted, start);
      expect(JSON.parse(binding(fresh))).toEqual(salted);
      const upgraded = freshDir();
      await bindStateDir(upgraded, owner);
      holdState(upgraded, "snapshots");
      await bindStateDir(upgraded, salted, start);
      expect(JSON.parse(binding(upgraded))).toEqual(salted);
      // Neither side naming a fingerprint is no recorded salt to refuse.
      const unsalted = freshDir();
      await bindStateDir(unsalted, owner);
      holdState(unsalted, "snapshots");
      await expect(bindStateDir(unsalted, owner, start)).resolves.toBeUndefined();
      // Another owner's fingerprint in a directory without state is no switch of this owner's: it is dropped.
      const taken = freshDir();
      await bindStateDir(taken, { ...salted, tenant: "globex" });
      await bindStateDir(taken, salted, start);
      expect(JSON.parse(binding(taken))).toEqual(salted);
    });

    it("follows the settings while the directory holds no snapshots (tokens alone hold no pseudonym)", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      holdState(dir, "tokens");
      const next = { ...salted, piiSaltFingerprint: "fedcba9876543210" };
      await bindStateDir(dir, next);
      expect(JSON.parse(binding(dir))).toEqual(next);
    });

    it("is learnt by a directory bound before fingerprints (an upgrade), by a run or by conform-pii's check, nothing else changed", async () => {
      for (const learn of [(dir: string) => bindStateDir(dir, salted), (dir: string) => bindStateDir(dir, { tenant: "acme", piiSaltFingerprint: "0123456789abcdef" }, { checkOnly: true })]) {
        const dir = freshDir();
        await bindStateDir(dir, owner);
        holdState(dir, "snapshots");
        await learn(dir);
        expect(JSON.parse(binding(dir))).toEqual(salted);
        await expect(bindStateDir(dir, { ...salted, piiSaltFingerprint: "fedcba9876543210" })).rejects.toBeInstanceOf(PiiSaltMismatchError);
      }
    });

    it("is learnt by conform-pii's check with the owner left as recorded: a tenant it names is not recorded by it", async () => {
      const dir = freshDir();
      const unlearnt = { baseUrl: owner.baseUrl, clientId: owner.clientId };
      await bindStateDir(dir, unlearnt);
      await bindStateDir(dir, { tenant: "acme", piiSaltFingerprint: "0123456789abcdef" }, { checkOnly: true });
      expect(JSON.parse(binding(dir))).toEqual({ ...unlearnt, piiSaltFingerprint: "0123456789abcdef" });
    });

    it("stays recorded through binds without one (another PII mode, authorize's new client), for a return to hash", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      holdState(dir, "tokens");
      holdState(dir, "snapshots");
      await bindStateDir(dir, owner);
      await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: "client-2", tenant: undefined }, { rebindClient: true });
      expect(JSON.parse(binding(dir))).toEqual({ ...salted, clientId: "client-2" });
    });

    it("is dropped when another owner takes a directory without state: no pseudonym of that salt is left in it", async () => {
      const dir = freshDir();
      await bindStateDir(dir, salted);
      const other = { ...owner, tenant: "globex" };
      await bindStateDir(dir, other);
      expect(JSON.parse(binding(dir))).toEqual(other);
    });
  });
});

describe("bindStateDir with snapshots (the binds of run, redrive and conform-pii)", () => {
  const readBinding = (dir: string) => JSON.parse(readFileSync(join(dir, "binding.json"), "utf8")) as Record<string, string>;
  const storeId = (dir: string) => readFileSync(join(dir, "snapshots", "store-id"), "utf8").trim();

  it("records the snapshot store's id on first use, made before any snapshot, and refuses the directory once it is gone or replaced", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    expect(readBinding(dir)).toEqual({ ...owner, snapshotStoreId: storeId(dir) });
    holdState(dir, "snapshots");
    await bindStateDir(dir, owner, { snapshots: true });

    writeFileSync(join(dir, "snapshots", "store-id"), "0123456789abcdef\n");
    await expect(bindStateDir(dir, owner, { snapshots: true, keepOther: true })).rejects.toMatchObject({ name: "SnapshotStoreMissingError", found: "0123456789abcdef" });
    rmSync(join(dir, "snapshots"), { recursive: true });
    const error = await bindStateDir(dir, owner, { snapshots: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SnapshotStoreMissingError);
    expect((error as SnapshotStoreMissingError).found).toBeUndefined();
    // Read-only checks refuse too (conform-pii), and nothing was made meanwhile.
    await expect(bindStateDir(dir, { tenant: "acme" }, { checkOnly: true, snapshots: true })).rejects.toBeInstanceOf(SnapshotStoreMissingError);
    expect(existsSync(join(dir, "snapshots"))).toBe(false);
    // Authorize does not diff against snapshots: it is not refused.
    await bindStateDir(dir, owner, { checkOnly: true, rebindClient: true });
  });

  it("names the lost store's id and what is missing, or the store found in its place, in its refusal", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    const recorded = storeId(dir);
    writeFileSync(join(dir, "snapshots", "store-id"), "0123456789abcdef\n");
    await expect(bindStateDir(dir, owner, { snapshots: true })).rejects.toMatchObject({
      message: `the snapshot store the binding records (${recorded}) was replaced by another (0123456789abcdef)`,
      file: join(dir, "binding.json"),
      // The CLI's way to start over on purpose writes this binding back without the store's id.
      recorded: { ...owner, snapshotStoreId: recorded },
    });
    rmSync(join(dir, "snapshots"), { recursive: true });
    await expect(bindStateDir(dir, owner, { snapshots: true })).rejects.toMatchObject({
      message: `the snapshot store the binding records (${recorded}) is missing: no snapshots/store-id`,
      file: join(dir, "binding.json"),
      recorded: { ...owner, snapshotStoreId: recorded },
    });
  });

  it("refuses another tenant's directory as such before its snapshot store: starting over there would take its owner's binding", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    holdState(dir, "tokens");
    rmSync(join(dir, "snapshots"), { recursive: true });

    const error = await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }, { snapshots: true }));

    expect(error.fields).toEqual(["tenant"]);
  });

  it("records no store id with keepOther (a bridge opening outside the cycle lease): it writes nothing, nor makes a store", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    const before = readFileSync(join(dir, "binding.json"), "utf8");

    await bindStateDir(dir, owner, { snapshots: true, keepOther: true });

    expect(readFileSync(join(dir, "binding.json"), "utf8")).toBe(before);
    expect(existsSync(join(dir, "snapshots"))).toBe(false);
  });

  it("counts the store's id file alone as no snapshots: another client takes a directory whose first run failed before storing any", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    const other = { ...owner, clientId: "client-2" };

    await bindStateDir(dir, other, { snapshots: true });

    expect(readBinding(dir)).toEqual({ ...other, snapshotStoreId: storeId(dir) });
  });

  it("counts a write's leftover temp file in snapshots/ as no snapshot either: the store sweeps it, it never held one", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    // What a crash between a segment's temp write and its rename leaves (the store removes it on its next load).
    writeFileSync(join(dir, "snapshots", `seg-000000000001-0123abcd.log.${process.pid}.0a1b2c3d${TEMP_SUFFIX}`), "partial");
    const other = { ...owner, clientId: "client-2" };

    await bindStateDir(dir, other, { snapshots: true });

    expect(readBinding(dir)).toEqual({ ...other, snapshotStoreId: storeId(dir) });
  });

  it("writes the binding file no more once the store's id is recorded: a cycle's bind of the recorded owner leaves it as it was", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    const before = statSync(join(dir, "binding.json"), { bigint: true });

    await bindStateDir(dir, owner, { snapshots: true });

    expect(statSync(join(dir, "binding.json"), { bigint: true }).ino).toBe(before.ino);
  });

  it("drops the recorded store's id when another owner takes a directory without state, even by a bind that does not diff (authorize)", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    const other = { ...owner, clientId: "client-2" };

    await bindStateDir(dir, other);

    expect(readBinding(dir)).toEqual(other);
  });

  it("keeps the recorded store's id when a new client takes over a directory with state (authorize): snapshots lost after it are still refused", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner, { snapshots: true });
    holdState(dir, "snapshots");
    const recorded = storeId(dir);

    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: "client-2" }, { rebindClient: true });

    expect(readBinding(dir)).toEqual({ ...owner, clientId: "client-2", snapshotStoreId: recorded });
    rmSync(join(dir, "snapshots"), { recursive: true });
    await expect(bindStateDir(dir, { ...owner, clientId: "client-2" }, { snapshots: true })).rejects.toBeInstanceOf(SnapshotStoreMissingError);
  });

  it("records the id of a store already there in a binding written before store ids (an upgrade), instead of refusing it", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    mkdirSync(join(dir, "snapshots"));
    writeFileSync(join(dir, "snapshots", "store-id"), "0123456789abcdef\n");
    holdState(dir, "snapshots");

    await bindStateDir(dir, owner, { snapshots: true });

    expect(readBinding(dir)).toEqual({ ...owner, snapshotStoreId: "0123456789abcdef" });
  });
});
