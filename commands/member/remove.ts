import { Args } from '#oclif-core';
import { EtcdCommand, yesFlag } from '../../src/cli/baseCommand.js';
import { confirmDangerous } from '../../src/cli/confirm.js';
import { memberChangeOutput } from '../../src/cli/output/members.js';
import { resolveMemberId } from '../../src/client/ids.js';
import { describeMember, planRemoval } from '../../src/client/removalRisk.js';

export default class MemberRemove extends EtcdCommand {
  static override description =
    'Remove a member by its ID (hex, or the decimal ID of -w json). Asks first when the member is the leader or the cluster has only 2 voting members; without a terminal, pass --yes.';

  static override examples = [
    '<%= config.bin %> member remove 8e9e05c52164694d',
    '<%= config.bin %> member remove 8e9e05c52164694d --yes   # in scripts, even if it is the leader',
  ];

  static override args = {
    id: Args.string({ description: 'member ID: hex as `member list` prints it, or the decimal ID of -w json', required: true }),
  };

  static override flags = { yes: yesFlag };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MemberRemove);
    const client = this.client(flags);
    const id = await resolveMemberId(args.id, client);
    const risk = await planRemoval(client, id);
    await confirmDangerous({ action: `remove member ${describeMember(risk.member, id)}`, reasons: risk.reasons, yes: flags.yes });
    const result = await client.memberRemove(id);
    this.print(flags['write-out'], result, memberChangeOutput('removed from', id));
  }
}
