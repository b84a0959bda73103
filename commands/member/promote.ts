import { Args } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { memberChangeOutput } from '../../src/cli/output/members.js';
import { resolveMemberId } from '../../src/client/ids.js';

export default class MemberPromote extends EtcdCommand {
  static override description =
    'Promote a learner to a voting member. Refused until the learner has caught up with the leader ("in sync with leader"); retry after a moment.';

  static override examples = ['<%= config.bin %> member promote 8e9e05c52164694d'];

  static override args = {
    id: Args.string({ description: "learner's member ID: hex as `member list` prints it, or the decimal ID of -w json", required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MemberPromote);
    const client = this.client(flags);
    const id = await resolveMemberId(args.id, client);
    const result = await client.memberPromote(id);
    this.print(flags['write-out'], result, memberChangeOutput('promoted in', id));
  }
}
