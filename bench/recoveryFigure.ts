// Full recovery from permanent quorum loss, as `npm run demo` does it but at
// benchmark size: a 3-member Lifeboat cluster holding N keys loses two members,
// and the scripted recover-from-quorum-loss playbook rebuilds 3 healthy voters
// from the stopped survivor. Tool time is the wall time minus the configured
// stabilization waits (one per re-added member), which are reported apart.
import path from 'node:path';
import { AuditLog } from '../src/audit/index.js';
import { EtcdClient } from '../src/client/etcdClient.js';
import { prefixEnd } from '../src/client/keyRange.js';
import { killDetachedMembers } from '../scripts/demo/detachedMembers.js';
import { BIN, LifeboatCluster } from '../test/support/lifeboatCluster.js';
import { run } from '../test/support/tools.js';
import { onCleanup } from './cleanup.js';
import { fillKeys } from './fill.js';

export interface RecoveryFigures {
  keys: number;
  totalSeconds: number;
  stabilizationSeconds: number;
  toolSeconds: number;
  recoveredKeys: number;
  voters: number;
  /** Each step's wall time from the audit log, in playbook order (nested steps as parent/child). */
  steps: { step: string; seconds: number }[];
}

/** Where the time went, from the run's own audit record. */
function stepTimes(auditDb: string): { step: string; seconds: number }[] {
  const audit = AuditLog.open(auditDb, { readonly: true });
  try {
    const run = audit.runs().at(-1);
    if (!run) return [];
    return audit.steps(run.id).map((s) => ({ step: s.stepId, seconds: (s.durationMs ?? 0) / 1000 }));
  } finally {
    audit.close();
  }
}

export async function measureRecovery(opts: {
  keys: number;
  stabilizationSeconds: number;
  workers: number;
  valueSize: number;
  log: (s: string) => void;
}): Promise<RecoveryFigures> {
  const cluster = await LifeboatCluster.start('bench-recovery', 3);
  const stop = async () => {
    killDetachedMembers(cluster.dir);
    await cluster.stopAll();
  };
  const unregister = onCleanup(stop);
  try {
    const endpoints = cluster.endpoints();
    opts.log(`recovery: filling ${opts.keys.toLocaleString('en-US')} keys`);
    await fillKeys({ endpoints, from: 0, to: opts.keys, workers: opts.workers, valueSize: opts.valueSize });

    const [m1, m2, m3] = cluster.members as [(typeof cluster.members)[0], (typeof cluster.members)[0], (typeof cluster.members)[0]];
    await cluster.kill(m2);
    await cluster.kill(m3);
    await cluster.kill(m1, 'SIGTERM'); // the survivor, stopped cleanly so its data dir is the source
    const fresh = ['n2', 'n3'].map((n) => cluster.define(n));
    const recovered = cluster.define('r1');
    const members = fresh.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';');

    opts.log('recovery: two members lost; running the scripted recover-from-quorum-loss playbook');
    const t0 = performance.now();
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-from-quorum-loss',
        '--yes',
        '--reason',
        'benchmark: two members lost',
        '--audit-db',
        path.join(cluster.dir, 'audit.db'),
        '--set',
        `source=${m1.dataDir}`,
        '--set',
        `data-dir=${recovered.dataDir}`,
        '--set',
        'name=m1',
        '--set',
        `peer-url=${m1.peerUrl}`,
        '--set',
        `client-url=${recovered.clientUrl}`,
        '--set',
        `members=${members}`,
        '--set',
        `stabilization=${opts.stabilizationSeconds}s`,
      ],
      { env: { ...process.env, NO_COLOR: '1' }, timeoutMs: 600_000 },
    );
    const totalSeconds = (performance.now() - t0) / 1000;
    if (r.code !== 0) throw new Error(`the recovery playbook failed (exit ${r.code}): ${`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-4).join(' | ')}`);
    const steps = stepTimes(path.join(cluster.dir, 'audit.db'));
    opts.log(`recovery: steps ${steps.map((s) => `${s.step} ${s.seconds.toFixed(2)}s`).join(', ')}`);

    const client = new EtcdClient({ endpoints: [recovered.client], dialTimeoutMs: 5000, commandTimeoutMs: 30_000 });
    try {
      const count = await client.range('bench/', { rangeEnd: prefixEnd(Buffer.from('bench/')), countOnly: true });
      const list = await client.memberList();
      const stabilizationSeconds = fresh.length * opts.stabilizationSeconds;
      return {
        keys: opts.keys,
        totalSeconds,
        stabilizationSeconds,
        toolSeconds: totalSeconds - stabilizationSeconds,
        recoveredKeys: count.count,
        voters: list.members.filter((m) => !m.isLearner).length,
        steps,
      };
    } finally {
      client.close();
    }
  } finally {
    await stop();
    unregister();
  }
}
