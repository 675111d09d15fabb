/**
 * Child process of `bridge bench`: hosts the sandbox with an N-transaction backlog on a loopback port, so the
 * bench process measures the bridge's CPU and memory only. Talks to the parent over IPC:
 * receives `{ transactions, latencyMs, seed, redirectUri, scope }`, answers `{ url, companyId, code }` when ready,
 * exits when the parent disconnects.
 */
import { closeServer } from "../../sandbox/close-server.js";
import { createSandbox } from "../../sandbox/index.js";

/** Message from the bench to this child. */
export interface BenchSandboxRequest {
  readonly transactions: number;
  readonly latencyMs: number;
  readonly seed: number;
  readonly redirectUri: string;
  readonly scope: string;
}

/** Message from this child once the backlog is built and the server listens. */
export interface BenchSandboxReady {
  readonly url: string;
  readonly companyId: string;
  readonly code: string;
}

process.once("message", (message: BenchSandboxRequest) => {
  void (async () => {
    const sandbox = createSandbox({ seed: message.seed });
    sandbox.control.reset({ transactions: message.transactions });
    const [company] = sandbox.control.companies();
    if (company === undefined) throw new Error("sandbox has no company");
    const server = await sandbox.listen(0);
    // The process ends with the bench: once the channel closes, so does the server, and nothing is left to run (not
    // process.exit(), which on Node 24 can hang for good: test/process-exit.test.ts).
    if (!process.connected) return closeServer(server, "bench sandbox");
    process.once("disconnect", () => closeServer(server, "bench sandbox"));
    // Latency applies from now on: building the backlog is not part of the measurement.
    sandbox.control.setLatency(message.latencyMs);
    const code = sandbox.control.issueAuthorizationCode({ companyId: company.id, redirectUri: message.redirectUri, scope: message.scope });
    const ready: BenchSandboxReady = { url: server.url, companyId: company.id, code };
    process.send?.(ready);
  })().catch((error: unknown) => {
    console.error(`bench sandbox failed: ${(error as Error).message}`);
    process.exitCode = 1;
    // Closes the server too, if listening.
    if (process.connected) process.disconnect();
  });
});
