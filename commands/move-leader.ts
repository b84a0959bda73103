import { Args } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { moveLeaderOutput } from '../src/cli/output/maintenance.js';
import { resolveMemberId } from '../src/client/ids.js';
import { findLeaderEndpoint } from '../src/client/perEndpoint.js';

export default class MoveLeader extends EtcdCommand {
  static override description =
    "Transfer leadership to another voting member. The request goes to the leader: found among --endpoints by Status, or else at the leader's client URLs.";

  static override examples = ['<%= config.bin %> move-leader 8e9e05c52164694d --endpoints 10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379'];

  static override args = {
    id: Args.string({ description: 'member ID of the new leader: hex as `member list` prints it, or the decimal ID of -w json', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(MoveLeader);
    const client = this.client(flags);
    const target = await resolveMemberId(args.id, client);
    const leader = await findLeaderEndpoint(client);
    const leaderClient = client.forEndpoint(leader.endpoint);
    try {
      const res = await leaderClient.moveLeader(target);
      this.print(flags['write-out'], { from: leader.leaderId, to: target, header: res.header }, moveLeaderOutput);
    } finally {
      leaderClient.close();
    }
  }
}
