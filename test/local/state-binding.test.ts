import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bindStateDir, CorruptStateError, StateBindingMismatchError } from "../../shared/local/index.js";

const owner = { baseUrl: "https://api.provider.test", clientId: "client-1", tenant: "acme" };

function freshDir(): string {
  return join(mkdtempSync(join(tmpdir(), "binding-")), "state");
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

  it("refuses another provider, client or tenant, naming every field that differs and no value", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    expect((await mismatch(bindStateDir(dir, { ...owner, baseUrl: "https://evil.test" }))).fields).toEqual(["baseUrl"]);
    expect((await mismatch(bindStateDir(dir, { ...owner, clientId: "client-2", tenant: "globex" }))).fields).toEqual(["clientId", "tenant"]);
    const error = await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }));
    expect(error.message).not.toMatch(/globex|acme/);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
  });

  it("records the tenant once it is known (authorize binds without one) and holds it from then on", async () => {
    const dir = freshDir();
    await bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId });
    await bindStateDir(dir, owner);
    expect(JSON.parse(readFileSync(join(dir, "binding.json"), "utf8"))).toEqual(owner);
    await expect(bindStateDir(dir, { baseUrl: owner.baseUrl, clientId: owner.clientId })).resolves.toBeUndefined();
    expect((await mismatch(bindStateDir(dir, { ...owner, tenant: "globex" }))).fields).toEqual(["tenant"]);
  });

  it("reports an unreadable binding as corrupt state instead of rebinding the directory", async () => {
    const dir = freshDir();
    await bindStateDir(dir, owner);
    writeFileSync(join(dir, "binding.json"), "{ not json");
    await expect(bindStateDir(dir, owner)).rejects.toBeInstanceOf(CorruptStateError);
  });
});
