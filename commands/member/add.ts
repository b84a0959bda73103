import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { parsePeerUrls } from '../../src/cli/args.js';
import { memberAddOutput } from '../../src/cli/output/members.js';
import { joinInstructions } from '../../src/client/joinInstructions.js';
import { parseRuntimeChoice, resolveRuntime, runtimeOfVersion } from '../../src/ops/runtime.js';

export default class MemberAdd extends EtcdCommand {
  static override description =
    'Add a member (phase 1 of two): the cluster learns its peer URLs, then prints the settings to start it with (phase 2). Add new members as learners and promote them once caught up.';

  static override examples = [
    '<%= config.bin %> member add infra4 --peer-urls http://10.0.0.4:2380 --learner',
    '<%= config.bin %> member add infra4 --peer-urls http://10.0.0.4:2380,http://10.0.1.4:2380',
    '<%= config.bin %> member add infra4 --peer-urls http://10.0.0.4:2380 --client-urls http://10.0.0.4:2379 --new-data-dir /var/lib/lifeboat/infra4',
  ];

  static override args = {
    name: Args.string({ description: 'name of the new member (its --name when started)', required: true }),
  };

  static override flags = {
    'peer-urls': Flags.string({ description: "the new member's peer URLs, comma-separated", required: true }),
    learner: Flags.boolean({ description: 'add as a non-voting learner (promote it later with `member promote`)' }),
    'client-urls': Flags.string({
      description: "the new member's client URLs, for the printed start line only (default: its peer hosts on port 2379)",
    }),
    'new-data-dir': Flags.string({ description: "the new member's data dir, for the printed start line only (default: <name>.etcd)" }),
    runtime: Flags.string({
      description:
        "the new member's runtime: lifeboat, etcd, or auto (the cluster's, from its reported version); a member of another runtime is refused before the add",
      default: 'auto',
      options: ['auto', 'lifeboat', 'etcd'],
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MemberAdd);
    const peerURLs = parsePeerUrls(flags['peer-urls']);
    // Checked before the request so a typo does not leave a half-announced member.
    const clientURLs = flags['client-urls'] === undefined ? undefined : parsePeerUrls(flags['client-urls'], '--client-urls');
    const client = this.client(flags);
    // The settings printed are the cluster's runtime's (ETCD_* and `etcd …` for real etcd).
    const version = (await client.status()).version;
    const runtime = resolveRuntime(parseRuntimeChoice(flags.runtime), runtimeOfVersion(version), `the cluster (version ${version})`);
    const result = await client.memberAdd(peerURLs, { learner: flags.learner });
    const join = joinInstructions(args.name, result.member, result.members, { clientURLs, dataDir: flags['new-data-dir'], runtime });
    this.print(flags['write-out'], { result, join }, memberAddOutput);
  }
}
