import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { oclifFlags } from '../../src/cli/oclifFlag.js';
import { ENDPOINT_HEALTH } from '../../src/cli/everydayCommands.js';

// bin/run.js runs it without oclif (src/cli/everydayRun.ts): this is the path of --help and of oclif's own runners.
export default class EndpointHealthCommand extends EtcdCommand {
  static override description =
    'Check each endpoint on its own connection with a linearizable read (it must go through Raft, so a member without a quorum fails). Exits 1 if any is unhealthy.';

  static override examples = ['<%= config.bin %> endpoint health', '<%= config.bin %> endpoint health --cluster -w table'];

  static override flags = oclifFlags(ENDPOINT_HEALTH.flags);

  async run(): Promise<void> {
    await this.runTable(ENDPOINT_HEALTH);
  }
}
