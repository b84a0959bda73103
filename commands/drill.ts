import { Flags } from '#oclif-core';
import { auditDbFlag } from '../src/cli/auditFlags.js';
import { connectionFromFlags, durationFlag, EtcdCommand } from '../src/cli/baseCommand.js';
import { EXIT } from '../src/cli/exitCodes.js';
import { drillOutput } from '../src/cli/output/drill.js';
import { runDrill } from '../src/drill/drill.js';
import { parseRuntimeChoice } from '../src/ops/runtime.js';

export default class Drill extends EtcdCommand {
  static override summary = 'Restore a snapshot into a scratch cluster, verify it against the source, and measure the recovery time.';

  static override description = `A recovery drill. Takes a snapshot of the cluster at --endpoints (Lifeboat or etcd), or uses --from-snapshot FILE, restores it into a scratch cluster of the same runtime on 127.0.0.1 (one member; --members 3 re-adds two as learners and promotes them, as recovery does), and checks it: the key count and HashKV at the snapshot's revision equal the source's (HashKV while the source still holds that revision and both sides are compacted alike, else a sampled key-by-key comparison; it says which), it accepts a write, and its members are healthy. Prints the recovery time it demonstrated (snapshot, restore, first write, each member caught up), records the drill in the audit log as a run of kind drill, and tears the scratch cluster down (--keep leaves it running and prints its endpoints). The source only ever sees reads. Exit 0: passed; 1: a check failed (named); 2: bad flags or files.`;

  static override examples = [
    '<%= config.bin %> drill --endpoints 10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379',
    '<%= config.bin %> drill --endpoints 10.0.0.1:2379 --members 3 --prometheus /var/lib/node_exporter/textfile/lifeboat_drill.prom',
    '<%= config.bin %> drill --endpoints 10.0.0.1:2379 --from-snapshot /backups/etcd-2026-11-22.db -w json',
  ];

  static override flags = {
    'from-snapshot': Flags.string({ description: 'restore this snapshot file instead of taking one now', helpValue: 'FILE' }),
    members: Flags.integer({ description: 'members of the scratch cluster (the first restored, the others re-added as learners and promoted)', default: 1 }),
    runtime: Flags.string({ description: "scratch members' runtime: auto (the snapshot's), lifeboat, etcd", default: 'auto' }),
    'etcd-bin': Flags.string({ description: 'the etcd binary for an etcd scratch cluster (default: etcd on PATH)', helpValue: 'PATH' }),
    keep: Flags.boolean({ description: 'leave the scratch cluster running and print its endpoints', default: false }),
    'scratch-dir': Flags.string({ description: 'a new or empty dir for the scratch data dirs and snapshot (default: a temp dir)', helpValue: 'DIR' }),
    'ports-from': Flags.integer({ description: 'scratch members listen on free 127.0.0.1 ports from this one up (default: ports the OS picks)' }),
    stabilization: durationFlag('stabilization', 5000, '5s', 'how long a re-added learner must stay caught up before it is promoted'),
    sample: Flags.integer({ description: 'keys compared one by one when HashKV cannot be', default: 1000 }),
    prometheus: Flags.string({ description: "write the result for node_exporter's textfile collector (FILE.tmp, then renamed)", helpValue: 'FILE' }),
    reason: Flags.string({ description: 'why, for the audit log', default: 'recovery drill' }),
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Drill);
    const abort = new AbortController();
    const onSignal = () => abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const result = await runDrill({
        endpoints: flags.endpoints
          .split(',')
          .map((e) => e.trim())
          .filter((e) => e !== ''),
        conn: connectionFromFlags(flags),
        ...(flags['from-snapshot'] !== undefined ? { fromSnapshot: flags['from-snapshot'] } : {}),
        members: flags.members,
        runtime: parseRuntimeChoice(flags.runtime),
        ...(flags['etcd-bin'] !== undefined ? { etcdBin: flags['etcd-bin'] } : {}),
        keep: flags.keep,
        ...(flags['scratch-dir'] !== undefined ? { scratchDir: flags['scratch-dir'] } : {}),
        ...(flags['ports-from'] !== undefined ? { portsFrom: flags['ports-from'] } : {}),
        stabilizationMs: flags.stabilization,
        sampleSize: flags.sample,
        reason: flags.reason,
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        ...(flags.prometheus !== undefined ? { prometheus: flags.prometheus } : {}),
        onProgress: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`),
        signal: abort.signal,
      });
      this.print(flags['write-out'], result, drillOutput);
      if (!result.passed) this.exit(EXIT.FAILURE);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
