// Steps for space and data-dir maintenance: compact, defrag (one member at a
// time), disarm-alarm, check-writes, pack-data-dir, unpack-data-dir.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packDataDir, unpackDataDir } from '../../recovery/dataDirArchive.js';
import { clientFor } from '../../client/etcdClient.js';
import { findLeader, memberList } from '../../ops/memberOps.js';
import { SafetyCheckError, type StepDefinition } from '../stepTypes.js';
import { existingOutput } from '../../common/outputFile.js';

function sha256Of(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

const endpointsParam = { type: 'list' as const, required: true, description: 'client URLs of the cluster' };

export const compact: StepDefinition = {
  type: 'compact',
  description: "Compact the key-value history up to the cluster's current revision.",
  params: { endpoints: endpointsParam },
  describe: (p) => [`compact history up to the current revision at ${(p.endpoints as string[]).join(', ')}`],
  async run(p, ctx) {
    const { endpoint, status } = await findLeader(p.endpoints as string[], ctx.connection);
    const c = clientFor([endpoint], ctx.connection);
    try {
      const rev = status.header.revision;
      try {
        await c.compact(rev, { physical: true });
      } catch (e) {
        if (!/required revision has been compacted/.test((e as Error).message)) throw e;
      }
      ctx.progress(`compacted at revision ${rev}`);
      return { revision: rev };
    } finally {
      c.close();
    }
  },
};

export const defrag: StepDefinition = {
  type: 'defrag',
  description: 'Defragment every member, one at a time (a member blocks while it defragments).',
  params: { endpoints: endpointsParam },
  describe: () => ['defragment each member in turn'],
  async run(p, ctx) {
    const members = await memberList(p.endpoints as string[], ctx.connection);
    const sizes: Record<string, number> = {};
    for (const m of members) {
      const url = m.clientURLs[0];
      if (!url) continue;
      const c = clientFor([url], { ...ctx.connection, commandTimeoutMs: Math.max(ctx.connection.commandTimeoutMs, 60_000) });
      try {
        await c.defragment();
        sizes[m.name || m.id.toString(16)] = (await c.status()).dbSize;
        ctx.progress(`defragmented ${m.name || m.id.toString(16)}: ${sizes[m.name || m.id.toString(16)]} bytes`);
      } finally {
        c.close();
      }
    }
    return { dbSize: sizes };
  },
};

export const disarmAlarm: StepDefinition = {
  type: 'disarm-alarm',
  description: 'Deactivate every active alarm (after the cause, e.g. NOSPACE, is fixed).',
  params: { endpoints: endpointsParam },
  describe: () => ['disarm all alarms'],
  async run(p, ctx) {
    const c = clientFor(p.endpoints as string[], ctx.connection);
    try {
      const before = (await c.alarmList()).alarms.length;
      await c.alarmDisarmAll();
      ctx.progress(`disarmed ${before} alarm(s)`);
      return { disarmed: before };
    } finally {
      c.close();
    }
  },
};

export const checkWrites: StepDefinition = {
  type: 'check-writes',
  description: 'Write, read back and delete a probe key: the cluster takes writes again.',
  params: { endpoints: endpointsParam, key: { type: 'string', default: '/lifeboat/probe', description: 'the probe key' } },
  describe: (p) => [`write and delete ${String(p.key)}`],
  async run(p, ctx) {
    const c = clientFor(p.endpoints as string[], ctx.connection);
    const key = String(p.key);
    const value = `probe-${Date.now()}`;
    try {
      const put = await c.put(key, value);
      const got = await c.range(key);
      if (got.kvs[0]?.value.toString() !== value) throw new Error(`read back ${got.kvs[0]?.value.toString() ?? 'nothing'} for ${key}, wrote ${value}`);
      await c.deleteRange(key);
      ctx.progress(`write accepted at revision ${put.header.revision}`);
      return { revision: put.header.revision };
    } finally {
      c.close();
    }
  },
};

export const packDataDirStep: StepDefinition = {
  type: 'pack-data-dir',
  description: "Pack a stopped member's data dir into a .tar.gz with a checksum manifest.",
  params: { 'data-dir': { type: 'path', required: true, description: 'the data dir' }, out: { type: 'path', required: true, description: 'the archive' } },
  describe: (p) => [`pack ${String(p['data-dir'])} into ${String(p.out)}`],
  async run(p, ctx) {
    const out = String(p.out);
    // Never over a file this run did not write (it may be the only copy of something); an archive an
    // earlier attempt of this run wrote (its sha256 recorded in the run dir) is packed again.
    const mine = path.join(ctx.runDir, `packed-${createHash('sha256').update(path.resolve(out)).digest('hex').slice(0, 16)}.sha256`);
    const there = existingOutput(out);
    if (there !== undefined && !(fs.existsSync(mine) && fs.readFileSync(mine, 'utf8') === sha256Of(out))) {
      throw new SafetyCheckError(`archive ${there}, not written by this run; move it away, or give the archive another path`);
    }
    const r = await packDataDir(String(p['data-dir']), out);
    fs.writeFileSync(mine, r.sha256);
    ctx.progress(`${r.files} files, ${r.bytes} bytes`);
    return { ...r };
  },
};

export const unpackDataDirStep: StepDefinition = {
  type: 'unpack-data-dir',
  description: 'Unpack an archive into a new data dir, every checksum verified first.',
  params: {
    archive: { type: 'path', required: true, description: 'the archive' },
    'data-dir': { type: 'path', required: true, description: 'the new data dir' },
  },
  describe: (p) => [`unpack ${String(p.archive)} into ${String(p['data-dir'])}`],
  async run(p, ctx) {
    const r = await unpackDataDir(String(p.archive), String(p['data-dir']));
    ctx.progress(
      r.alreadyUnpacked
        ? `${String(p['data-dir'])} already holds exactly ${String(p.archive)}'s ${r.files} files; keeping it`
        : `${r.files} files, ${r.bytes} bytes`,
    );
    return { ...r };
  },
};
