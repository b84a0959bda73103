import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { parsePeerUrls } from '../../src/cli/args.js';
import { memberChangeOutput } from '../../src/cli/output/members.js';
import { resolveMemberId } from '../../src/client/ids.js';

export default class MemberUpdate extends EtcdCommand {
  static override description = "Change a member's peer URLs (its learner flag is kept); then restart it with the new --initial-advertise-peer-urls.";

  static override examples = ['<%= config.bin %> member update 8e9e05c52164694d --peer-urls http://10.0.0.9:2380'];

  static override args = {
    id: Args.string({ description: 'member ID: hex as `member list` prints it, or the decimal ID of -w json', required: true }),
  };

  static override flags = {
    'peer-urls': Flags.string({ description: "the member's new peer URLs, comma-separated", required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MemberUpdate);
    const peerURLs = parsePeerUrls(flags['peer-urls']);
    const client = this.client(flags);
    const id = await resolveMemberId(args.id, client);
    const result = await client.memberUpdate(id, peerURLs);
    this.print(flags['write-out'], result, memberChangeOutput('updated in', id));
  }
}
