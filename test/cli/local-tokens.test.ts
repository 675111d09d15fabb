/**
 * What LocalTokenStore tells a person about the token file: a seed it no longer reads, a corrupt file, a file removed
 * while tokens were held (and whether a copy of it is still good).
 */
import { writeFile } from "node:fs/promises";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TokenFileError } from "../../shared/cli/errors.js";
import { LocalTokenStore } from "../../shared/cli/local-tokens.js";
import { spendingRefreshes } from "../../shared/cli/token-spending.js";
import { CorruptStateError, FileTokenStore } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("local-tokens-words-", (made) => (dir = made));

/** A store that loaded the file's tokens, and the file removed afterwards (as a person may, under a running loop). */
async function storeOfRemovedFile(): Promise<{ files: FileTokenStore; store: LocalTokenStore }> {
  const files = new FileTokenStore(dir);
  await files.save({ accessToken: "at-1", refreshToken: "rt-1" });
  const store = new LocalTokenStore(files);
  await store.load();
  rmSync(files.file);
  return { files, store };
}

describe("LocalTokenStore's words to the person", () => {
  it("names the ignored QASHIO_REFRESH_TOKEN only when one is set, in a corrupt file's error too, never its value", async () => {
    const files = new FileTokenStore(dir);
    expect(new LocalTokenStore(files).seedIgnoredHint).toBe("");
    const seeded = new LocalTokenStore(files, "rt-seed-secret");
    expect(seeded.seedIgnoredHint).toBe(`; QASHIO_REFRESH_TOKEN is not read while ${files.file} exists: to start from it instead, move that file aside`);

    await writeFile(files.file, "{ not json");
    const error = await seeded.load().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenFileError);
    expect((error as Error).message.endsWith(seeded.seedIgnoredHint)).toBe(true);
    expect((error as Error).message).not.toContain("rt-seed-secret");
  });

  it("says a removed token file's copy is still good, unless this process holds unsaved tokens for that file", async () => {
    const { files, store } = await storeOfRemovedFile();
    const removed = () => store.load().then(() => new Error("expected a failure"), (e: unknown) => e as Error);
    expect((await removed()).message).toContain("put it back if you have a copy, the tokens it held are still good");

    const untrack = spendingRefreshes.track({ holdsUnsavedTokens: true, heldTokensFailure: undefined, saveHeldTokens: async () => false }, files.file);
    try {
      const message = (await removed()).message;
      expect(message).toContain("the refresh token it held is spent, replaced by new tokens this process could not save");
      expect(message).not.toContain("still good");
      expect(message).not.toMatch(/rt-1|at-1/);
    } finally {
      untrack();
    }
  });

  it("lets the seed stand in only while nothing was loaded from or saved to the file", async () => {
    const files = new FileTokenStore(dir);
    const store = new LocalTokenStore(files, "rt-seed");
    expect(await store.usesSeed()).toBe(true);
    await files.save({ accessToken: "at-1", refreshToken: "rt-1" });
    expect(await store.usesSeed()).toBe(false);
    await store.load();
    rmSync(files.file);
    // The file is gone again, but the store held its tokens: the spent seed does not stand in.
    expect(await store.usesSeed()).toBe(false);
  });

  it("stops the seed standing in once the store saved tokens itself, so a file removed afterwards is an error, not the spent seed", async () => {
    const files = new FileTokenStore(dir);
    const store = new LocalTokenStore(files, "rt-seed");
    await store.save({ accessToken: "at-1", refreshToken: "rt-1" });
    rmSync(files.file);
    expect(await store.usesSeed()).toBe(false);
    await expect(store.load()).rejects.toBeInstanceOf(TokenFileError);
  });

  it("loads the seed as the refresh token while the file holds none, and nothing when no seed is set either", async () => {
    const files = new FileTokenStore(dir);
    expect(await new LocalTokenStore(files, "rt-seed").load()).toEqual({ refreshToken: "rt-seed" });
    const unseeded = new LocalTokenStore(files);
    expect(await unseeded.load()).toBeUndefined();
    expect(await unseeded.usesSeed()).toBe(false);
  });

  it("keeps the adapter's error of a corrupt file as the cause", async () => {
    const files = new FileTokenStore(dir);
    await writeFile(files.file, "{ not json");
    await expect(new LocalTokenStore(files).load()).rejects.toHaveProperty("cause", expect.any(CorruptStateError));
    // Asked whether the seed stands in, it says the same, not the adapter's bare error.
    await expect(new LocalTokenStore(files, "rt-seed").usesSeed()).rejects.toBeInstanceOf(TokenFileError);
  });

  it("says a removed file's copy is still good when only another token file's tokens are held unsaved", async () => {
    const { store } = await storeOfRemovedFile();
    const untrack = spendingRefreshes.track({ holdsUnsavedTokens: true, heldTokensFailure: undefined, saveHeldTokens: async () => false }, join(dir, "other", "tokens.json"));
    try {
      await expect(store.load()).rejects.toThrow("put it back if you have a copy, the tokens it held are still good");
    } finally {
      untrack();
    }
  });

  it("words the way to sign in again as its caller gave it (the demo's), for a corrupt file and a removed one", async () => {
    const files = new FileTokenStore(dir);
    const store = new LocalTokenStore(files, undefined, { words: "start a new demo", sameState: false });
    await writeFile(files.file, "{ not json");
    await expect(store.load()).rejects.toThrow(/\): start a new demo$/);
    await files.save({ accessToken: "at-1", refreshToken: "rt-1" });
    await store.load();
    rmSync(files.file);
    await expect(store.load()).rejects.toThrow(/\): start a new demo$/);
  });
});
