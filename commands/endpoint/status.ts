import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { oclifFlags } from '../../src/cli/oclifFlag.js';
import { ENDPOINT_STATUS } from '../../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class EndpointStatusCommand extends EtcdCommand {
  static override description =
    'Status of each endpoint, each asked on its own connection: member ID, version, DB size, leader or not, learner or not, Raft term, index and applied index, errors.';

  static override examples = [
    '<%= config.bin %> endpoint status -w table',
    '<%= config.bin %> endpoint status --cluster -w table',
    '<%= config.bin %> endpoint status --endpoints https://10.0.0.1:2379 --cacert ca.pem -w json',
  ];

  static override flags = oclifFlags(ENDPOINT_STATUS.flags);

  async run(): Promise<void> {
    await this.runTable(ENDPOINT_STATUS);
  }
}
