import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { unpackDataDir, type UnpackResult } from '../../src/recovery/dataDirArchive.js';

export default class DatadirUnpack extends BaseCommand {
  static override description = `Unpack an archive made by 'datadir pack' into a new data dir, verifying every file's sha256 against the manifest before anything lands (extracted into DIR.part, checked, then renamed). Entries the manifest does not list (outside member/, links) are not unpacked, and a warning names them. A non-empty data dir is refused (exit 3); a damaged or altered archive fails (exit 1) and leaves nothing behind.`;

  static override examples = ['<%= config.bin %> datadir unpack m1.tar.gz --data-dir /var/lib/lifeboat/m1'];

  static override args = {
    archive: Args.string({ description: 'the .tar.gz made by datadir pack', required: true }),
  };

  static override flags = {
    'data-dir': Flags.string({ description: 'the new data dir (must not exist or be empty)', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirUnpack);
    const r = await unpackDataDir(args.archive, flags['data-dir']);
    if (r.ignored.length > 0) {
      const list = r.ignored.map((e) => `${e.path} (${e.why})`).join(', ');
      process.stderr.write(`warning: ${args.archive} holds ${r.ignored.length} entries its manifest does not list; they were not unpacked: ${list}\n`);
    }
    this.print(flags['write-out'], r, (x: UnpackResult) =>
      x.alreadyUnpacked
        ? `${x.dataDir} already holds exactly this archive's ${x.files} files (${x.bytes} bytes); nothing to do`
        : `Unpacked ${x.files} files (${x.bytes} bytes) into ${x.dataDir}; every checksum matched`,
    );
  }
}
