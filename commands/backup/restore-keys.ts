import fs from 'node:fs';
import { Args, Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { openBackupStore, STORE_FLAGS, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { interactive } from '../../src/cli/confirm.js';
import { readIdentityFiles } from '../../src/cli/output/backupVerify.js';
import { restoreKeysApplied, restoreKeysPlanned } from '../../src/cli/output/restoreKeys.js';
import { parseDuration } from '../../src/common/durations.js';
import { InputError, RefusedError } from '../../src/common/errors.js';
import { applyRestoreKeys, planRestoreKeys } from '../../src/backup/restoreKeys.js';
import { readPlan, type RestoreKeysPlan } from '../../src/backup/restoreKeysPlan.js';

export default class BackupRestoreKeys extends EtcdCommand {
  static override summary = 'Put keys back into the live cluster as they were at a point of the backup, without stopping anything.';

  static override description = `Replays the backup to the point (see 'backup restore' for POINT) in a scratch member, reads the keys under each --prefix (or a Kubernetes namespace's: every /registry/<resource>/NS/ plus /registry/namespaces/NS) there and in the live cluster at --endpoints, and plans: keys that come back, keys that would be overwritten, keys created since (left alone unless --delete-newer). A dry run (the default on a terminal) prints the plan; '--dry-run -w json > plan.json' and then '--plan plan.json' apply exactly what was reviewed. Each key is written in a Txn guarded by the mod revision the plan saw, at most 128 keys a Txn: a key changed since is refused and counted, never overwritten. A key that had a lease gets a fresh one with the recorded TTL (none with --drop-leases). Refused when the live cluster is not in the store's lineage (unless --allow-other-cluster). Without a terminal it needs --yes or --plan (exit 3 otherwise). The apply is an audit run; it ends with the counts of restored, skipped and refused keys.`;

  static override examples = [
    '<%= config.bin %> backup restore-keys file:///srv/backups --prefix /config/ --at -10m --endpoints https://10.0.0.1:2379',
    '<%= config.bin %> backup restore-keys s3://backups/etcd --k8s-namespace shop --at 2026-12-01T14:05:00Z --dry-run -w json > plan.json',
    '<%= config.bin %> backup restore-keys --plan plan.json --endpoints https://10.0.0.1:2379',
  ];

  static override args = {
    store: Args.string({ description: 'the store: file:///dir or s3://bucket/prefix (not with --plan)' }),
  };

  static override flags = {
    ...STORE_FLAGS,
    prefix: Flags.string({ description: 'a key prefix to restore; repeatable', helpValue: 'PREFIX', multiple: true }),
    'k8s-namespace': Flags.string({
      description: "a Kubernetes namespace's keys: every /registry/<resource>/NS/ and /registry/namespaces/NS",
      helpValue: 'NS',
    }),
    at: Flags.string({ description: 'the point: CLUSTERID:REV, REV, an RFC 3339 time, -DURATION or latest', helpValue: 'POINT' }),
    'dry-run': Flags.boolean({ description: 'print the plan and change nothing (the default on a terminal without --yes)', default: false }),
    plan: Flags.string({ description: "apply this plan (written by '--dry-run -w json') exactly", helpValue: 'FILE' }),
    yes: Flags.boolean({ description: 'apply without a terminal', default: false }),
    'delete-newer': Flags.boolean({ description: 'delete keys under the prefixes that were created since the point', default: false }),
    'drop-leases': Flags.boolean({ description: 'write the keys without leases (default: a fresh lease with the recorded TTL)', default: false }),
    'allow-other-cluster': Flags.boolean({ description: "restore into a cluster that is not in the store's lineage", default: false }),
    cluster: Flags.string({ description: 'the cluster ID (16 hex digits) of the backup, when the store holds more than one', helpValue: 'ID' }),
    'max-time-uncertainty': Flags.string({ description: 'refuse a time inside a revision window wider than this', default: '30s', helpValue: 'DURATION' }),
    'accept-uncertain-time': Flags.boolean({ description: 'use the last revision seen before the time even when it is uncertain', default: false }),
    'identity-file': Flags.string({ description: 'an age identity file for an encrypted store; repeatable; never printed', helpValue: 'FILE', multiple: true }),
    'etcd-bin': Flags.string({ description: 'the etcd binary for a backup of an etcd cluster (default: etcd on PATH)', helpValue: 'PATH' }),
    reason: Flags.string({ description: 'why, for the audit log', default: 'restore keys from a backup' }),
    'audit-db': auditDbFlag,
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BackupRestoreKeys);
    const live = this.client(flags);
    const say = (line: string) => process.stderr.write(`${line}\n`);
    let plan: RestoreKeysPlan;
    if (flags.plan !== undefined) {
      if (args.store || flags.at || flags.prefix || flags['k8s-namespace'])
        throw new InputError('--plan applies a plan as it was made: give no STORE, --at, --prefix or --k8s-namespace with it');
      let text: string;
      try {
        text = fs.readFileSync(flags.plan, 'utf8');
      } catch (e) {
        throw new InputError(`--plan ${flags.plan}: cannot read it (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`);
      }
      plan = readPlan(text, flags.plan);
    } else {
      if (!args.store) throw new InputError('no store given: give STORE (file:///dir or s3://bucket/prefix), or --plan FILE');
      if (!flags.at) throw new InputError('no point given: give --at (CLUSTERID:REV, REV, an RFC 3339 time, -DURATION or latest)');
      if (!flags.prefix?.length && !flags['k8s-namespace']) throw new InputError('nothing to restore: give --prefix PREFIX (repeatable) or --k8s-namespace NS');
      if (flags.prefix?.length && flags['k8s-namespace']) throw new InputError('give --prefix or --k8s-namespace, not both');
      const dryRun = flags['dry-run'] || (interactive() && !flags.yes);
      if (!dryRun && !flags.yes)
        throw new RefusedError(
          'refusing to write to the live cluster without a terminal: pass --yes, or review a plan with --dry-run -w json and apply it with --plan',
        );
      const store = await openBackupStore(args.store, flags);
      try {
        plan = await planRestoreKeys({
          store,
          at: flags.at,
          prefixes: flags.prefix ?? [],
          ...(flags['k8s-namespace'] ? { namespace: flags['k8s-namespace'] } : {}),
          live,
          ...(flags.cluster ? { clusterId: flags.cluster.toLowerCase().padStart(16, '0') } : {}),
          deleteNewer: flags['delete-newer'],
          dropLeases: flags['drop-leases'],
          allowOtherCluster: flags['allow-other-cluster'],
          maxTimeUncertaintyMs: parseDuration(flags['max-time-uncertainty'], '--max-time-uncertainty'),
          acceptUncertainTime: flags['accept-uncertain-time'],
          identities: readIdentityFiles(flags['identity-file'] ?? []),
          ...(flags['etcd-bin'] ? { etcdBin: flags['etcd-bin'] } : {}),
          onProgress: say,
        });
      } catch (e) {
        tagStoreError(e);
        throw e;
      } finally {
        store.close();
      }
      if (dryRun) {
        this.print(flags['write-out'], plan, restoreKeysPlanned);
        return;
      }
    }
    const result = await applyRestoreKeys({ plan, live, reason: flags.reason, ...(flags['audit-db'] ? { auditDb: flags['audit-db'] } : {}), onProgress: say });
    this.print(flags['write-out'], result, restoreKeysApplied);
  }
}
