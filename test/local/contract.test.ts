/** The file-backed adapters pass the port contract suite. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  describeEventPublisherContract,
  describeLockContract,
  describeQuarantineContract,
  describeSnapshotStoreContract,
  describeTokenStoreContract,
} from "../bridge/contract/index.js";
import { FileLock, FileQuarantine, FileSnapshotStore, FileTokenStore, JsonlEventPublisher } from "../../shared/local/index.js";
import type { EventBridgeEnvelope } from "../../shared/local/index.js";
import { LocalTokenStore } from "../../shared/cli/local-tokens.js";

async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "bridge-local-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

describeSnapshotStoreContract("FileSnapshotStore", async () => {
  const own = await tempDir();
  const other = await tempDir();
  return {
    store: new FileSnapshotStore(own.dir),
    reopen: async () => new FileSnapshotStore(own.dir),
    foreign: async () => new FileSnapshotStore(other.dir),
    cleanup: async () => {
      await own.cleanup();
      await other.cleanup();
    },
  };
});

describeQuarantineContract("FileQuarantine", async () => {
  const { dir, cleanup } = await tempDir();
  return { quarantine: new FileQuarantine(dir), reopen: async () => new FileQuarantine(dir), cleanup };
});

describeLockContract("FileLock", async (clock) => {
  const { dir, cleanup } = await tempDir();
  return { lock: new FileLock(dir, { clock }), peer: new FileLock(dir, { clock }), cleanup };
});

describeTokenStoreContract("FileTokenStore", async () => {
  const { dir, cleanup } = await tempDir();
  return { store: new FileTokenStore(dir), reopen: async () => new FileTokenStore(dir), cleanup };
});

// The token store local mode runs with: the file's, seeded from QASHIO_REFRESH_TOKEN while the file holds none.
describeTokenStoreContract("LocalTokenStore", async () => {
  const { dir, cleanup } = await tempDir();
  return { store: new LocalTokenStore(new FileTokenStore(dir)), reopen: async () => new LocalTokenStore(new FileTokenStore(dir)), cleanup };
});

describeTokenStoreContract("LocalTokenStore with a seed", async () => {
  const { dir, cleanup } = await tempDir();
  const seeded = () => new LocalTokenStore(new FileTokenStore(dir), "rt-seed");
  return { store: seeded(), reopen: async () => seeded(), startsEmpty: false, cleanup };
});

describeEventPublisherContract("JsonlEventPublisher", async () => {
  const { dir, cleanup } = await tempDir();
  const file = path.join(dir, "out", "events.jsonl");
  return {
    publisher: new JsonlEventPublisher({ file }),
    delivered: async () => {
      const text = await readFile(file, "utf8").catch(() => "");
      return text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as EventBridgeEnvelope)
        .map((e) => ({ source: e.source, detailType: e["detail-type"], detail: e.detail }));
    },
    cleanup,
  };
});
