/**
 * Child process of `bridge bench --baseline`: drains a backlog like the bench's with the least work the protocol asks
 * of any client that keeps the bridge's promises, and reports the CPU of that drain. It is the machine's CPU floor per
 * transaction, which the bridge's own figure is read against: the budget is absolute, and machines (or one VM from
 * hour to hour) differ by a third or more.
 *
 * Per page: one list call, `JSON.parse` (of the page's pieces, as the bridge's client parses it), and per item: a copy without `client_sync_status`, one `JSON.stringify`, its
 * sha-256 (the content hash) and a second sha-256 (the event id), an EventBridge-shaped line and a snapshot line both
 * holding that text; then the two files appended and fsynced, and one acknowledge call. No validation, no PII masking,
 * no snapshot reads or index, no read-ahead, no retries: what no client can skip, not what a careful one does.
 *
 * Talks to the parent over IPC: receives a {@link BaselineRequest}, answers a {@link BaselineResult}, then exits.
 */
import { hash } from "node:crypto";
import { closeSync, fsyncSync, openSync } from "node:fs";
import { join } from "node:path";
import { exchangeCode } from "../qashio/auth/oauth.js";
import { PATHS } from "../qashio/client.js";
import { nodeHttpFetch } from "../qashio/node-transport.js";
import { parseJsonChunks } from "../qashio/json-body.js";
import { ScratchBuffer, writeAll } from "../local/atomic.js";
import { CliError, EXIT } from "./errors.js";
import { threadCpuMeter, type ThreadCpuSplit } from "./thread-cpu.js";

/** Message from the bench to this child. */
export interface BaselineRequest {
  readonly url: string;
  readonly code: string;
  readonly redirectUri: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly pageSize: number;
  /** The backlog: more list calls than its pages and the empty one mean the list does not empty, and the run fails. */
  readonly transactions: number;
  /** Directory the two files are written in (the bench removes it). */
  readonly dir: string;
}

/** Message from this child once its drain is done, or failed. */
export type BaselineResult =
  /** `threads`: the drain's CPU split by thread, where /proc tells it (./thread-cpu.ts). */
  | { readonly ok: true; readonly transactions: number; readonly cpuUs: number; readonly threads?: ThreadCpuSplit }
  | { readonly ok: false; readonly error: string };

/** Bytes a line adds around its object's text (envelope or snapshot members), with room to spare. */
const LINE_OVERHEAD_BYTES = 1024;

interface ListBody {
  readonly data: readonly Record<string, unknown>[];
}

/**
 * Aborted when the bench goes (the IPC channel closes): forked in a process group of its own (bench.ts), this process
 * goes with the bench, not on a terminal's Ctrl-C. Its drain then stops at the call in flight and the process ends with
 * nothing left to run (not process.exit(), which on Node 24 can hang for good: test/process-exit.test.ts).
 */
const benchGone = new AbortController();
process.once("disconnect", () => benchGone.abort());

/** Sends one request; returns its body's chunks and size, or fails on a status other than 200. */
async function call(url: string, init: { method?: string; headers: Record<string, string>; body?: string }): Promise<{ chunks: readonly Buffer[]; bytes: number }> {
  const response = await nodeHttpFetch(url, { ...init, signal: benchGone.signal });
  if (response.status !== 200) throw new CliError(`${init.method ?? "GET"} ${new URL(url).pathname} answered ${response.status}`, EXIT.failed);
  const chunks = await response.chunks!();
  return { chunks, bytes: chunks.reduce((sum, chunk) => sum + chunk.length, 0) };
}

/** Drains the provider's `not_synced` list to the end; returns how many transactions it acknowledged. */
async function drain(request: BaselineRequest, accessToken: string): Promise<number> {
  const headers = { authorization: `Bearer ${accessToken}`, accept: "application/json" };
  const list = `${request.url}${PATHS.transactions}?client_sync_status=not_synced&page=1&page_size=${request.pageSize}`;
  const events = openSync(join(request.dir, "events.jsonl"), "a", 0o600);
  const snapshots = openSync(join(request.dir, "snapshots.log"), "a", 0o600);
  const eventScratch = new ScratchBuffer();
  const snapshotScratch = new ScratchBuffer();
  try {
    let acknowledged = 0;
    const maxPages = Math.ceil(request.transactions / request.pageSize) + 1;
    for (let sequence = 0, pages = 0; ; ) {
      if (++pages > maxPages) throw new CliError(`the list still held transactions after ${maxPages} pages (${acknowledged} acknowledged)`, EXIT.failed);
      // Parsed as the bridge's client does (json-body.ts): a page is never one string.
      const body = await call(list, { headers });
      const { data } = parseJsonChunks(body.chunks) as ListBody;
      if (data.length === 0) return acknowledged;
      const now = new Date().toISOString();
      // Lines are encoded into two buffers reused page after page: fresh ones would cost page faults, not protocol work.
      // An object's text is about its part of the body (numbers may grow: 1e5 is 100000; a lone surrogate's 3 bytes
      // become a 6-character escape); 3 bytes per body byte bound its UTF-8, and a cut line fails the run (below).
      const bound = 3 * body.bytes + LINE_OVERHEAD_BYTES * data.length;
      const eventLines = eventScratch.take(bound);
      const snapshotLines = snapshotScratch.take(bound);
      let eventBytes = 0;
      let snapshotBytes = 0;
      const ids: string[] = [];
      for (const raw of data) {
        const object: Record<string, unknown> = { ...raw, client_sync_status: undefined };
        const id = object["id"] as string;
        const text = JSON.stringify(object);
        const contentHash = hash("sha256", text, "hex");
        const eventId = hash("sha256", `baseline\u0000transaction.created\u0000${id}\u0000\u0000${contentHash}`, "hex");
        // Written in pieces around the object's text, so no joined copy of it is made (ids are the sandbox's UUIDs).
        eventBytes += eventLines.write(
          `{"version":"0","id":"${++sequence}","detail-type":"transaction.created","source":"qashio.bridge","account":"local",` +
            `"time":"${now}","region":"local","resources":[],"detail":{"id":"${eventId}","type":"transaction.created",` +
            `"schema_version":"1","tenant":"baseline","occurred_at":"${now}","subject":{"type":"transaction","id":"${id}"},"data":{"object":`,
          eventBytes,
        );
        eventBytes += eventLines.write(text, eventBytes);
        eventBytes += eventLines.write("}}}\n", eventBytes);
        snapshotBytes += snapshotLines.write(`{"key":"transaction:${id}","hash":"${contentHash}","object":`, snapshotBytes);
        snapshotBytes += snapshotLines.write(text, snapshotBytes);
        snapshotBytes += snapshotLines.write(`,"updatedAt":"${now}"}\n`, snapshotBytes);
        ids.push(id);
      }
      // Buffer.write cuts a string short at the buffer's end: a full buffer may hold a cut line.
      if (eventBytes >= eventLines.length || snapshotBytes >= snapshotLines.length) throw new CliError("a page's lines outgrew their buffer", EXIT.failed);
      for (const [fd, bytes] of [[events, eventLines.subarray(0, eventBytes)], [snapshots, snapshotLines.subarray(0, snapshotBytes)]] as const) {
        writeAll(fd, bytes);
        fsyncSync(fd);
      }
      await call(`${request.url}${PATHS.acknowledge}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ transaction_ids: ids }),
      });
      acknowledged += ids.length;
    }
  } finally {
    closeSync(events);
    closeSync(snapshots);
  }
}

process.once("message", (request: BaselineRequest) => {
  void (async (): Promise<BaselineResult> => {
    const tokens = await exchangeCode(
      { baseUrl: request.url, clientId: request.clientId, clientSecret: request.clientSecret },
      { code: request.code, redirectUri: request.redirectUri },
    );
    const threadCpu = threadCpuMeter();
    const cpuBefore = process.cpuUsage();
    const transactions = await drain(request, tokens.access_token);
    const cpu = process.cpuUsage(cpuBefore);
    const cpuUs = cpu.user + cpu.system;
    const threads = threadCpu.split(cpuUs);
    return { ok: true, transactions, cpuUs, ...(threads === undefined ? {} : { threads }) };
  })()
    .catch((error: unknown): BaselineResult => ({ ok: false, error: error instanceof Error ? error.message : String(error) }))
    // Answered, it closes the channel: the bench waits for no more. Unless the bench closed it first, the moment the
    // answer reached it: disconnecting a closed channel raises ERR_IPC_DISCONNECTED, uncaught (exit 1, a stack trace).
    .then((result) => {
      if (process.connected)
        process.send?.(result, () => {
          if (process.connected) process.disconnect();
        });
    });
});
