import { Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { openBackupStore, STORE_ARG, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { BaseCommand, credentialsFor } from '../../src/cli/baseCommand.js';
import { readPasswordFile } from '../../src/cli/connectionFlags.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { backupVerifyOutput, readIdentityFiles } from '../../src/cli/output/backupVerify.js';
import { InputError } from '../../src/common/errors.js';
import { verifyBackup } from '../../src/backup/verify.js';

export default class BackupVerify extends BaseCommand {
  static override summary = 'Prove a backup restores: replay it into a scratch member and compare HashKV with what the agent recorded from the cluster.';

  static override description = `Reads the store (file:///dir or s3://bucket/prefix), takes the newest full at or before --at (default: the last revision stored) and the segments after it, and replays them by the replay rules: the full restored into one scratch member of the source's runtime on 127.0.0.1 (data on tmpfs), leases granted with their recorded IDs and TTLs, then one Txn per revision, each checked to land at its recorded revision. At every hash point the agent recorded up to the revision, the scratch member is compacted to the recorded compact revision and its HashKV compared with the cluster's. Every object's size and sha256 are checked as it is read. Records the run in the audit log as a drill ('audit report --drills' lists it) and removes the scratch member. Exit 0: verified; 1: an object is damaged or missing, or the replay differs from the cluster (the object is named); 2: bad flags or files.`;

  static override examples = [
    '<%= config.bin %> backup verify file:///srv/backups',
    '<%= config.bin %> backup verify s3://backups/etcd --at 123456 --identity-file ~/.config/lifeboat/backup-key.txt',
  ];

  static override args = STORE_ARG;

  static override flags = {
    ...STORE_FLAGS,
    at: Flags.integer({ description: 'the revision to prove (default: the last one stored)', min: 1 }),
    cluster: Flags.string({ description: 'the cluster ID (16 hex digits) when the store holds backups of more than one', helpValue: 'ID' }),
    'identity-file': Flags.string({
      description: 'an age identity file (AGE-SECRET-KEY-1… lines) for an encrypted store; repeatable; never printed',
      helpValue: 'FILE',
      multiple: true,
    }),
    user: Flags.string({
      description: "the source's root user NAME[:PASSWORD], when its backups have auth enabled (the scratch member keeps it)",
      helpValue: 'NAME',
    }),
    'password-file': Flags.string({ description: "the --user's password, on the file's first line", helpValue: 'FILE' }),
    'etcd-bin': Flags.string({ description: 'the etcd binary for a backup of an etcd cluster (default: etcd on PATH)', helpValue: 'PATH' }),
    reason: Flags.string({ description: 'why, for the audit log', default: 'backup verify' }),
    'audit-db': auditDbFlag,
  };

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(BackupVerify);
    if (flags.cluster !== undefined && !/^[0-9a-fA-F]{1,16}$/.test(flags.cluster))
      throw new InputError(`--cluster ${flags.cluster}: give the cluster ID in hex (16 digits, as 'backup list' shows it)`);
    const identities = readIdentityFiles(flags['identity-file'] ?? []);
    const password = flags['password-file'] !== undefined ? readPasswordFile(flags['password-file']) : undefined;
    const creds = credentialsFor(flags.user, password, process.env.ETCDCTL_PASSWORD || undefined, '--user', '--password-file or NAME:PASSWORD');
    const store = await openBackupStore(storeUrlOf(flags, args.store), flags);
    const abort = new AbortController();
    const onSignal = () => abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const result = await verifyBackup({
        store,
        ...(flags.at !== undefined ? { at: flags.at } : {}),
        ...(flags.cluster !== undefined ? { clusterId: flags.cluster.toLowerCase() } : {}),
        identities,
        ...(flags['etcd-bin'] !== undefined ? { etcdBin: flags['etcd-bin'] } : {}),
        ...creds,
        reason: flags.reason,
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        onProgress: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`),
        signal: abort.signal,
      });
      this.print(flags['write-out'], result, backupVerifyOutput);
      if (!result.passed) this.exit(EXIT.FAILURE);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      store.close();
    }
  }
}
