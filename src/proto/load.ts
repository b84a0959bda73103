// Loads our .proto files once. Field names stay as written in the .proto
// (keepCase): etcd's wire names, so handlers and clients use e.g. `cluster_id`.
// 64-bit integers travel as decimal strings so no ID loses precision.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** src/proto, found from both src/ (ts) and dist/src/ (compiled js). */
export const PROTO_DIR = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = here.includes(`${path.sep}dist${path.sep}`) ? path.resolve(here, '../../..') : path.resolve(here, '../..');
  return path.join(root, 'src', 'proto');
})();

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

let cached: grpc.GrpcObject | undefined;

/** The loaded gRPC object: etcdserverpb, mvccpb, authpb, grpc.health.v1 (and lifeboat.peer). */
export function loadProtos(): grpc.GrpcObject {
  if (!cached) {
    const files = ['rpc.proto', 'kv.proto', 'auth.proto', 'health.proto', 'peer.proto'].map((f) => path.join(PROTO_DIR, f));
    cached = grpc.loadPackageDefinition(protoLoader.loadSync(files, LOADER_OPTIONS));
  }
  return cached;
}

type ServiceCtor = grpc.ServiceClientConstructor;

function pick(obj: grpc.GrpcObject, dotted: string): ServiceCtor {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) cur = (cur as Record<string, unknown>)[part];
  if (!cur) throw new Error(`service ${dotted} not found in our protos`);
  return cur as ServiceCtor;
}

/** A service constructor by its full name, e.g. 'etcdserverpb.KV'. */
export function service(name: string): ServiceCtor {
  return pick(loadProtos(), name);
}
