// Loads our .proto files once, with protobufjs, and builds grpc-js service
// definitions from them. Field names stay as written in the .proto (keepCase):
// etcd's wire names, so handlers and clients use e.g. `cluster_id`. 64-bit
// integers travel as decimal strings so no ID loses precision.
//
// Not @grpc/proto-loader: it also builds and encodes a descriptor of every
// message for reflection we never serve, which was a third of a CLI command's
// start-up (`snapshot save` is measured against etcdctl's).
import * as grpc from '#grpc-js';
import protobuf from '#protobufjs';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { PARTS_ENCODERS, withParts } from './messageParts.js';

/** src/proto, found from both src/ (ts) and dist/src/ (compiled js). */
const PROTO_DIR = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = here.includes(`${path.sep}dist${path.sep}`) ? path.resolve(here, '../../..') : path.resolve(here, '../..');
  return path.join(root, 'src', 'proto');
})();

const FILES = ['rpc.proto', 'kv.proto', 'auth.proto', 'health.proto', 'peer.proto'];

/** How decoded messages look to handlers and clients. */
const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true };

let root: protobuf.Namespace | undefined;
const services = new Map<string, grpc.ServiceClientConstructor>();

/** Our .proto files parsed (protobufjs's parser: about 13 ms at every start). */
export function parseProtoFiles(): protobuf.Root {
  const r = new protobuf.Root();
  // Imports name files in PROTO_DIR ("kv.proto").
  r.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(PROTO_DIR, target));
  return r.loadSync(FILES, { keepCase: true });
}

/**
 * The same, as `npm run build` wrote it next to this module (writeDescriptor.ts):
 * read in about a third of the time. Without it (not built), the files are parsed.
 */
export const DESCRIPTOR_JSON = path.join(path.dirname(fileURLToPath(import.meta.url)), 'descriptor.json');

function protoRoot(): protobuf.Namespace {
  if (!root) {
    let json: string | undefined;
    try {
      json = readFileSync(DESCRIPTOR_JSON, 'utf8');
    } catch {
      json = undefined;
    }
    root = (json === undefined ? parseProtoFiles() : protobuf.Root.fromJSON(JSON.parse(json) as protobuf.INamespace)).resolveAll();
  }
  return root;
}

function methodDefinition(service: string, m: protobuf.Method): grpc.MethodDefinition<object, object> {
  const req = m.resolvedRequestType!;
  const res = m.resolvedResponseType!;
  const encode = (t: protobuf.Type) => (value: object) => t.encode(t.fromObject(value)).finish() as Buffer;
  const decode = (t: protobuf.Type) => (bytes: Buffer) => t.toObject(t.decode(bytes), TO_OBJECT);
  return {
    path: `/${service}/${m.name}`,
    requestStream: !!m.requestStream,
    responseStream: !!m.responseStream,
    requestSerialize: encode(req),
    requestDeserialize: decode(req),
    responseSerialize: handEncoded(res, encode(res)),
    responseDeserialize: decode(res),
    // grpc-js also names client methods this way (Range and range).
    originalName: m.name.charAt(0).toLowerCase() + m.name.slice(1),
  };
}

/** The generic serializer, or for a message with a hand encoder (messageParts.ts) one that also gives it in parts. */
function handEncoded(t: protobuf.Type, generic: (value: object) => Buffer): (value: object) => Buffer {
  const hand = PARTS_ENCODERS.get(t.fullName.replace(/^\./, ''));
  return hand ? withParts(generic, hand) : generic;
}

/** A service constructor by its full name, e.g. 'etcdserverpb.KV'. */
export function service(name: string): grpc.ServiceClientConstructor {
  let ctor = services.get(name);
  if (!ctor) {
    const svc = protoRoot().lookup(name);
    if (!(svc instanceof protobuf.Service)) throw new Error(`service ${name} not found in our protos`);
    const def = Object.fromEntries(svc.methodsArray.map((m) => [m.name, methodDefinition(name, m)]));
    ctor = grpc.makeClientConstructor(def, name);
    services.set(name, ctor);
  }
  return ctor;
}
