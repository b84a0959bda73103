// The one codec of the requests Raft entries carry: etcd's InternalRaftRequest
// protobuf, one request per entry, each family in its own file with etcd's field
// numbers and messages: KV requests (kvRequestCodec.ts), lease grants and
// revocations (leaseRequestCodec.ts), alarms and a member's published attributes
// (clusterRequestCodec.ts), auth requests (authRequestCodec.ts). Here: the
// request's ID=1, who asked (header=100, a client's request; the member's own carry
// none), and which family a field belongs to. The decoder skips fields it does not
// know, so a whole etcd entry decodes as well as one of ours.

import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';
import { HEADER_FIELD, isAuthField, readAuth, readHeader, writeAuth, writeHeader, type AuthInfo, type AuthRequest } from './authRequestCodec.js';
import { isClusterField, readClusterRequest, writeClusterRequest, type ClusterRequest } from './clusterRequestCodec.js';
import { readKvRequest, writeKvRequest } from './kvRequestCodec.js';
import { readLeaseRequest, writeLeaseRequest, type LeaseRequest } from './leaseRequestCodec.js';
import type { KvRequest } from './types.js';

const ID_FIELD = 1;
/** Fields read as messages whatever their wire type: a wrong one fails as malformed instead of being skipped. */
const MESSAGE_FIELDS = new Set([3, 4, 5, 6, 7, 8, 9, 10, 20]);

/** The member's own requests: publishing its name and client URLs, alarms, lease grants and revocations, auth changes. */
export type ServerRequest = ClusterRequest | LeaseRequest | { auth: AuthRequest };

/** A whole InternalRaftRequest as decoded from an entry. */
export interface DecodedEntryRequest {
  /** InternalRaftRequest.ID: the proposer's request ID (0n when none was given). */
  id: bigint;
  /** The KV request, if the entry holds one. */
  kv?: KvRequest;
  /** The member's own request, if the entry holds one. */
  server?: ServerRequest;
  /** Who asked, for a client's request (username "" and revision 0: no token). */
  header?: AuthInfo;
}

export interface DecodedRequest {
  /** InternalRaftRequest.ID: the proposer's request ID (0n when none was given). */
  id: bigint;
  /** Absent when the entry holds no KV request (another kind, or an empty entry). */
  request?: KvRequest;
}

/** Encodes a KV request or one of the member's own. */
export function encodeRequest(request: KvRequest | ServerRequest, id: bigint = 0n, header?: AuthInfo): Buffer {
  const w = new ProtoWriter(128);
  w.int(ID_FIELD, id);
  if (header) writeHeader(w, id, header);
  if ('range' in request || 'put' in request || 'deleteRange' in request || 'txn' in request || 'compaction' in request) writeKvRequest(w, request);
  else if ('leaseGrant' in request || 'leaseRevoke' in request) writeLeaseRequest(w, request);
  else if ('publish' in request || 'alarm' in request) writeClusterRequest(w, request);
  else if ('auth' in request) writeAuth(w, request.auth);
  else throw new Error(`encodeRequest: unknown request kind ${Object.keys(request).join(',')}`);
  return w.finish();
}

/**
 * The request in one InternalRaftRequest field (its bytes), if the field holds one
 * this codec knows: what decodeRequest reads each field with, and what a reader of
 * etcd's WAL describes one field with. Keys and values are views into `data`.
 */
export function decodeRequestField(field: number, data: Uint8Array): { kv: KvRequest } | { server: ServerRequest } | undefined {
  const kv = readKvRequest(field, data);
  if (kv) return { kv };
  const server = readLeaseRequest(field, data) ?? (isClusterField(field) ? readClusterRequest(field, data) : undefined);
  if (server) return { server };
  const auth = isAuthField(field) ? readAuth(field, data) : undefined;
  return auth && { server: { auth } };
}

/**
 * Decodes an entry's whole request, once; the keys and values returned are views
 * into `data`. The last KV field and the first server field count.
 */
export function decodeRequest(data: Uint8Array): DecodedEntryRequest {
  const r = new ProtoReader(data);
  const out: DecodedEntryRequest = { id: 0n };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === ID_FIELD) out.id = r.uint64();
    else if (field === HEADER_FIELD) out.header = readHeader(r.bytes());
    else if (wire === 2 || MESSAGE_FIELDS.has(field)) {
      const one = decodeRequestField(field, r.bytes());
      if (one && 'kv' in one) out.kv = one.kv;
      else if (one) out.server ??= one.server;
    } else r.skip(wire);
  }
  return out;
}

export function encodeKvRequest(request: KvRequest, id: bigint = 0n): Buffer {
  return encodeRequest(request, id);
}

/** The KV request in an entry, if any (the member's own requests yield none). */
export function decodeKvRequest(data: Uint8Array): DecodedRequest {
  const { id, kv } = decodeRequest(data);
  return kv ? { id, request: kv } : { id };
}

export function encodeServerRequest(req: ServerRequest, id: bigint): Buffer {
  return encodeRequest(req, id);
}

/** The member's own request in an entry, if it holds one (KV requests yield undefined). */
export function decodeServerRequest(data: Uint8Array): ServerRequest | undefined {
  return decodeRequest(data).server;
}
