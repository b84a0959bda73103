// Service definitions for our .proto files, with our own codec
// (codec.ts) planned from the descriptor `npm run build` writes next to this
// module (scripts/build/writeDescriptor.ts). Field names stay as written in the .proto: etcd's
// wire names, so handlers and clients use e.g. `cluster_id`. 64-bit integers
// travel as decimal strings so no ID loses precision.
//
// Not @grpc/proto-loader: it also builds and encodes a descriptor of every
// message for reflection we never serve, which was a third of a CLI command's
// start-up (`snapshot save` is measured against etcdctl's).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Codec, decodeWith, encodeWith, type DescriptorNode, type MessagePlan } from './codec.js';
import { PARTS_ENCODERS, withParts } from './messageParts.js';

/** Our .proto files, parsed at build (dist/src/proto/descriptor.json). */
export const DESCRIPTOR_JSON = path.join(path.dirname(fileURLToPath(import.meta.url)), 'descriptor.json');

let codec: Codec | undefined;
const services = new Map<string, ServiceDefinition>();

/** One method of a service: its path, whether each side streams, and its messages' codec (grpc-js's MethodDefinition). */
export interface MethodDefinition {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize: (value: object) => Buffer;
  requestDeserialize: (bytes: Buffer) => object;
  responseSerialize: (value: object) => Buffer;
  responseDeserialize: (bytes: Buffer) => object;
  originalName: string;
}

/** A service's methods by name, e.g. `Range`. */
export type ServiceDefinition = Record<string, MethodDefinition>;

function ourCodec(): Codec {
  if (!codec) {
    let json: string;
    try {
      json = readFileSync(DESCRIPTOR_JSON, 'utf8');
    } catch {
      throw new Error(`${DESCRIPTOR_JSON} is missing: run 'npm run build'`);
    }
    codec = new Codec(JSON.parse(json) as DescriptorNode);
  }
  return codec;
}

function methodDefinition(c: Codec, service: string, name: string, m: NonNullable<DescriptorNode['methods']>[string]): MethodDefinition {
  const scope = service.slice(0, service.lastIndexOf('.'));
  const req = c.message(c.resolve(m.requestType, scope));
  const res = c.message(c.resolve(m.responseType, scope));
  const encode = (plan: MessagePlan) => (value: object) => encodeWith(plan, value);
  const decode = (plan: MessagePlan) => (bytes: Buffer) => decodeWith(plan, bytes);
  return {
    path: `/${service}/${name}`,
    requestStream: !!m.requestStream,
    responseStream: !!m.responseStream,
    requestSerialize: encode(req),
    requestDeserialize: decode(req),
    responseSerialize: handEncoded(res, encode(res)),
    responseDeserialize: decode(res),
    // grpc-js also names client methods this way (Range and range).
    originalName: name.charAt(0).toLowerCase() + name.slice(1),
  };
}

/** The generic serializer, or for a message with a hand encoder (messageParts.ts) one that also gives it in parts. */
function handEncoded(plan: MessagePlan, generic: (value: object) => Buffer): (value: object) => Buffer {
  const hand = PARTS_ENCODERS.get(plan.name);
  return hand ? withParts(generic, hand) : generic;
}

/** A service's definition by its full name, e.g. 'etcdserverpb.KV'. */
export function serviceDefinition(name: string): ServiceDefinition {
  let def = services.get(name);
  if (!def) {
    const c = ourCodec();
    const methods = c.node(name)?.methods;
    if (!methods) throw new Error(`service ${name} not found in our protos`);
    def = Object.fromEntries(Object.entries(methods).map(([m, d]) => [m, methodDefinition(c, name, m, d)]));
    services.set(name, def);
  }
  return def;
}
