import { Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { parseRevision } from '../../src/cli/args.js';
import { endpointHashKVOutput, type EndpointHashKV } from '../../src/cli/output/endpoints.js';
import { forEachEndpoint, targetEndpoints } from '../../src/client/perEndpoint.js';

export default class EndpointHashKVCommand extends EtcdCommand {
  static override description =
    "Hash of each endpoint's key-value history up to a revision (CRC-32C, printed in decimal). Equal hashes at the same revision mean the members agree.";

  static override examples = ['<%= config.bin %> endpoint hashkv --cluster', '<%= config.bin %> endpoint hashkv --rev 42 -w table'];

  static override flags = {
    cluster: Flags.boolean({ description: 'ask every member at its client URLs (from `member list`) instead of --endpoints' }),
    rev: Flags.string({ description: 'hash up to this revision (default: the latest)' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(EndpointHashKVCommand);
    const rev = flags.rev === undefined ? 0 : parseRevision(flags.rev, '--rev', 0);
    const client = this.client(flags);
    const endpoints = await targetEndpoints(client, flags.cluster);
    const outcomes = await forEachEndpoint(client, endpoints, (c) => c.hashKV(rev));
    const ok: EndpointHashKV[] = outcomes.flatMap((o) => (o.ok ? [{ endpoint: o.endpoint, hashKV: o.value }] : []));
    this.print(flags['write-out'], ok, endpointHashKVOutput);
    this.exitIfAnyFailed(
      outcomes.flatMap((o) => (o.ok ? [] : [{ endpoint: o.endpoint, message: `failed to get the hash of endpoint ${o.endpoint}: ${o.error.message}` }])),
    );
  }
}
