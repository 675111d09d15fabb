/**
 * Preloaded (`--import`) into a bench child by test/cli/bench-children.test.ts: an HTTP server's close does close it,
 * then reports an error, as a close that fails would.
 */
import { Server } from "node:http";

const close = Server.prototype.close;
Server.prototype.close = function (this: Server, callback?: (error?: Error) => void) {
  return close.call(this, () => callback?.(new Error("injected close failure")));
};
