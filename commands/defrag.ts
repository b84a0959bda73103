import { Flags } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { defragOutput } from '../src/cli/output/maintenance.js';
import { forEachEndpoint, targetEndpoints } from '../src/client/perEndpoint.js';

export default class Defrag extends EtcdCommand {
  static override description =
    'Defragment the backend database of each endpoint, one connection each, to return space freed by compaction. A member blocks while it defragments: do one at a time in production.';

  static override examples = ['<%= config.bin %> defrag --endpoints 10.0.0.1:2379', '<%= config.bin %> defrag --cluster --command-timeout 60s'];

  static override flags = {
    cluster: Flags.boolean({ description: 'defragment every member at its client URLs (from `member list`)' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Defrag);
    const client = this.client(flags);
    const endpoints = await targetEndpoints(client, flags.cluster);
    const outcomes = await forEachEndpoint(client, endpoints, (c) => c.defragment());
    const results = outcomes.map((o) => (o.ok ? { endpoint: o.endpoint, ok: true } : { endpoint: o.endpoint, ok: false, error: o.error.message }));
    this.print(flags['write-out'], results, defragOutput);
    this.exitIfAnyFailed(outcomes.flatMap((o) => (o.ok ? [] : [{ endpoint: o.endpoint, message: `failed to defragment ${o.endpoint}: ${o.error.message}` }])));
  }
}
