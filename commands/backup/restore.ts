import { Args, Flags } from '#oclif-core';
import { BaseCommand, credentialsFor } from '../../src/cli/baseCommand.js';
import { openBackupStore, STORE_FLAGS, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { readPasswordFile } from '../../src/cli/connectionFlags.js';
import { readIdentityFiles } from '../../src/cli/output/backupVerify.js';
import { backupRestoreOutput } from '../../src/cli/output/backupRestore.js';
import { parseDuration } from '../../src/common/durations.js';
import { InputError } from '../../src/common/errors.js';
import { FORCE_FLAG_DESCRIPTION, refuseExistingOutput } from '../../src/common/outputFile.js';
import { materialize } from '../../src/backup/materialize.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default class BackupRestore extends BaseCommand {
  static override summary = 'Materialize a snapshot of the cluster as it was at a revision or a time, from a backup store.';

  static override description = `POINT is CLUSTERID:REV, REV (refused when two clusters in the store have it), an RFC 3339 time (2026-12-01T14:05:00Z), a relative time (-15m: that long ago) or latest. A time maps to the last revision the agent saw at or before it; when a later revision may also have happened before it (the agent was not current: an outage) the mapping is uncertain by that window, and a window wider than --max-time-uncertainty is refused unless --accept-uncertain-time. The newest intact full at or before the point and the segments after it are replayed into a scratch member of the source's runtime (a damaged full is passed over for an older one, saying so); what will be used is printed before it starts. The output is a snapshot at exactly that revision, with the leases the cluster had (--drop-leases: the keys detached from them, the leases removed), in the source's format: 'lifeboat snapshot restore', 'lifeboat drill' and, for an etcd source, 'etcdctl snapshot restore' take it. Nothing is written to FILE unless the whole restore succeeds. Exit 0: written; 1: an object is damaged or missing; 2: bad input; 3: the point cannot be restored (a gap, outside the window, an uncertain time) or FILE exists.`;

  static override examples = [
    '<%= config.bin %> backup restore file:///srv/backups --at latest --output /tmp/latest.db',
    '<%= config.bin %> backup restore s3://backups/etcd --at 2026-12-01T14:05:00Z --output before-the-deploy.db --identity-file key.txt',
    '<%= config.bin %> backup restore file:///srv/backups --at -15m --output fifteen-minutes-ago.db',
  ];

  static override args = {
    store: Args.string({ description: 'the store: file:///dir or s3://bucket/prefix', required: true }),
  };

  static override flags = {
    ...STORE_FLAGS,
    at: Flags.string({ description: 'the point: CLUSTERID:REV, REV, an RFC 3339 time, -DURATION or latest', required: true, helpValue: 'POINT' }),
    output: Flags.string({ description: 'the snapshot file to write', required: true, helpValue: 'FILE' }),
    force: Flags.boolean({ description: FORCE_FLAG_DESCRIPTION, default: false }),
    'drop-leases': Flags.boolean({
      description: 'detach the keys from their leases in the snapshot written, and remove the leases (the keys no longer expire); the output says how many',
      default: false,
    }),
    cluster: Flags.string({ description: 'the cluster ID (16 hex digits) when the store holds backups of more than one', helpValue: 'ID' }),
    'max-time-uncertainty': Flags.string({
      description: 'refuse a time that falls inside a revision window wider than this (an agent outage)',
      default: '30s',
      helpValue: 'DURATION',
    }),
    'accept-uncertain-time': Flags.boolean({
      description: 'restore the last revision seen before the time even when a wider window makes it uncertain',
      default: false,
    }),
    'identity-file': Flags.string({
      description: 'an age identity file (AGE-SECRET-KEY-1… lines) for an encrypted store; repeatable; never printed',
      helpValue: 'FILE',
      multiple: true,
    }),
    user: Flags.string({ description: "the source's root user NAME[:PASSWORD], when its backups have auth enabled", helpValue: 'NAME' }),
    'password-file': Flags.string({ description: "the --user's password, on the file's first line", helpValue: 'FILE' }),
    'etcd-bin': Flags.string({ description: 'the etcd binary for a backup of an etcd cluster (default: etcd on PATH)', helpValue: 'PATH' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BackupRestore);
    if (flags.cluster !== undefined && !/^[0-9a-fA-F]{1,16}$/.test(flags.cluster))
      throw new InputError(`--cluster ${flags.cluster}: give the cluster ID in hex (16 digits, as 'backup list' shows it)`);
    const maxUncertainty = parseDuration(flags['max-time-uncertainty'], '--max-time-uncertainty');
    refuseExistingOutput(flags.output, flags.force, '--output');
    const identities = readIdentityFiles(flags['identity-file'] ?? []);
    const password = flags['password-file'] !== undefined ? readPasswordFile(flags['password-file']) : undefined;
    const creds = credentialsFor(flags.user, password, process.env.ETCDCTL_PASSWORD || undefined, '--user', '--password-file or NAME:PASSWORD');
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-restore-logs-'));
    const store = await openBackupStore(args.store, flags);
    const abort = new AbortController();
    const onSignal = () => abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const result = await materialize({
        store,
        at: flags.at,
        output: flags.output,
        ...(flags.cluster !== undefined ? { clusterId: flags.cluster.toLowerCase().padStart(16, '0') } : {}),
        maxTimeUncertaintyMs: maxUncertainty,
        acceptUncertainTime: flags['accept-uncertain-time'],
        dropLeases: flags['drop-leases'],
        identities,
        ...(flags['etcd-bin'] !== undefined ? { etcdBin: flags['etcd-bin'] } : {}),
        ...creds,
        logDir,
        onProgress: (line) => process.stderr.write(`${line}\n`),
        signal: abort.signal,
      });
      fs.rmSync(logDir, { recursive: true, force: true });
      this.print(flags['write-out'], result, backupRestoreOutput);
    } catch (e) {
      tagStoreError(e);
      if (fs.readdirSync(logDir).length > 0) process.stderr.write(`member logs kept in ${logDir}\n`);
      else fs.rmSync(logDir, { recursive: true, force: true });
      throw e;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      store.close();
    }
  }
}
