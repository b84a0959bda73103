// A full: Maintenance.Snapshot from one member streamed to a file (trailer
// checked: src/client/snapshotSave.ts), its revision, key count and compact
// revision read from the file itself (never from a read made before the
// stream), HashKV at that revision recorded as the full's hash point, then the
// plain snapshot bytes encoded (compressed, encrypted) for the store. The agent
// spools the result; `backup full` uploads it at once.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { EtcdClient } from '../../client/etcdClient.js';
import { saveSnapshot } from '../../client/snapshotSave.js';
import { runtimeOfVersion, type RuntimeName } from '../../ops/runtime.js';
import { snapshotStatus } from '../../recovery/snapshotFormat.js';
import { clusterIdText, fullKey, manifestKeyOf } from '../layout.js';
import { agentIdentity, MANIFEST_FORMAT, type FullManifest, type HashPoint } from '../manifest.js';
import { encodeObject, type EncodeOptions } from '../objectCodec.js';
import { snapshotRevision } from '../snapshotRevision.js';

export interface TakenFull {
  key: string;
  manifestKey: string;
  manifest: FullManifest;
  /** the encoded object, ready to upload */
  dataFile: string;
  /** when the snapshot stream started: every later revision happened after it */
  startedAtMs: number;
}

export interface FullSkipped {
  skipped: true;
  revision: number;
}

/**
 * Take a full from the member `client` is connected to, encoded into `dataFile`;
 * `workDir` holds the plain snapshot meanwhile. With `unlessAt`, a cluster still
 * at that revision (nothing written since the last full) is skipped.
 */
export async function takeFull(
  client: EtcdClient,
  workDir: string,
  dataFile: string,
  codec: EncodeOptions,
  unlessAt?: number,
): Promise<TakenFull | FullSkipped> {
  const endpoint = await client.activeEndpoint();
  const one = client.forEndpoint(endpoint);
  const plain = path.join(workDir, `full-${process.pid}-${Date.now()}.db`);
  try {
    const status = await one.status();
    if (unlessAt !== undefined && status.header.revision === unlessAt) return { skipped: true, revision: unlessAt };
    const runtime: RuntimeName = runtimeOfVersion(status.version);
    const member = (await one.memberList()).members.find((m) => m.id === status.header.memberId);
    const startedAtMs = Date.now();
    await saveSnapshot(one.target, plain);
    const snap = await snapshotStatus(plain);
    const revision = snapshotRevision(snap);
    const hashPoints: HashPoint[] = [];
    let compactRevision = snap.etcd?.compactRevision ?? 0;
    try {
      const h = await one.hashKV(revision);
      hashPoints.push({ revision, hash: h.hash, compactRevision: h.compactRevision });
      compactRevision = h.compactRevision;
    } catch {
      // compacted past the full already: the full stands, without a hash point
    }
    const clusterId = status.header.clusterId;
    const key = fullKey(clusterId, revision, startedAtMs, codec.compression, codec.recipients.length > 0);
    const stored = await encodeObject(plain, dataFile, codec);
    const manifest: FullManifest = {
      format: MANIFEST_FORMAT,
      kind: 'full',
      clusterId: clusterIdText(clusterId),
      fromRevision: revision,
      toRevision: revision,
      createdAt: new Date().toISOString(),
      agent: agentIdentity(),
      object: key,
      ...stored,
      runtime,
      member: { id: status.header.memberId.toString(16), name: member?.name ?? '', endpoint },
      revision,
      compactRevision: Math.max(0, compactRevision),
      keyCount: snap.etcd?.liveKeys ?? snap.totalKeys,
      takenAt: new Date(startedAtMs).toISOString(),
      hashPoints,
    };
    return { key, manifestKey: manifestKeyOf(key), manifest, dataFile, startedAtMs };
  } finally {
    one.close();
    await fs.rm(plain, { force: true });
  }
}
