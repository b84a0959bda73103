// The runs of the everyday commands that connect (everydayCommands.ts holds their
// flags): a module of its own, so that the client and grpc-js load only for them.
import { clientFor, type EtcdClient } from '../client/etcdClient.js';
import { parseLeaseId } from '../client/ids.js';
import { selectKeys } from '../client/keyRange.js';
import { checkHealth, forEachEndpoint, targetEndpoints } from '../client/perEndpoint.js';
import type { SortOrder, SortTarget } from '../client/types.js';
import { InputError } from '../common/errors.js';
import { parseRevision } from './args.js';
import { connectionFromFlags, type ConnectionFlags } from './connectionFlags.js';
import { print, type CommandIo } from './commandTable.js';
import { EXIT } from './exitCodes.js';
import type { FlagValues } from './flagParser.js';
import { endpointHealthOutput, endpointStatusOutput, healthLine, type EndpointHealth, type EndpointStatus } from './output/endpoints.js';
import { getOutput, putOutput } from './output/kv.js';
import { memberListOutput } from './output/members.js';
import { silenceTlsServerNameWarning } from './warnings.js';

type Args = ReadonlyArray<string | undefined>;

/** A client from the connection flags (the lean entry's; oclif's commands build theirs in EtcdCommand). */
export function connectionClient(flags: FlagValues): EtcdClient {
  silenceTlsServerNameWarning();
  return clientFor(flags.endpoints as string, connectionFromFlags(flags as unknown as ConnectionFlags));
}

/** After per-endpoint results were printed: one stderr line per endpoint that failed, then exit 1 if any did. */
function failuresExit(messages: readonly string[]): number {
  for (const m of messages) process.stderr.write(`Error: ${m}\n`);
  return messages.length > 0 ? EXIT.FAILURE : EXIT.OK;
}

const SORT_TARGETS: Record<string, SortTarget> = { KEY: 'KEY', CREATE: 'CREATE', MODIFY: 'MOD', VALUE: 'VALUE', VERSION: 'VERSION' };

async function readStdin(): Promise<Buffer> {
  if (process.stdin.isTTY) throw new InputError('VALUE is missing: give it as the second argument or on standard input');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function runGet(flags: FlagValues, [key, end]: Args, io: CommandIo): Promise<number> {
  const sel = selectKeys(key!, end, { prefix: flags.prefix === true, fromKey: flags['from-key'] === true });
  const sortBy = flags['sort-by'] as string | undefined;
  const sortOrder = (flags.order as SortOrder | undefined) ?? (sortBy ? 'ASCEND' : 'NONE');
  const rev = flags.rev as string | undefined;
  const limit = flags.limit as string | undefined;
  const result = await io.client().range(sel.key, {
    rangeEnd: sel.rangeEnd,
    revision: rev === undefined ? undefined : parseRevision(rev, '--rev', 0),
    limit: limit === undefined ? undefined : parseRevision(limit, '--limit', 0),
    keysOnly: flags['keys-only'] === true,
    countOnly: flags['count-only'] === true,
    serializable: flags.consistency === 's',
    sortOrder,
    sortTarget: SORT_TARGETS[sortBy ?? 'KEY'],
  });
  print(io, flags, result, getOutput({ countOnly: flags['count-only'] === true, keysOnly: flags['keys-only'] === true }));
  return EXIT.OK;
}

export async function runPut(flags: FlagValues, [key, value]: Args, io: CommandIo): Promise<number> {
  const lease = flags.lease === undefined ? undefined : parseLeaseId(flags.lease as string);
  if (key === '') throw new InputError('KEY is empty: give a key, e.g. /config/mode');
  const result = await io.client().put(key!, value ?? (await readStdin()), { lease, prevKv: flags['prev-kv'] === true });
  print(io, flags, result, putOutput);
  return EXIT.OK;
}

export async function runEndpointHealth(flags: FlagValues, _args: Args, io: CommandIo): Promise<number> {
  const client = io.client();
  const endpoints = await targetEndpoints(client, flags.cluster === true);
  const started = performance.now();
  const outcomes = await forEachEndpoint(client, endpoints, (c) => checkHealth(c));
  const results: EndpointHealth[] = outcomes.map((o) =>
    o.ok
      ? { endpoint: o.endpoint, health: true, tookMs: o.value.tookMs }
      : { endpoint: o.endpoint, health: false, tookMs: performance.now() - started, error: o.error.message.replace(`${o.endpoint}: `, '') },
  );
  print(io, flags, results, endpointHealthOutput);
  const unhealthy = results.filter((h) => !h.health);
  // In simple output the unhealthy lines are the errors; json and table already list them.
  return failuresExit(flags['write-out'] === 'simple' ? unhealthy.map((h) => healthLine(h)) : unhealthy.map((h) => `${h.endpoint} is unhealthy`));
}

export async function runEndpointStatus(flags: FlagValues, _args: Args, io: CommandIo): Promise<number> {
  const client = io.client();
  const endpoints = await targetEndpoints(client, flags.cluster === true);
  const outcomes = await forEachEndpoint(client, endpoints, (c) => c.status());
  const ok: EndpointStatus[] = outcomes.flatMap((o) => (o.ok ? [{ endpoint: o.endpoint, status: o.value }] : []));
  print(io, flags, ok, endpointStatusOutput);
  return failuresExit(outcomes.flatMap((o) => (o.ok ? [] : [`failed to get the status of endpoint ${o.endpoint}: ${o.error.message}`])));
}

export async function runMemberList(flags: FlagValues, _args: Args, io: CommandIo): Promise<number> {
  print(io, flags, await io.client().memberList(), memberListOutput);
  return EXIT.OK;
}
