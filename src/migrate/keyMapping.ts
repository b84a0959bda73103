// Which source keys a migration carries and where they land: every key under the
// source prefix, written under the destination prefix with the rest of the key
// unchanged. Replacing a prefix keeps key order, so both sides can be walked in
// step when they are compared.
import { ALL_KEYS, prefixEnd, type KeySelection } from '../client/keyRange.js';

export class KeyMapping {
  readonly source: KeySelection;
  readonly dest: KeySelection;

  constructor(
    readonly sourcePrefix: Buffer,
    readonly destPrefix: Buffer,
  ) {
    this.source = selection(sourcePrefix);
    this.dest = selection(destPrefix);
  }

  toDest(key: Buffer): Buffer {
    return Buffer.concat([this.destPrefix, key.subarray(this.sourcePrefix.length)]);
  }

  /** The part both sides share (the key less its prefix): what verification compares. */
  sourceSuffix(key: Buffer): Buffer {
    return key.subarray(this.sourcePrefix.length);
  }

  destSuffix(key: Buffer): Buffer {
    return key.subarray(this.destPrefix.length);
  }

  /**
   * Within one cluster, writing under a prefix that contains the source range (or
   * lies inside it) would feed the migration its own writes.
   */
  overlaps(): boolean {
    return startsWith(this.destPrefix, this.sourcePrefix) || startsWith(this.sourcePrefix, this.destPrefix);
  }
}

function selection(prefix: Buffer): KeySelection {
  return prefix.length === 0 ? ALL_KEYS : { key: prefix, rangeEnd: prefixEnd(prefix) };
}

function startsWith(b: Buffer, prefix: Buffer): boolean {
  return b.length >= prefix.length && b.subarray(0, prefix.length).equals(prefix);
}
