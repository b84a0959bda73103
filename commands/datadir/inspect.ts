import fs from 'node:fs';
import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { InputError, RefusedError } from '../../src/common/errors.js';
import { formatDataDirReport, inspectDataDir } from '../../src/recovery/inspect.js';
import { DataDirLockedError } from '../../src/storage/errors.js';

export default class DatadirInspect extends BaseCommand {
  static override description = `Inspect a stopped member's data dir, Lifeboat's or etcd's (member/snap/db), strictly read-only (not a byte or a modification time changes): cluster and member IDs, members, last term and index, commit and applied index, the entries past the commit index (count, range, what they are), the KV revision, key count and hash, the time of the last write, the snapshot, and any damage found; for etcd also the backend's consistent index and the v2 data a v3 restore loses. Passwords in etcd's auth entries are never shown. -w json is what 'recover plan --from-inspect' reads. A running member's data dir (Lifeboat's lock, or etcd's WAL and db locks, held) is refused with exit 3, as 'datadir pack' refuses it.`;

  static override examples = [
    '<%= config.bin %> datadir inspect /var/lib/lifeboat/m1',
    '<%= config.bin %> datadir inspect /var/lib/lifeboat/m1 -w json > m1.inspect.json',
    '<%= config.bin %> datadir inspect /var/lib/etcd --wal-dir /var/lib/etcd-wal',
  ];

  static override args = {
    dir: Args.string({ description: 'the data dir', required: true }),
  };

  static override flags = {
    'wal-dir': Flags.string({ description: "an etcd data dir's separate WAL directory (etcd's --wal-dir)" }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirInspect);
    if (!fs.existsSync(args.dir)) throw new InputError(`data dir ${args.dir} does not exist; check the path`);
    if (flags['wal-dir'] !== undefined && !fs.existsSync(flags['wal-dir'])) throw new InputError(`WAL dir ${flags['wal-dir']} does not exist; check the path`);
    // The lock is a safety check (a live member's files are changing): exit 3, like pack.
    const report = await inspectDataDir(args.dir, { walDir: flags['wal-dir'] }).catch((e: unknown) => {
      throw e instanceof DataDirLockedError ? new RefusedError(e.message) : e;
    });
    this.print(flags['write-out'], report, formatDataDirReport);
  }
}
