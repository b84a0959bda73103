import { Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { endpointStatusOutput, type EndpointStatus } from '../../src/cli/output/endpoints.js';
import { forEachEndpoint, targetEndpoints } from '../../src/client/perEndpoint.js';

export default class EndpointStatusCommand extends EtcdCommand {
  static override description =
    'Status of each endpoint, each asked on its own connection: member ID, version, DB size, leader or not, learner or not, Raft term, index and applied index, errors.';

  static override examples = [
    '<%= config.bin %> endpoint status -w table',
    '<%= config.bin %> endpoint status --cluster -w table',
    '<%= config.bin %> endpoint status --endpoints https://10.0.0.1:2379 --cacert ca.pem -w json',
  ];

  static override flags = {
    cluster: Flags.boolean({ description: 'ask every member at its client URLs (from `member list`) instead of --endpoints' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(EndpointStatusCommand);
    const client = this.client(flags);
    const endpoints = await targetEndpoints(client, flags.cluster);
    const outcomes = await forEachEndpoint(client, endpoints, (c) => c.status());
    const ok: EndpointStatus[] = outcomes.flatMap((o) => (o.ok ? [{ endpoint: o.endpoint, status: o.value }] : []));
    this.print(flags['write-out'], ok, endpointStatusOutput);
    this.exitIfAnyFailed(
      outcomes.flatMap((o) => (o.ok ? [] : [{ endpoint: o.endpoint, message: `failed to get the status of endpoint ${o.endpoint}: ${o.error.message}` }])),
    );
  }
}
