// The everyday commands (`version`, `get`, `put`, `endpoint health`, `endpoint
// status`, `member list`, `snapshot status`) as plain data and one run function
// each: bin/run.js runs them without oclif (everydayRun.ts), oclif's commands/
// for --help and its own runners, both from these tables. A runbook calls them
// in loops; oclif's import, config and command loading were most of each start.
import { print, type EverydayCommand } from './commandTable.js';
import { EXIT } from './exitCodes.js';
import type { FlagSpec } from './flagParser.js';
import { snapshotStatusOutput } from './output/snapshotStatus.js';

/** The runs of the commands that connect, loaded by them only: grpc-js and the client are no part of `version`. */
const connected = () => import('./everydayConnected.js');

const bool = (description: string) => ({ type: 'boolean', description, default: false }) as const satisfies FlagSpec;

export const VERSION: EverydayCommand = {
  id: 'version',
  connects: false,
  flags: {},
  args: [],
  run(flags, _args, io) {
    const info = { name: io.bin, version: io.version, node: process.version, platform: process.platform, arch: process.arch };
    print(io, flags, info, (i) => `${i.name}/${i.version} node-${i.node} ${i.platform}-${i.arch}`);
    return Promise.resolve(EXIT.OK);
  },
};

export const GET: EverydayCommand = {
  id: 'get',
  connects: true,
  flags: {
    prefix: bool('every key that starts with KEY'),
    'from-key': bool('every key ≥ KEY (byte order)'),
    rev: { type: 'string', description: 'read at this revision (default: the latest)' },
    limit: { type: 'string', description: 'return at most this many keys' },
    'keys-only': bool('keys only, no values'),
    'count-only': bool('only the number of keys'),
    consistency: {
      type: 'string',
      description: 'l: linearizable (through the leader); s: serializable (this member, may be stale)',
      options: ['l', 's'],
      default: 'l',
    },
    'sort-by': { type: 'string', description: 'sort by this field', options: ['KEY', 'CREATE', 'MODIFY', 'VALUE', 'VERSION'] },
    order: { type: 'string', description: 'sort order', options: ['ASCEND', 'DESCEND'] },
  },
  args: [
    { name: 'key', description: 'the key (or the prefix with --prefix, or the start with --from-key)', required: true },
    { name: 'end', description: 'end of the range, exclusive', required: false },
  ],
  run: (...a) => connected().then((m) => m.runGet(...a)),
};

export const PUT: EverydayCommand = {
  id: 'put',
  connects: true,
  flags: {
    lease: { type: 'string', description: 'attach the key to this lease (hex ID)' },
    'prev-kv': bool('print the previous key-value pair'),
  },
  args: [
    { name: 'key', description: 'the key', required: true },
    { name: 'value', description: 'the value (default: read standard input)', required: false },
  ],
  run: (...a) => connected().then((m) => m.runPut(...a)),
};

export const ENDPOINT_HEALTH: EverydayCommand = {
  id: 'endpoint:health',
  connects: true,
  flags: { cluster: bool('check every member at its client URLs (from `member list`) instead of --endpoints') },
  args: [],
  run: (...a) => connected().then((m) => m.runEndpointHealth(...a)),
};

export const ENDPOINT_STATUS: EverydayCommand = {
  id: 'endpoint:status',
  connects: true,
  flags: { cluster: bool('ask every member at its client URLs (from `member list`) instead of --endpoints') },
  args: [],
  run: (...a) => connected().then((m) => m.runEndpointStatus(...a)),
};

export const MEMBER_LIST: EverydayCommand = {
  id: 'member:list',
  connects: true,
  flags: {},
  args: [],
  run: (...a) => connected().then((m) => m.runMemberList(...a)),
};

export const SNAPSHOT_STATUS: EverydayCommand = {
  id: 'snapshot:status',
  connects: false,
  flags: {},
  args: [{ name: 'file', description: 'the snapshot file', required: true }],
  async run(flags, [file], io) {
    // Loaded only here: the SQLite store it opens is no part of the other commands.
    const { snapshotStatus } = await import('../recovery/snapshotFormat.js');
    print(io, flags, await snapshotStatus(file!), snapshotStatusOutput);
    return EXIT.OK;
  },
};
