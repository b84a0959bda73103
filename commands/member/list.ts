import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { memberListOutput } from '../../src/cli/output/members.js';

export default class MemberList extends EtcdCommand {
  static override description = "List the cluster's members: ID, status (started/unstarted), name, peer and client URLs, and whether each is a learner.";

  static override examples = [
    '<%= config.bin %> member list',
    '<%= config.bin %> member list -w table --endpoints 10.0.0.1:2379,10.0.0.2:2379',
    '<%= config.bin %> member list -w json',
  ];

  async run(): Promise<void> {
    const { flags } = await this.parse(MemberList);
    const result = await this.client(flags).memberList();
    this.print(flags['write-out'], result, memberListOutput);
  }
}
