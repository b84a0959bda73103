import { Args } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { oclifBoolean } from '../../src/cli/oclifFlag.js';
import { FORCE_FLAG, saveAndPrint } from '../../src/cli/snapshotSaveRun.js';

export default class SnapshotSave extends EtcdCommand {
  static override description =
    "Save a member's database to FILE: streamed into FILE.part, its sha256 trailer checked, fsynced, then renamed, so FILE is never half-written. An existing FILE is refused (exit 3) unless --force, which replaces it only once the new snapshot is complete and checked. Needs exactly one endpoint. The revision and key count printed are read just before the stream starts (writes during the save are in FILE, not in those numbers); 'snapshot status FILE' reads the file's own.";

  static override examples = [
    '<%= config.bin %> snapshot save backup.db --endpoints 10.0.0.1:2379',
    '<%= config.bin %> snapshot save /backups/etcd-$(date +%F).db --endpoints https://10.0.0.1:2379 --cacert ca.pem --cert client.pem --key client-key.pem',
  ];

  static override args = {
    file: Args.string({ description: 'where to write the snapshot', required: true }),
  };

  static override flags = { force: oclifBoolean('force', FORCE_FLAG) };

  // bin/run.js runs `lifeboat snapshot save` through src/cli/snapshotSaveRun.ts (no oclif): this is the path of --help and of oclif's own runners.
  async run(): Promise<void> {
    const { args, flags } = await this.parse(SnapshotSave);
    await saveAndPrint(this.client(flags).target, args.file, flags.force, flags['write-out'], (line) => this.log(line));
  }
}
