import { Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { endpointHealthOutput, healthLine, type EndpointHealth } from '../../src/cli/output/endpoints.js';
import { checkHealth, forEachEndpoint, targetEndpoints } from '../../src/client/perEndpoint.js';

export default class EndpointHealthCommand extends EtcdCommand {
  static override description =
    'Check each endpoint on its own connection with a linearizable read (it must go through Raft, so a member without a quorum fails). Exits 1 if any is unhealthy.';

  static override examples = ['<%= config.bin %> endpoint health', '<%= config.bin %> endpoint health --cluster -w table'];

  static override flags = {
    cluster: Flags.boolean({ description: 'check every member at its client URLs (from `member list`) instead of --endpoints' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(EndpointHealthCommand);
    const client = this.client(flags);
    const endpoints = await targetEndpoints(client, flags.cluster);
    const started = performance.now();
    const outcomes = await forEachEndpoint(client, endpoints, (c) => checkHealth(c));
    const results: EndpointHealth[] = outcomes.map((o) =>
      o.ok
        ? { endpoint: o.endpoint, health: true, tookMs: o.value.tookMs }
        : { endpoint: o.endpoint, health: false, tookMs: performance.now() - started, error: o.error.message.replace(`${o.endpoint}: `, '') },
    );
    this.print(flags['write-out'], results, endpointHealthOutput);
    const unhealthy = results.filter((h) => !h.health);
    // In simple output the unhealthy lines are the errors; json and table already list them.
    this.exitIfAnyFailed(
      flags['write-out'] === 'simple'
        ? unhealthy.map((h) => ({ endpoint: h.endpoint, message: healthLine(h) }))
        : unhealthy.map((h) => ({ endpoint: h.endpoint, message: `${h.endpoint} is unhealthy` })),
    );
  }
}
