import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { MEMBER_LIST } from '../../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class MemberList extends EtcdCommand {
  static override description = "List the cluster's members: ID, status (started/unstarted), name, peer and client URLs, and whether each is a learner.";

  static override examples = [
    '<%= config.bin %> member list',
    '<%= config.bin %> member list -w table --endpoints 10.0.0.1:2379,10.0.0.2:2379',
    '<%= config.bin %> member list -w json',
  ];

  async run(): Promise<void> {
    await this.runTable(MEMBER_LIST);
  }
}
