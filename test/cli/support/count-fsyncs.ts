/**
 * Preloaded (`--import`) into a bench child by test/cli/bench-children.test.ts: counts `fsyncSync` calls and writes
 * `fsync calls: N` to stderr as the process exits (synchronously: it is the last thing the process does).
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";

let calls = 0;
const fsyncSync = fs.fsyncSync;
fs.fsyncSync = (fd: number) => {
  calls += 1;
  fsyncSync(fd);
};
// The child imports fsyncSync by name: its binding follows the patched property only once synced.
syncBuiltinESMExports();
process.once("exit", () => fs.writeSync(2, `fsync calls: ${calls}\n`));
