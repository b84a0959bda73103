// Our protobuf codec for the messages of our .proto files, planned once per
// message from the descriptor `npm run build` writes (descriptor.json). Decoded
// messages look as handlers and clients expect them: field names as in the
// .proto, every field present with its default (64-bit integers as decimal
// strings so no ID loses precision, enums by name, bytes as Buffers, messages
// null, repeated fields []), a set oneof member named by its oneof's own
// property. Encoding takes the same shapes, and numbers, bigints and enum
// numbers too. protobufjs did this from its reflection objects, which cost an
// idle member some 4 MiB; our messages use only the types below.
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';

/** protobufjs's JSON form of parsed .proto files (descriptor.json): the parts we read. */
export interface DescriptorNode {
  nested?: Record<string, DescriptorNode>;
  fields?: Record<string, { type: string; id: number; rule?: string }>;
  oneofs?: Record<string, { oneof: string[] }>;
  values?: Record<string, number>;
  methods?: Record<string, { requestType: string; responseType: string; requestStream?: boolean; responseStream?: boolean }>;
}

type Kind = 'string' | 'bytes' | 'bool' | 'int64' | 'uint64' | 'uint32' | 'enum' | 'message';
const SCALARS: ReadonlySet<string> = new Set(['string', 'bytes', 'bool', 'int64', 'uint64', 'uint32']);
const WIRE_LEN = 2;

interface EnumPlan {
  byName: Map<string, number>;
  byId: Map<number, string>;
  /** The name of the first value: a field's default. */
  first: string;
}

interface FieldPlan {
  name: string;
  /** "Message.field", for errors. */
  where: string;
  id: number;
  kind: Kind;
  repeated: boolean;
  /** A repeated integer, enum or bool: packed on the wire (unpacked accepted too). */
  packed: boolean;
  /** The oneof this field is a member of (its default is then absence). */
  oneof?: string;
  message?: MessagePlan;
  enumPlan?: EnumPlan;
}

export interface MessagePlan {
  readonly name: string;
  fields: FieldPlan[];
  /** fields by number */
  byId: Array<FieldPlan | undefined>;
}

const EMPTY = Buffer.alloc(0);
type Obj = Record<string, unknown>;

/** Every message and enum of a descriptor, planned on first use. */
export class Codec {
  private readonly nodes = new Map<string, DescriptorNode>();
  private readonly messages = new Map<string, MessagePlan>();
  private readonly enums = new Map<string, EnumPlan>();

  constructor(root: DescriptorNode) {
    const walk = (node: DescriptorNode, prefix: string) => {
      for (const [name, child] of Object.entries(node.nested ?? {})) {
        const full = prefix ? `${prefix}.${name}` : name;
        this.nodes.set(full, child);
        walk(child, full);
      }
    };
    walk(root, '');
  }

  /** A node by its full name, e.g. 'etcdserverpb.KV'. */
  node(fullName: string): DescriptorNode | undefined {
    return this.nodes.get(fullName);
  }

  /** protobuf's scoping: `name` as seen from `scope`, looked up in it and then in each enclosing one. */
  resolve(name: string, scope: string): string {
    if (name.startsWith('.')) return name.slice(1);
    for (let s = scope; ; s = s.slice(0, Math.max(0, s.lastIndexOf('.')))) {
      const full = s ? `${s}.${name}` : name;
      if (this.nodes.has(full)) return full;
      if (!s) throw new Error(`protobuf: type ${name} not found from ${scope}`);
    }
  }

  message(fullName: string): MessagePlan {
    let plan = this.messages.get(fullName);
    if (plan) return plan;
    const node = this.nodes.get(fullName);
    if (!node?.fields) throw new Error(`protobuf: no message ${fullName}`);
    plan = { name: fullName, fields: [], byId: [] };
    // Stored before its fields are planned: a message may contain itself (TxnRequest).
    this.messages.set(fullName, plan);
    const oneofOf = new Map<string, string>();
    for (const [oneof, { oneof: members }] of Object.entries(node.oneofs ?? {})) for (const m of members) oneofOf.set(m, oneof);
    for (const [name, f] of Object.entries(node.fields)) {
      const repeated = f.rule === 'repeated';
      const field: FieldPlan = { name, where: `${fullName}.${name}`, id: f.id, kind: 'message', repeated, packed: false, oneof: oneofOf.get(name) };
      if (SCALARS.has(f.type)) field.kind = f.type as Kind;
      else {
        const target = this.resolve(f.type, fullName);
        if (this.nodes.get(target)?.values) {
          field.kind = 'enum';
          field.enumPlan = this.enumPlan(target);
        } else field.message = this.message(target);
      }
      field.packed = repeated && field.kind !== 'string' && field.kind !== 'bytes' && field.kind !== 'message';
      plan.fields.push(field);
      plan.byId[f.id] = field;
    }
    return plan;
  }

  private enumPlan(fullName: string): EnumPlan {
    let plan = this.enums.get(fullName);
    if (!plan) {
      const values = Object.entries(this.nodes.get(fullName)!.values!);
      plan = { byName: new Map(values), byId: new Map(values.map(([k, v]) => [v, k])), first: values[0][0] };
      this.enums.set(fullName, plan);
    }
    return plan;
  }
}

// ---- decoding ----

function defaultOf(f: FieldPlan): unknown {
  if (f.repeated) return [];
  switch (f.kind) {
    case 'string':
      return '';
    case 'bytes':
      return EMPTY;
    case 'bool':
      return false;
    case 'int64':
    case 'uint64':
      return '0';
    case 'uint32':
      return 0;
    case 'enum':
      return f.enumPlan!.first;
    case 'message':
      return null;
  }
}

function readValue(f: FieldPlan, r: ProtoReader): unknown {
  switch (f.kind) {
    case 'string':
      return r.string();
    case 'bytes':
      return r.bytes();
    case 'bool':
      return r.uint() !== 0;
    case 'int64':
      return r.varintString(true);
    case 'uint64':
      return r.varintString(false);
    case 'uint32':
      return r.uint32();
    case 'enum': {
      const n = r.uint();
      return f.enumPlan!.byId.get(n) ?? n;
    }
    case 'message':
      return decodeWith(f.message!, r.bytes());
  }
}

/** A message from its bytes, in the shape described at the top. */
export function decodeWith(plan: MessagePlan, bytes: Uint8Array): Obj {
  const out: Obj = {};
  for (const f of plan.fields) if (!f.oneof) out[f.name] = defaultOf(f);
  const r = new ProtoReader(bytes);
  while (!r.done) {
    const { field, wire } = r.tag();
    const f = plan.byId[field];
    if (!f) {
      r.skip(wire);
      continue;
    }
    if (!f.repeated) {
      out[f.name] = readValue(f, r);
      if (f.oneof) out[f.oneof] = f.name;
    } else if (wire === WIRE_LEN && f.packed) {
      const list = out[f.name] as unknown[];
      const sub = new ProtoReader(r.bytes());
      while (!sub.done) list.push(readValue(f, sub));
    } else (out[f.name] as unknown[]).push(readValue(f, r));
  }
  return out;
}

// ---- encoding ----

/** An integer as given (number, decimal string, bigint) in a form ProtoWriter writes. */
function integer(v: unknown, where: string): number | bigint {
  if (typeof v === 'number') return Math.trunc(v);
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string') {
    // Below 10^15 a double holds it exactly; longer ones (IDs) as bigints.
    const n = v.length <= 15 && v !== '' ? Number(v) : NaN;
    return Number.isInteger(n) ? n : BigInt(v);
  }
  throw new TypeError(`${where}: integer expected`);
}

/** A uint32 as protobufjs took it: a negative number (JavaScript's bitwise results are signed) by its low 32 bits. */
function uint32(v: unknown, where: string): number {
  const n = integer(v, where);
  return typeof n === 'number' ? n >>> 0 : Number(BigInt.asUintN(32, n));
}

function bytesOf(v: unknown, where: string): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (typeof v === 'string') return Buffer.from(v, 'base64');
  if (Array.isArray(v)) return Buffer.from(v as number[]);
  throw new TypeError(`${where}: bytes expected`);
}

/** An enum value as its number, or undefined for a name the enum does not have (left unset, as protobufjs did). */
function enumNumber(f: FieldPlan, v: unknown): number | undefined {
  return typeof v === 'number' ? v : f.enumPlan!.byName.get(String(v));
}

/** A varint field's value as ProtoWriter takes it; undefined for an enum name the enum does not have. */
function varintOf(f: FieldPlan, v: unknown): number | bigint | undefined {
  if (f.kind === 'bool') return v ? 1 : 0;
  if (f.kind === 'enum') return enumNumber(f, v);
  return f.kind === 'uint32' ? uint32(v, f.where) : integer(v, f.where);
}

function writeOne(w: ProtoWriter, f: FieldPlan, v: unknown, always: boolean): void {
  switch (f.kind) {
    case 'string':
      if (always || v !== '') w.bytesAlways(f.id, Buffer.from(String(v), 'utf8'));
      return;
    case 'bytes': {
      const b = bytesOf(v, f.where);
      if (always || b.length > 0) w.bytesAlways(f.id, b);
      return;
    }
    case 'bool':
    case 'int64':
    case 'uint64':
    case 'uint32':
    case 'enum': {
      const n = varintOf(f, v);
      if (n === undefined) return;
      if (always) w.intAlways(f.id, n);
      else w.int(f.id, n);
      return;
    }
    case 'message':
      if (typeof v !== 'object') throw new TypeError(`${f.where}: object expected`);
      w.message(f.id, (sub) => encodeInto(f.message!, v as Obj, sub));
  }
}

function encodeInto(plan: MessagePlan, value: Obj, w: ProtoWriter): void {
  for (const f of plan.fields) {
    const v = value[f.name];
    if (v == null) continue;
    if (!f.repeated) {
      // A set oneof member is written even when it holds its default: which member is set is the information.
      writeOne(w, f, v, f.oneof !== undefined);
      continue;
    }
    if (!Array.isArray(v)) throw new TypeError(`${f.where}: array expected`);
    if (!f.packed) {
      for (const item of v) writeOne(w, f, item, true);
    } else {
      const numbers: Array<number | bigint> = [];
      for (const item of v) {
        const n = varintOf(f, item);
        if (n !== undefined) numbers.push(n);
      }
      w.packed(f.id, numbers);
    }
  }
}

/** A message's bytes from its object form. */
export function encodeWith(plan: MessagePlan, value: object): Buffer {
  const w = new ProtoWriter(128);
  encodeInto(plan, value as Obj, w);
  // The writer is this message's alone: its bytes need no copy.
  return w.view();
}
