/**
 * EventPublisher that appends one JSON line per event to a file, in the shape an EventBridge rule target
 * receives, so local consumers see exactly what they would see in AWS.
 */
import { randomUUID } from "node:crypto";
import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readSync } from "node:fs";
import path from "node:path";
import type { BridgeEvent, BridgeEventDetail, EventPublisher, PublishFailure } from "../bridge/ports.js";
import { jsonOf, jsonString as quote } from "../bridge/hash.js";
import { ScratchBuffer, writeAll } from "./atomic.js";

/** An event as an EventBridge rule target receives it. */
export interface EventBridgeEnvelope {
  readonly version: "0";
  readonly id: string;
  readonly "detail-type": string;
  readonly source: string;
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: BridgeEventDetail;
}

/** Options of {@link JsonlEventPublisher}. */
export interface JsonlEventPublisherOptions {
  /** Target file; created (with its directory) when missing, readable by its owner only (0600, directories 0700). */
  readonly file: string;
  /** `account` of the envelope. @default "000000000000" */
  readonly account?: string;
  /** `region` of the envelope. @default "local" */
  readonly region?: string;
  /** Envelope id per delivery, like EventBridge's own (deduplicate on `detail.id`). @default crypto.randomUUID */
  readonly newId?: () => string;
}

/**
 * Wraps a bridge event in the EventBridge target envelope.
 *
 * @example
 * ```ts
 * JSON.stringify(toEventBridgeEnvelope(event, { account: "123456789012", region: "eu-west-1", id: randomUUID() }));
 * ```
 */
export function toEventBridgeEnvelope(event: BridgeEvent, context: { account: string; region: string; id: string }): EventBridgeEnvelope {
  return {
    version: "0",
    id: context.id,
    "detail-type": event.detailType,
    source: event.source,
    account: context.account,
    time: event.time,
    region: context.region,
    resources: [],
    detail: event.detail,
  };
}

/**
 * Serialises an envelope as one JSON line, reusing the object text the engine computed for hashing.
 * Same members and order as `JSON.stringify(envelope)`; only `detail.data` members are ordered object-first.
 */
export function envelopeLine(envelope: EventBridgeEnvelope): string {
  const [before, object, after] = envelopeParts(envelope);
  return before + object + after;
}

/**
 * {@link envelopeLine} as the text before the object, the object's text, and the text after it. Written member by
 * member from the envelope's fixed shape: once per event, so no object copies to split off `detail` and `data`.
 */
function envelopeParts(envelope: EventBridgeEnvelope): [string, string, string] {
  const { detail } = envelope;
  const { data } = detail;
  const before =
    `{"version":${quote(envelope.version)},"id":${quote(envelope.id)},"detail-type":${quote(envelope["detail-type"])},` +
    `"source":${quote(envelope.source)},"account":${quote(envelope.account)},"time":${quote(envelope.time)},` +
    `"region":${quote(envelope.region)},"resources":${JSON.stringify(envelope.resources)},"detail":{"id":${quote(detail.id)},` +
    `"type":${quote(detail.type)},"schema_version":${quote(detail.schema_version)},"tenant":${quote(detail.tenant)},` +
    `"occurred_at":${quote(detail.occurred_at)},"subject":${JSON.stringify(detail.subject)},"data":{"object":`;
  let after = "";
  if (data.changes !== undefined) after += `,"changes":${JSON.stringify(data.changes)}`;
  if (data.parent !== undefined) after += `,"parent":${JSON.stringify(data.parent)}`;
  return [before, jsonOf(data.object), `${after}}}}`];
}

/**
 * Appends events to a JSON Lines file and fsyncs before resolving. Writes of one process are serialised;
 * a failed write is cut back off the file, and a line torn by a crash is closed off with a newline before the next
 * append, so later lines stay parseable.
 *
 * @example
 * ```ts
 * const publisher = new JsonlEventPublisher({ file: "events.jsonl" });
 * await publisher.publish(events);
 * ```
 */
export class JsonlEventPublisher implements EventPublisher {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly account: string;
  private readonly region: string;
  private readonly newId: () => string;
  private dirReady = false;
  private tailChecked = false;
  private readonly scratch = new ScratchBuffer();

  constructor(private readonly options: JsonlEventPublisherOptions) {
    this.account = options.account ?? "000000000000";
    this.region = options.region ?? "local";
    this.newId = options.newId ?? randomUUID;
  }

  publish(events: readonly BridgeEvent[]): Promise<{ readonly failed: readonly PublishFailure[] }> {
    const run = this.queue.then(() => this.append(events));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async append(events: readonly BridgeEvent[]): Promise<{ readonly failed: readonly PublishFailure[] }> {
    if (events.length === 0) return { failed: [] };
    // Encoded piecewise into one buffer around the engine's object text: no joined line per event, one encode.
    const parts: string[] = [];
    let bound = 1;
    for (const event of events) {
      const [before, object, after] = envelopeParts(toEventBridgeEnvelope(event, { account: this.account, region: this.region, id: this.newId() }));
      parts.push(before, object, after);
      bound += (before.length + object.length + after.length) * 3 + 1;
    }
    // Appends never overlap (see publish), so the scratch buffer is free again once this one resolves.
    const buffer = this.scratch.take(bound);
    // Byte 0 is kept for the newline that closes a line torn by an earlier crash.
    let end = 1;
    for (let i = 0; i < parts.length; i += 3) {
      end += buffer.write(parts[i] as string, end, "utf8");
      end += buffer.write(parts[i + 1] as string, end, "utf8");
      end += buffer.write(parts[i + 2] as string, end, "utf8");
      buffer[end++] = 0x0a;
    }
    let start = 1;
    // Synchronous syscalls, as in writeFileAtomic (see atomic.ts): the caller awaits durability anyway.
    // Owner-only, as all other local state: events carry cardholder data. An existing file or directory keeps the
    // mode it has, so an operator may widen it for a consumer running as another user.
    if (!this.dirReady) {
      mkdirSync(path.dirname(this.options.file), { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    const fd = openSync(this.options.file, "a+", 0o600);
    try {
      // The length before this append: a write that fails part-way is cut back to it (see discardFailedWrite).
      const { size } = fstatSync(fd);
      // Only the first append of this instance, or one after a failed write, can meet a torn line.
      if (!this.tailChecked && size > 0) {
        const last = Buffer.alloc(1);
        readSync(fd, last, 0, 1, size - 1);
        if (last[0] !== 0x0a) {
          buffer[0] = 0x0a;
          start = 0;
        }
      }
      try {
        // Append mode: the write lands at the end.
        writeAll(fd, buffer.subarray(start, end));
        fsyncSync(fd);
      } catch (err) {
        this.discardFailedWrite(fd, size);
        throw err;
      }
      this.tailChecked = true;
    } finally {
      closeSync(fd);
    }
    return { failed: [] };
  }

  /**
   * A throw tells the engine nothing was published, and it re-sends: the half-written line must not stay, or the
   * re-sent event would be glued onto it and never parse. Cut the file back (the file has one writer, as the
   * torn-line check already assumes); should that fail too, the next append checks the tail and starts a new line.
   */
  private discardFailedWrite(fd: number, size: number): void {
    this.tailChecked = false;
    try {
      ftruncateSync(fd, size);
      fsyncSync(fd);
    } catch {
      // The tail check of the next append closes the torn line off instead.
    }
  }
}
