/**
 * A compact, off-heap index from snapshot key to its place on disk: an open-addressing hash table over typed
 * arrays, keyed by a 64-bit fingerprint of the key. 24 bytes per slot, at most 3/4 full (32-64 bytes per key), none
 * of it on the JS heap, so the garbage collector never walks it; a Map of key strings to objects took ~140 bytes per key.
 *
 * Two keys with the same fingerprint (odds ~1e-9 for a million keys) share a slot; the store checks the key
 * stored with each entry on read, so such a collision reads as "no snapshot" (the engine then publishes the
 * item again: at-least-once holds), never as another key's snapshot.
 */

/** Where one entry lives: segment (by the store's id for it), byte offset and length in that segment file. */
export interface KeyLocation {
  readonly segment: number;
  readonly offset: number;
  readonly length: number;
}

const INITIAL_CAPACITY = 1024;

/**
 * Two independent 32-bit string hashes (cyrb53-style mixing), so a key maps to 64 bits: `[high, low]`, low never 0.
 * Exported for the tests, whose colliding key pairs were found by search and hold only for this hash.
 */
export function fingerprint(key: string): [number, number] {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  // 0/0 marks an empty slot.
  return [h1 >>> 0, (h2 >>> 0) || 1];
}

/**
 * Whether two keys share a slot of the index (one fingerprint): a line holding `found` where `wanted` was looked up
 * is then a collision, not a damaged segment.
 */
export function sameFingerprint(wanted: string, found: string): boolean {
  const [h1, l1] = fingerprint(wanted);
  const [h2, l2] = fingerprint(found);
  return h1 === h2 && l1 === l2;
}

/**
 * Snapshot key -> location, in typed arrays.
 *
 * @example
 * ```ts
 * const index = new KeyIndex();
 * index.set("transaction:7f…", { segment: 3, offset: 120, length: 3600 }); // undefined: nothing replaced
 * index.set("transaction:7f…", { segment: 4, offset: 0, length: 3610 }); // { segment: 3, offset: 120, length: 3600 }
 * index.get("transaction:7f…"); // { segment: 4, offset: 0, length: 3610 }
 * ```
 */
export class KeyIndex {
  private capacity = INITIAL_CAPACITY;
  private count = 0;
  private hi = new Uint32Array(INITIAL_CAPACITY);
  private lo = new Uint32Array(INITIAL_CAPACITY);
  private segments = new Uint32Array(INITIAL_CAPACITY);
  private offsets = new Float64Array(INITIAL_CAPACITY);
  private lengths = new Uint32Array(INITIAL_CAPACITY);

  /** Number of keys held. */
  get size(): number {
    return this.count;
  }

  /** Bytes of the typed arrays (what the index costs in memory). */
  get bytes(): number {
    return this.capacity * (4 + 4 + 4 + 8 + 4);
  }

  get(key: string): KeyLocation | undefined {
    const [h, l] = fingerprint(key);
    const slot = this.find(h, l);
    return this.lo[slot] === 0 ? undefined : this.locationAt(slot);
  }

  /** Sets the location of `key`; returns the location it replaces, if any (the store counts dead bytes with it). */
  set(key: string, location: KeyLocation): KeyLocation | undefined {
    const [h, l] = fingerprint(key);
    let slot = this.find(h, l);
    let replaced: KeyLocation | undefined;
    if (this.lo[slot] !== 0) {
      replaced = this.locationAt(slot);
    } else {
      if ((this.count + 1) * 4 > this.capacity * 3) {
        this.grow();
        slot = this.find(h, l);
      }
      this.hi[slot] = h;
      this.lo[slot] = l;
      this.count += 1;
    }
    this.segments[slot] = location.segment;
    this.offsets[slot] = location.offset;
    this.lengths[slot] = location.length;
    return replaced;
  }

  private locationAt(slot: number): KeyLocation {
    return { segment: this.segments[slot] as number, offset: this.offsets[slot] as number, length: this.lengths[slot] as number };
  }

  /** Slot holding fingerprint (h, l), or the empty slot where it would go (linear probing). */
  private find(h: number, l: number): number {
    const mask = this.capacity - 1;
    let slot = (h ^ Math.imul(l, 0x9e3779b1)) & mask;
    for (;;) {
      const lo = this.lo[slot];
      if (lo === 0 || (lo === l && this.hi[slot] === h)) return slot;
      slot = (slot + 1) & mask;
    }
  }

  private grow(): void {
    const { hi, lo, segments, offsets, lengths, capacity } = this;
    this.capacity = capacity * 2;
    this.hi = new Uint32Array(this.capacity);
    this.lo = new Uint32Array(this.capacity);
    this.segments = new Uint32Array(this.capacity);
    this.offsets = new Float64Array(this.capacity);
    this.lengths = new Uint32Array(this.capacity);
    for (let i = 0; i < capacity; i++) {
      const l = lo[i] as number;
      if (l === 0) continue;
      const h = hi[i] as number;
      const slot = this.find(h, l);
      this.hi[slot] = h;
      this.lo[slot] = l;
      this.segments[slot] = segments[i] as number;
      this.offsets[slot] = offsets[i] as number;
      this.lengths[slot] = lengths[i] as number;
    }
  }
}
