/** Piecewise parsing of list pages kept as chunks: always JSON.parse's answer, never one string of a large page. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeUtf8, parseDataPiecewise, parseJsonChunks, PIECEWISE_FROM_BYTES } from "../../shared/qashio/json-body.js";
import { recordBufferDecodes } from "./helpers.js";

/**
 * `bytes` cut at `cuts` (offsets, any order, duplicates and out-of-range ones ignored), as a socket might deliver them;
 * with `empty`, an empty chunk after each cut (a caller's chunks may hold some).
 */
function chunked(bytes: Buffer, cuts: readonly number[] = [], empty = false): Buffer[] {
  const offsets = [...new Set(cuts.filter((cut) => cut > 0 && cut < bytes.length))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const cut of [...offsets, bytes.length]) {
    chunks.push(Buffer.from(bytes.subarray(start, cut)));
    if (empty && cut < bytes.length) chunks.push(Buffer.alloc(0));
    start = cut;
  }
  return chunks;
}

/** What the whole-text parse gives: the value, or that it throws. */
function wholeParse(text: string): { value: unknown } | "throws" {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return "throws";
  }
}

const envelopeArbitrary = fc.record({
  before: fc.dictionary(fc.string().filter((key) => key !== "data"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  data: fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 12 }),
  after: fc.dictionary(fc.string().filter((key) => key !== "data"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  indent: fc.constantFrom<number | string>(0, 2, "\t"),
  crlf: fc.boolean(),
});

/** The envelope's text, with `data` between the other members, as JSON.stringify writes it at some indentation. */
function envelopeText({ before, data, after, indent, crlf }: typeof envelopeArbitrary extends fc.Arbitrary<infer T> ? T : never): string {
  const text = JSON.stringify({ ...before, data, ...after }, null, indent);
  // A line break is never inside a string of JSON.stringify's output (it writes \n there).
  return crlf ? text.replaceAll("\n", " \r\n") : text;
}

describe("parseDataPiecewise", () => {
  it("gives JSON.parse's value for any object with a data array, however it is indented and cut into chunks", () => {
    fc.assert(
      fc.property(envelopeArbitrary, fc.array(fc.nat(), { maxLength: 8 }), fc.boolean(), (envelope, cuts, empty) => {
        const text = envelopeText(envelope);
        const bytes = Buffer.from(text, "utf8");
        const parsed = parseDataPiecewise(chunked(bytes, cuts.map((cut) => cut % (bytes.length + 1)), empty), 0);
        expect(parsed).toBeDefined();
        expect(parsed!.value).toStrictEqual(JSON.parse(text));
      }),
      { numRuns: 400 },
    );
  });

  it("on a corrupted body, never gives a value JSON.parse would not: either the same value or undefined", () => {
    const corruption = fc.record({ at: fc.nat(), remove: fc.nat({ max: 3 }), insert: fc.constantFrom("", ",", "]", "}", "[", "{", '"', "\\", ":", " ", "x", "1", "\u00e9") });
    fc.assert(
      fc.property(envelopeArbitrary, corruption, fc.array(fc.nat(), { maxLength: 4 }), fc.boolean(), (envelope, { at, remove, insert }, cuts, empty) => {
        const valid = envelopeText(envelope);
        const offset = at % (valid.length + 1);
        const text = valid.slice(0, offset) + insert + valid.slice(offset + remove);
        const bytes = Buffer.from(text, "utf8");
        const parsed = parseDataPiecewise(chunked(bytes, cuts.map((cut) => cut % (bytes.length + 1)), empty), 0);
        const whole = wholeParse(text);
        if (parsed !== undefined) {
          expect(whole).not.toBe("throws");
          expect(parsed.value).toStrictEqual((whole as { value: unknown }).value);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("keeps the members in the order the page wrote them, data in its own place, as JSON.parse does", () => {
    // toStrictEqual ignores key order; a re-serialised page (a log, a cache) would not.
    const text = '{"status_code":200,"data":[{"b":1,"a":2}],"pagination":{"page":1},"success":true}';
    const parsed = parseDataPiecewise([Buffer.from(text)], 0);
    expect(JSON.stringify(parsed?.value)).toBe(text);
  });

  it("reads a key written with escapes as the key it spells", () => {
    expect(parseDataPiecewise([Buffer.from('{"\\"":1,"d\\u0061ta":[1,{"a":2}],"n\\n":[3]}')], 0)?.value).toStrictEqual({ '"': 1, data: [1, { a: 2 }], "n\n": [3] });
  });

  it("takes a key written with escapes for data only when it decodes to data exactly, not to a key that starts with it", () => {
    for (const text of ['{"d\\u0061tas":[1],"data":[2]}', '{"data":[2],"\\u0064atax":[1]}']) {
      expect(parseDataPiecewise([Buffer.from(text)], 0)?.value, text).toStrictEqual(JSON.parse(text));
    }
  });

  it("leaves to the whole parse what it cannot split for sure: a second data member, data not an array, a byte order mark, not an object", () => {
    const cases = [
      '{"data":[1,2],"data":[3]}',
      '{"d\\u0061ta":[1],"data":[2]}',
      '{"data":[1],"d\\u0061ta":[2]}',
      '{"data":{"cards":[1,2]}}',
      '{"data":null}',
      // data not an array, and an array member after it: that array is no data's.
      '{"data":"x","list":[1,2]}',
      '{"data":1,"list":[2]}',
      "\ufeff" + '{"data":[1]}',
      '[{"data":[1]}]',
      '"data"',
      '{"meta":{"data":[1]}}',
    ];
    for (const text of cases) expect(parseDataPiecewise([Buffer.from(text)], 0), text).toBeUndefined();
    // The whole parse then gives JSON.parse's own answer: the last of two members wins, the byte order mark is dropped.
    expect(parseJsonChunks([Buffer.from('{"data":[1,2],"data":[3]}')])).toStrictEqual({ data: [3] });
    expect(parseJsonChunks([Buffer.from("\ufeff" + '{"data":[1]}')])).toStrictEqual({ data: [1] });
    expect(parseJsonChunks([Buffer.from('{"data":"x","list":[1,2]}')])).toStrictEqual({ data: "x", list: [1, 2] });
  });

  it("reads each key once, however many colons follow it: a body that is not JSON costs no more than its length", () => {
    // Every colon re-reading the key before it would decode it again: a 160 KB body like this took seconds.
    const key = `"\\n${"k".repeat(PIECEWISE_FROM_BYTES)}"`;
    const chunks = [Buffer.from(`{${key}${":".repeat(1_000)}1,"data":[1]}`)];
    const decodes = recordBufferDecodes();
    try {
      expect(() => parseJsonChunks(chunks)).toThrow(SyntaxError);
    } finally {
      decodes.restore();
    }
    // The key once at most, then the whole body for JSON.parse's error.
    expect(decodes.lengths.length).toBeLessThanOrEqual(2);
  });

  it("splits an empty data array, and a blank one, to no element; a trailing comma is left to the whole parse, which rejects it", () => {
    expect(parseDataPiecewise([Buffer.from('{"data":[],"n":1}')], 0)?.value).toStrictEqual({ data: [], n: 1 });
    expect(parseDataPiecewise([Buffer.from('{"data":[ \n ],"n":1}')], 0)?.value).toStrictEqual({ data: [], n: 1 });
    expect(parseDataPiecewise([Buffer.from('{"data":[1,],"n":1}')], 0)).toBeUndefined();
    expect(() => parseJsonChunks([Buffer.from('{"data":[1,],"n":1}')])).toThrow(SyntaxError);
  });

  it("splits a body of exactly 64 KB (docs/spec-gaps.md, Parsing a page), not one a byte shorter, and reads a tab as blank before data's bracket and inside it", () => {
    const head = '{"data":[1],"pad":"';
    const sized = (bytes: number) => Buffer.from(`${head}${"x".repeat(bytes - head.length - 2)}"}`);
    const exact = sized(64 * 1024);
    expect(exact.length).toBe(PIECEWISE_FROM_BYTES);
    expect(parseDataPiecewise([exact])?.value).toStrictEqual(JSON.parse(exact.toString()));
    expect(parseDataPiecewise([sized(64 * 1024 - 1)])).toBeUndefined();
    expect(parseDataPiecewise([Buffer.from('{"data":\t[1]}')], 0)?.value).toStrictEqual({ data: [1] });
    expect(parseDataPiecewise([Buffer.from('{"data":[\t]}')], 0)?.value).toStrictEqual({ data: [] });
  });

  it("reads no blank but JSON's four as blank: a form feed or vertical tab before data's bracket or inside it is left to the whole parse, which rejects it", () => {
    for (const blank of ["\f", "\v"]) {
      for (const text of [`{"data":${blank}[1]}`, `{"data":[${blank}]}`, `{"data":[1,${blank}]}`]) {
        expect(parseDataPiecewise([Buffer.from(text)], 0), JSON.stringify(text)).toBeUndefined();
        expect(() => parseJsonChunks([Buffer.from(text)]), JSON.stringify(text)).toThrow(SyntaxError);
      }
    }
  });

  it("reads a carriage return as blank before data's bracket and inside it, as JSON.parse does", () => {
    expect(parseDataPiecewise([Buffer.from('{"data":\r\n[1]}')], 0)?.value).toStrictEqual({ data: [1] });
    expect(parseDataPiecewise([Buffer.from('{"data":[\r\n]}')], 0)?.value).toStrictEqual({ data: [] });
  });

  it("takes only the key data itself for the data member, not one that starts with it", () => {
    const text = '{"dat":[0],"datas":[1],"data":[2],"xdata":[3]}';
    expect(parseDataPiecewise([Buffer.from(text)], 0)?.value).toStrictEqual(JSON.parse(text));
  });

  it("reads a backslash ending one chunk as escaping the next chunk's first byte", () => {
    const text = '{"data":["a\\"],[b",{"k\\\\":"\\\\"}],"x":"]"}';
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      expect(parseDataPiecewise(chunked(bytes, [cut]), 0)?.value, `cut at ${cut}`).toStrictEqual(JSON.parse(text));
      expect(parseDataPiecewise(chunked(bytes, [cut], true), 0)?.value, `cut at ${cut}, an empty chunk after it`).toStrictEqual(JSON.parse(text));
    }
  });

  it("skips only the one byte a backslash ending a chunk escapes: later chunks are read from their first byte", () => {
    // Read with the escape still pending, the third chunk's comma would be skipped and 1,2 read as one element.
    const chunks = [Buffer.from('{"data":["a\\'), Buffer.from('"b",1'), Buffer.from(",2],"), Buffer.from('"n":3}')];
    expect(parseDataPiecewise(chunks, 0)?.value).toStrictEqual({ data: ['a"b', 1, 2], n: 3 });
  });

  it("keeps a pending escape across an empty chunk, so a quote it escapes never ends the key or hides one", () => {
    // Read with the escape lost, the key `x""data` would end early and `"data"` be taken for a second key of its own.
    const memo = "x".repeat(PIECEWISE_FROM_BYTES);
    const chunks = [Buffer.from(`{"memo":"${memo}","x\\`), Buffer.alloc(0), Buffer.from('"\\"data":[1,2]}')];
    expect(parseJsonChunks(chunks)).toStrictEqual({ memo, 'x""data': [1, 2] });
    expect(parseJsonChunks(chunks)).toStrictEqual(JSON.parse(decodeUtf8(chunks)));
  });

  it("decodes characters of several bytes cut across chunks, and invalid UTF-8 as fetch does", () => {
    const text = JSON.stringify({ data: [{ name: "Zoë Ölçer 東京 🙂" }, "ä"], meta: "é" });
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      expect(parseDataPiecewise(chunked(bytes, [cut, cut + 1]), 0)?.value, `cut at ${cut}`).toStrictEqual(JSON.parse(text));
    }
    const invalid = Buffer.concat([Buffer.from('{"data":["a'), Buffer.from([0xe2, 0x82]), Buffer.from('",1]}')]);
    expect(parseDataPiecewise(chunked(invalid, [12]), 0)?.value).toStrictEqual(JSON.parse(decodeUtf8([invalid])));
  });

  it("parses a body under PIECEWISE_FROM_BYTES whole, and one over it piecewise without decoding the whole body as one string", () => {
    const item = { id: "579b5c61-78c4-4b6c-bcd8-cf5da869d833", merchant_name: "IKEA", line_items: [{ id: "a", amount: 1.5 }], memo: "x".repeat(3_000) };
    const page = { status_code: 200, success: true, data: Array.from({ length: 100 }, (_, index) => ({ ...item, index })), pagination: { page: 1 } };
    const bytes = Buffer.from(JSON.stringify(page));
    expect(bytes.length).toBeGreaterThan(PIECEWISE_FROM_BYTES);
    const decodes = recordBufferDecodes();
    try {
      expect(parseJsonChunks(chunked(bytes, [65_536, 131_072, 196_608, 262_144]))).toStrictEqual(page);
      // Each element and the envelope, each a small string: the largest is one element, not the page.
      expect(decodes.lengths.length).toBeGreaterThan(100);
      expect(Math.max(...decodes.lengths)).toBeLessThan(4_000);
      decodes.lengths.length = 0;
      const small = Buffer.from(JSON.stringify({ data: [item] }));
      expect(parseJsonChunks([small])).toStrictEqual({ data: [item] });
      expect(decodes.lengths).toStrictEqual([small.length]);
    } finally {
      decodes.restore();
    }
  });

  it("leaves a page cut off inside data to the whole parse, which rejects it, decoding the body as one string only once", () => {
    const item = { id: "t", memo: "x".repeat(3_000) };
    const text = JSON.stringify({ data: Array.from({ length: 60 }, () => item), pagination: { page: 1 } });
    const truncated = Buffer.from(text.slice(0, text.length / 2));
    expect(truncated.length).toBeGreaterThan(PIECEWISE_FROM_BYTES);
    const decodes = recordBufferDecodes();
    try {
      expect(() => parseJsonChunks(chunked(truncated, [65_536]))).toThrow(SyntaxError);
    } finally {
      decodes.restore();
    }
    // Only the whole parse's own decode is the body's size: the piecewise pass gave up before decoding any of it.
    expect(decodes.lengths.filter((length) => length > 10_000)).toStrictEqual([truncated.length]);
  });
});

describe("decodeUtf8", () => {
  it("decodes a body of no chunks, or only empty ones (an empty answer), to the empty string", () => {
    expect(decodeUtf8([])).toBe("");
    expect(decodeUtf8([Buffer.alloc(0)])).toBe("");
  });

  it("drops a byte order mark as fetch's text() does, however the chunks cut it", () => {
    const bytes = Buffer.from('\ufeff{"data":[1]}');
    for (const cuts of [[], [1], [2], [3], [1, 2]]) {
      expect(decodeUtf8(chunked(bytes, cuts)), `cut at ${cuts.join(",")}`).toBe('{"data":[1]}');
      expect(parseJsonChunks(chunked(bytes, cuts)), `cut at ${cuts.join(",")}`).toStrictEqual({ data: [1] });
    }
  });
});
