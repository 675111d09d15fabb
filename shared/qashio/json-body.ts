/**
 * JSON response bodies kept as the chunks they arrived in (`FetchResponse.chunks`, from the node transport).
 *
 * Why not one string: V8 puts a string over 128 KB in its large-object space, on memory mapped fresh for that one
 * string and unmapped at the next collection, so every page of the body costs a page fault. A list page of 100
 * transactions is ~370 KB: decoding it took ~1.8 ms on the development VM, where a fault costs ~12 us, against ~0.3 ms
 * to scan it here and ~0.9 ms to parse it either way (docs/spec-gaps.md, Transport). So a large object body with a `data`
 * array (a list page) is parsed piece by piece: each element of `data`, and the envelope around it, is decoded and
 * parsed on its own, each a small string.
 */

/** Bodies from this size up are parsed piece by piece; below it one string stays in V8's young generation. */
export const PIECEWISE_FROM_BYTES = 64 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
/** The member split: `data`, the items of every list envelope (spec §2.2). */
const DATA_KEY = [0x64, 0x61, 0x74, 0x61];

function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * The body as one string, as fetch's `text()` gives it: UTF-8, invalid sequences replaced, a byte order mark dropped.
 */
export function decodeUtf8(chunks: readonly Buffer[]): string {
  const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
  // fetch's text() drops a byte order mark, which JSON.parse would reject.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Byte offsets into a body held in chunks. */
class ChunkedBytes {
  /** Offset of each chunk's first byte. */
  private readonly starts: number[] = [];
  readonly length: number;

  constructor(readonly chunks: readonly Buffer[]) {
    let offset = 0;
    for (const chunk of chunks) {
      this.starts.push(offset);
      offset += chunk.length;
    }
    this.length = offset;
  }

  /** The chunk holding `offset` (binary search: a 32 MiB body may arrive in hundreds of chunks). */
  private chunkAt(offset: number): number {
    let low = 0;
    let high = this.chunks.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  byteAt(offset: number): number {
    const index = this.chunkAt(offset);
    return this.chunks[index]![offset - this.starts[index]!]!;
  }

  /** Bytes [start, end) decoded as UTF-8 (cut only at ASCII bytes, so never inside a character). */
  text(start: number, end: number): string {
    if (start >= end) return "";
    const first = this.chunkAt(start);
    const chunk = this.chunks[first]!;
    const from = start - this.starts[first]!;
    if (end - this.starts[first]! <= chunk.length) return chunk.toString("utf8", from, end - this.starts[first]!);
    const parts: Buffer[] = [];
    for (let index = first; index < this.chunks.length && this.starts[index]! < end; index += 1) {
      const part = this.chunks[index]!;
      parts.push(part.subarray(Math.max(0, start - this.starts[index]!), Math.min(part.length, end - this.starts[index]!)));
    }
    return Buffer.concat(parts).toString("utf8");
  }
}

/** Where the top-level `data` array lies: its brackets and each element's bytes (`[start, end)` pairs, whitespace included). */
interface DataLayout {
  readonly open: number;
  readonly close: number;
  readonly elements: readonly number[];
}

/**
 * One pass over the bytes of an object, tracking strings and nesting only: finds its `data` member when its value is an
 * array (a key written with escapes, `"d\u0061ta"`, counts). Undefined when there is no such single member. Validity is
 * left to JSON.parse of the pieces: when they all parse, so does the whole, to the same value.
 */
function layoutOf(bytes: ChunkedBytes): DataLayout | undefined {
  let depth = 0;
  let inString = false;
  /** A backslash ended the last chunk inside a string: the next chunk's first byte is escaped. */
  let escapePending = false;
  /** The current (or last) string at depth 1: the offset of its opening quote, and whether it held an escape. */
  let keyStart = -1;
  let keyEnd = -1;
  let keyEscaped = false;
  /** After `"data":`, until the value's first byte. */
  let awaitingArray = false;
  let inData = false;
  let dataKeys = 0;
  let open = -1;
  let close = -1;
  let elementStart = -1;
  const elements: number[] = [];
  let offset = 0;
  for (const chunk of bytes.chunks) {
    const length = chunk.length;
    // An empty chunk has no byte for a pending escape to skip: it waits for the next one.
    if (length === 0) continue;
    let index = 0;
    if (escapePending) {
      escapePending = false;
      index = 1;
    }
    for (; index < length; index += 1) {
      let byte = chunk[index]!;
      if (inString) {
        // Most bytes of a page are inside strings: skip them in this tight loop.
        while (byte !== QUOTE && byte !== BACKSLASH && ++index < length) byte = chunk[index]!;
        if (index === length) break;
        if (byte === BACKSLASH) {
          if (depth === 1) keyEscaped = true;
          if (++index === length) escapePending = true;
          continue;
        }
        inString = false;
        if (depth === 1) keyEnd = offset + index;
        continue;
      }
      if (awaitingArray && byte !== OPEN_BRACKET) {
        if (isJsonWhitespace(byte)) continue;
        return undefined;
      }
      switch (byte) {
        case QUOTE:
          inString = true;
          if (depth === 1) {
            keyStart = offset + index;
            keyEscaped = false;
          }
          break;
        case OPEN_BRACKET:
          depth += 1;
          if (awaitingArray) {
            awaitingArray = false;
            inData = true;
            open = offset + index;
            elementStart = open + 1;
          }
          break;
        case OPEN_BRACE:
          depth += 1;
          break;
        case CLOSE_BRACKET:
          if (inData && depth === 2) {
            inData = false;
            close = offset + index;
            // `[]` (or blank inside) has no element; `[1,]` keeps its blank last element, which fails to parse.
            if (elements.length > 0 || !onlyWhitespace(bytes, elementStart, close)) elements.push(elementStart, close);
          }
          depth -= 1;
          break;
        case CLOSE_BRACE:
          depth -= 1;
          break;
        case COMMA:
          if (inData && depth === 2) {
            elements.push(elementStart, offset + index);
            elementStart = offset + index + 1;
          }
          break;
        case COLON:
          if (depth === 1) {
            // A colon with no string since the last one is no JSON; reading the key again for each would be quadratic.
            if (keyStart === -1) return undefined;
            const isData = keyEscaped ? decodedKeyIsData(bytes, keyStart, keyEnd) : isDataKey(bytes, keyStart, keyEnd);
            keyStart = -1;
            if (isData === undefined) return undefined;
            if (isData) {
              if (++dataKeys > 1) return undefined;
              awaitingArray = true;
            }
          }
          break;
      }
    }
    offset += length;
  }
  if (open === -1 || close === -1) return undefined;
  return { open, close, elements };
}

function onlyWhitespace(bytes: ChunkedBytes, start: number, end: number): boolean {
  for (let offset = start; offset < end; offset += 1) if (!isJsonWhitespace(bytes.byteAt(offset))) return false;
  return true;
}

/** Whether a key written with escapes (`"d\u0061ta"`) is `data`; undefined when it is no valid string. */
function decodedKeyIsData(bytes: ChunkedBytes, quote: number, closingQuote: number): boolean | undefined {
  try {
    return JSON.parse(bytes.text(quote, closingQuote + 1)) === "data";
  } catch {
    return undefined;
  }
}

function isDataKey(bytes: ChunkedBytes, quote: number, closingQuote: number): boolean {
  if (closingQuote - quote - 1 !== DATA_KEY.length) return false;
  return DATA_KEY.every((expected, index) => bytes.byteAt(quote + 1 + index) === expected);
}

/**
 * Parses a body of at least `fromBytes` bytes that is a JSON object with one `data` member holding an array, piece by
 * piece; the value equals `JSON.parse(decodeUtf8(chunks))`. Undefined for any other body, a smaller one, or one that is
 * not valid JSON: the caller parses the whole text then, which gives JSON.parse's own answer, value or error.
 *
 * @example
 * const page = parseDataPiecewise(chunks) ?? { value: JSON.parse(decodeUtf8(chunks)) };
 */
export function parseDataPiecewise(chunks: readonly Buffer[], fromBytes = PIECEWISE_FROM_BYTES): { readonly value: unknown } | undefined {
  const bytes = new ChunkedBytes(chunks);
  if (bytes.length < fromBytes) return undefined;
  const layout = layoutOf(bytes);
  if (layout === undefined) return undefined;
  try {
    const envelope = JSON.parse(`${bytes.text(0, layout.open)}[]${bytes.text(layout.close + 1, bytes.length)}`) as Record<string, unknown>;
    const { elements } = layout;
    const data = new Array<unknown>(elements.length / 2);
    for (let index = 0; index < data.length; index += 1) data[index] = JSON.parse(bytes.text(elements[2 * index]!, elements[2 * index + 1]!));
    envelope["data"] = data;
    return { value: envelope };
  } catch {
    return undefined;
  }
}

/** `JSON.parse` of the body, piecewise when {@link parseDataPiecewise} can: its value, or JSON.parse's error. */
export function parseJsonChunks(chunks: readonly Buffer[]): unknown {
  const page = parseDataPiecewise(chunks);
  return page === undefined ? JSON.parse(decodeUtf8(chunks)) : page.value;
}
