// Our protobuf codec (src/proto/codec.ts) against protobufjs, over every message
// type of src/proto/*.proto: seeded values (each scalar's edge values, nested and
// repeated messages, enums, oneofs) encoded by one and decoded by the other, both
// ways, and compared as decoded values: the bytes legitimately differ (we write
// fields in .proto order and skip defaults; protobufjs writes by field number and
// writes every field it was given), what they decode to may not. protobufjs reads
// the .proto files themselves here, not our descriptor.json, so a fault in the
// descriptor or in how our codec plans it shows too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import protobuf from 'protobufjs';
import { Codec, decodeWith, encodeWith, type DescriptorNode, type MessagePlan } from '../../src/proto/codec.js';
import { DESCRIPTOR_JSON } from '../../src/proto/load.js';
import { seeded } from '../storage/fixtures.js';
import { ROOT } from '../support/tools.js';

const PROTO_DIR = path.join(ROOT, 'src/proto');
const VALUES_PER_TYPE = 300;
/** Nested messages stop here (TxnRequest holds itself through RequestOp). */
const MAX_DEPTH = 3;
const MAX_REPEATED = 3;

const EDGES: Record<string, readonly unknown[]> = {
  string: ['', 'a', 'é✓😀 \u0000', 'x'.repeat(127), 'y'.repeat(128), 'z'.repeat(300)],
  bool: [false, true],
  int64: ['0', '1', '-1', '127', '128', '4294967295', '4294967296', '9007199254740993', '9223372036854775807', '-9223372036854775808'],
  uint64: ['0', '1', '127', '128', '4294967295', '4294967296', '9007199254740993', '9223372036854775808', '18446744073709551615'],
  uint32: [0, 1, 127, 128, 2147483647, 2147483648, 4294967295],
};
const BYTE_LENGTHS = [0, 1, 127, 128, 300];
/** "type:edge" for every edge value a field was given, to show that each kind met all of its edges. */
const edgesGiven = new Set<string>();

type Rng = () => number;
type Obj = Record<string, unknown>;

const int = (rng: Rng, n: number) => Math.floor(rng() * n);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[int(rng, xs.length)];

function randomBits(rng: Rng, bits: number): bigint {
  let v = 0n;
  for (let i = 0; i < bits; i += 16) v = (v << 16n) | BigInt(int(rng, 0x10000));
  return BigInt.asUintN(bits, v);
}

function randomBytes(rng: Rng, length: number): Buffer {
  const b = Buffer.alloc(length);
  for (let i = 0; i < length; i++) b[i] = int(rng, 256);
  return b;
}

/**
 * A value of a scalar or enum field in the shape our codec decodes to. `slot`
 * walks the edge values in turn (every field meets every edge within a few
 * values); every other value is random.
 */
function scalar(field: protobuf.Field, rng: Rng, slot: number): unknown {
  const edge = slot % 2 === 0;
  const n = Math.floor(slot / 2);
  if (field.resolvedType instanceof protobuf.Enum) {
    const names = Object.keys(field.resolvedType.values);
    // A number the enum does not name is kept as that number by both.
    return n % 7 === 6 ? 99 : names[n % names.length];
  }
  switch (field.type) {
    case 'bytes': {
      if (!edge) return randomBytes(rng, int(rng, 40));
      const length = BYTE_LENGTHS[n % BYTE_LENGTHS.length];
      edgesGiven.add(`bytes:${length}`);
      return length === 1 ? Buffer.from([0]) : randomBytes(rng, length);
    }
    case 'string':
      if (!edge) return String.fromCodePoint(...Array.from({ length: int(rng, 20) }, () => pick(rng, [0x41 + int(rng, 26), 0xe9, 0x4e2d, 0x1f600])));
      break;
    case 'bool':
      if (!edge) return rng() < 0.5;
      break;
    case 'int64':
      if (!edge) return BigInt.asIntN(64, randomBits(rng, 64) >> BigInt(int(rng, 64))).toString();
      break;
    case 'uint64':
      if (!edge) return (randomBits(rng, 64) >> BigInt(int(rng, 64))).toString();
      break;
    case 'uint32':
      if (!edge) return Number(randomBits(rng, 32) >> BigInt(int(rng, 32)));
      break;
    default:
      throw new Error(`${field.fullName}: no generator for type ${field.type}`);
  }
  const edges = EDGES[field.type];
  const v = edges[n % edges.length];
  edgesGiven.add(`${field.type}:${String(v)}`);
  return v;
}

/** The decoded default of a field, as our codec gives it. */
function defaultOf(field: protobuf.Field): unknown {
  if (field.repeated) return [];
  if (field.resolvedType instanceof protobuf.Type) return null;
  if (field.resolvedType instanceof protobuf.Enum) return Object.keys(field.resolvedType.values)[0];
  return { string: '', bytes: Buffer.alloc(0), bool: false, int64: '0', uint64: '0', uint32: 0 }[field.type];
}

function fieldValue(field: protobuf.Field, rng: Rng, slot: number, depth: number): unknown {
  if (field.resolvedType instanceof protobuf.Type) {
    return depth >= MAX_DEPTH ? null : message(field.resolvedType, rng, slot + 1, depth + 1);
  }
  return scalar(field, rng, slot);
}

/**
 * A value of `type` exactly as our codec decodes it: every field present (its
 * default about a third of the time), a oneof with at most one member and the
 * oneof's property naming it.
 */
function message(type: protobuf.Type, rng: Rng, slot: number, depth: number): Obj {
  const out: Obj = {};
  type.fieldsArray.forEach((field, i) => {
    if (field.partOf) return;
    const s = slot + i;
    if (field.repeated) {
      const n = depth >= MAX_DEPTH && field.resolvedType instanceof protobuf.Type ? 0 : int(rng, MAX_REPEATED + 1);
      out[field.name] = Array.from({ length: n }, (_, k) =>
        field.resolvedType instanceof protobuf.Type ? message(field.resolvedType, rng, s + k, depth + 1) : scalar(field, rng, s + k),
      );
    } else out[field.name] = rng() < 0.3 ? defaultOf(field) : fieldValue(field, rng, s, depth);
  });
  for (const oneof of type.oneofsArray) {
    const which = int(rng, oneof.fieldsArray.length + 1);
    if (which === oneof.fieldsArray.length) continue;
    const member = oneof.fieldsArray[which];
    const nested = member.resolvedType instanceof protobuf.Type ? member.resolvedType : undefined;
    if (nested && depth >= MAX_DEPTH) continue;
    // A set member holding its default (0, '', an empty message) still says which member is set.
    if (rng() < 0.2) out[member.name] = nested ? emptyMessage(nested) : defaultOf(member);
    else out[member.name] = fieldValue(member, rng, slot, depth);
    out[oneof.name] = member.name;
  }
  return out;
}

/** A message with every field at its default and no oneof set, as decoded from no bytes. */
function emptyMessage(type: protobuf.Type): Obj {
  return Object.fromEntries(type.fieldsArray.filter((f) => !f.partOf).map((f) => [f.name, defaultOf(f)]));
}

/** Whether a generated field value is more than its default (an empty list, a missing oneof member). */
function filled(field: protobuf.Field, v: unknown): boolean {
  if (v === undefined) return false;
  if (field.partOf) return true;
  return JSON.stringify(plain(v)) !== JSON.stringify(plain(defaultOf(field)));
}

/** Decoded values compared as data: bytes by content whatever their class, 64-bit integers as decimal strings. */
function plain(v: unknown): unknown {
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') };
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true, arrays: true, oneofs: true };

function loadProtobufjs(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(PROTO_DIR, target));
  // As writeDescriptor.ts reads them: imports name files in src/proto, field names as written.
  root.loadSync(['rpc.proto', 'kv.proto', 'auth.proto', 'health.proto', 'peer.proto'], { keepCase: true }).resolveAll();
  return root;
}

function messageTypes(ns: protobuf.NamespaceBase, out: protobuf.Type[] = []): protobuf.Type[] {
  for (const child of ns.nestedArray) {
    if (child instanceof protobuf.Type) out.push(child);
    if (child instanceof protobuf.Namespace) messageTypes(child, out);
  }
  return out;
}

/** Full names of the messages our descriptor.json holds (what every command and member plans from). */
function descriptorMessages(node: DescriptorNode, prefix = '', out: string[] = []): string[] {
  for (const [name, child] of Object.entries(node.nested ?? {})) {
    const full = prefix ? `${prefix}.${name}` : name;
    if (child.fields) out.push(full);
    descriptorMessages(child, full, out);
  }
  return out;
}

/**
 * Where our codec (with `plan`) and protobufjs disagree on `value`: our bytes
 * decoded by protobufjs, protobufjs's bytes decoded by us, and our own round trip.
 */
function disagreements(type: protobuf.Type, plan: MessagePlan, value: Obj): string[] {
  const want = plain(value);
  const found: string[] = [];
  const check = (what: string, got: () => unknown) => {
    try {
      assert.deepStrictEqual(plain(got()), want);
    } catch (e) {
      found.push(`${what}: ${(e as Error).message.split('\n').slice(0, 12).join('\n')}`);
    }
  };
  const ours = encodeWith(plan, value);
  check('ours → protobufjs', () => type.toObject(type.decode(ours), TO_OBJECT));
  check('ours → ours', () => decodeWith(plan, ours));
  check('protobufjs → ours', () => decodeWith(plan, type.encode(type.fromObject(value)).finish()));
  return found;
}

const pb = loadProtobufjs();
const codec = new Codec(JSON.parse(readFileSync(DESCRIPTOR_JSON, 'utf8')) as DescriptorNode);
const TYPES = messageTypes(pb);
const fullName = (t: protobuf.Type) => t.fullName.slice(1);

describe('src/proto/codec.ts against protobufjs', () => {
  test('protobufjs reads the same message types from src/proto/*.proto as our descriptor.json holds', () => {
    const ours = descriptorMessages(JSON.parse(readFileSync(DESCRIPTOR_JSON, 'utf8')) as DescriptorNode);
    assert.deepEqual(TYPES.map(fullName).sort(), ours.sort());
    assert.ok(TYPES.length > 100, `${TYPES.length} message types`);
  });

  test(`every message type: ${VALUES_PER_TYPE} seeded values each, encoded by one and decoded by the other, both ways`, () => {
    const started = Date.now();
    const failures: string[] = [];
    const covered = new Set<string>();
    TYPES.forEach((type, t) => {
      const plan = codec.message(fullName(type));
      const rng = seeded(0xc0dec + t);
      for (let i = 0; i < VALUES_PER_TYPE && failures.length < 5; i++) {
        const value = message(type, rng, i, 0);
        for (const f of type.fieldsArray) if (filled(f, value[f.name])) covered.add(f.fullName);
        for (const d of disagreements(type, plan, value)) failures.push(`${fullName(type)} value #${i}: ${d}`);
      }
    });
    assert.deepEqual(failures, []);
    // Every field of every type held something other than its default, and each kind met all its edges.
    const fields = TYPES.flatMap((t) => t.fieldsArray.map((f) => f.fullName));
    assert.deepEqual(
      fields.filter((f) => !covered.has(f)),
      [],
    );
    const kinds = new Set(TYPES.flatMap((t) => t.fieldsArray.map((f) => f.type)));
    const edges = [...Object.entries(EDGES).flatMap(([k, vs]) => vs.map((v) => `${k}:${String(v)}`)), ...BYTE_LENGTHS.map((n) => `bytes:${n}`)];
    assert.deepEqual(
      edges.filter((e) => kinds.has(e.split(':')[0]) && !edgesGiven.has(e)),
      [],
    );
    console.log(`${TYPES.length} message types, ${TYPES.length * VALUES_PER_TYPE} values, ${Date.now() - started} ms`);
  });

  test('the comparison catches a wrong encoding: PutRequest with key and value field numbers swapped', () => {
    const type = pb.lookupType('etcdserverpb.PutRequest');
    const plan = codec.message('etcdserverpb.PutRequest');
    const value = message(type, seeded(7), 0, 0);
    value.key = Buffer.from('k');
    value.value = Buffer.from('v');
    assert.deepEqual(disagreements(type, plan, value), []);
    // The same codec, but writing and reading `key` as field 2 and `value` as field 1.
    const swap = (f: MessagePlan['fields'][number]) => (f.name === 'key' ? { ...f, id: 2 } : f.name === 'value' ? { ...f, id: 1 } : f);
    const fields = plan.fields.map(swap);
    const wrong: MessagePlan = { name: plan.name, fields, byId: fields.reduce<MessagePlan['byId']>((by, f) => ((by[f.id] = f), by), []) };
    const found = disagreements(type, wrong, value);
    assert.deepEqual(
      found.map((d) => d.split(':')[0]),
      ['ours → protobufjs', 'protobufjs → ours'],
    );
  });
});
