import { Args, Flags } from '#oclif-core';
import { BaseCommand } from '../../src/cli/baseCommand.js';
import { packDataDir, type PackResult } from '../../src/recovery/dataDirArchive.js';
import { FORCE_FLAG_DESCRIPTION, refuseExistingOutput } from '../../src/common/outputFile.js';

export default class DatadirPack extends BaseCommand {
  static override description = `Pack a stopped member's data dir into a .tar.gz with a manifest of sha256 checksums, for moving the member to another machine. A running member (its data dir locked) is refused (exit 3), and so is an existing --out file unless --force.`;

  static override examples = ['<%= config.bin %> datadir pack /var/lib/lifeboat/m1 --out m1.tar.gz'];

  static override args = {
    dir: Args.string({ description: 'the data dir', required: true }),
  };

  static override flags = {
    out: Flags.string({ description: 'the archive to write (written to OUT.part, then renamed; an existing OUT needs --force)', required: true }),
    force: Flags.boolean({ description: FORCE_FLAG_DESCRIPTION, default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(DatadirPack);
    refuseExistingOutput(flags.out, flags.force, '--out');
    const r = await packDataDir(args.dir, flags.out);
    this.print(flags['write-out'], r, (x: PackResult) => `Packed ${x.files} files (${x.bytes} bytes) into ${x.archive}\nsha256 ${x.sha256}`);
  }
}
