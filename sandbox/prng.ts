/**
 * Small deterministic PRNG (mulberry32) with the helpers the seed generator needs.
 * The same seed always yields the same sequence, so seeded data is reproducible.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Next float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty array");
    return item;
  }

  /** One element chosen with the given relative weights. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [item, weight] of items) {
      roll -= weight;
      if (roll < 0) return item;
    }
    const last = items[items.length - 1];
    if (last === undefined) throw new RangeError("weighted pick from an empty array");
    return last[0];
  }

  /** Amount with two decimals in [min, max]. */
  money(min: number, max: number): number {
    return round2(min + this.next() * (max - min));
  }

  /** RFC 4122 version-4 UUID built from the PRNG (deterministic). */
  uuid(): string {
    const a = this.uint32();
    const b = this.uint32();
    const c = this.uint32();
    const d = this.uint32();
    return (
      hex8(a) +
      "-" +
      hex4(b >>> 16) +
      "-4" +
      hex4(b & 0x0fff).slice(1) +
      "-" +
      hex4(((c >>> 16) & 0x3fff) | 0x8000) +
      "-" +
      hex4(c & 0xffff) +
      hex8(d)
    );
  }

  /** Next unsigned 32-bit integer. */
  uint32(): number {
    return Math.floor(this.next() * 4294967296) >>> 0;
  }

  /** Upper-case alphanumeric string of `length` characters. */
  code(length: number, alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"): string {
    let out = "";
    for (let i = 0; i < length; i++) out += alphabet.charAt(Math.floor(this.next() * alphabet.length));
    return out;
  }

  /** String of decimal digits. */
  digits(length: number): string {
    return this.code(length, "0123456789");
  }
}

/** Rounds to two decimals (money). */
export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex4(value: number): string {
  return (HEX_BYTE[(value >>> 8) & 0xff] ?? "") + (HEX_BYTE[value & 0xff] ?? "");
}

function hex8(value: number): string {
  return hex4(value >>> 16) + hex4(value & 0xffff);
}
