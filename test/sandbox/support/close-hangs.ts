/**
 * Preloaded (`--import`) into `npm run sandbox` by test/sandbox/main.test.ts: an HTTP server's close never completes
 * (the server goes on listening), so a clean stop never ends the process and only a stop at once can.
 */
import { Server } from "node:http";

Server.prototype.close = function (this: Server) {
  return this;
};
