// `lifeboat snapshot restore FILE`, run by bin/run.js without oclif (main), as
// `snapshot save` is: oclif's import, config and command loading were about a
// quarter of a 100k-key restore (0.2 of 0.8 s). commands/snapshot/restore.ts (its
// --help, from flags built out of this table) runs main too.
import { restoreSnapshot, type RestoreResult } from '../recovery/restore.js';
import { WRITE_OUT_FLAG, type WriteOut } from './connectionFlags.js';
import { EXIT, tagCommandError } from './exitCodes.js';
import { parseFlags, type FlagSpec } from './flagParser.js';
import { snapshotRestoreOutput } from './output/maintenance.js';
import { render } from './output/render.js';
import { progressBar } from './progressBar.js';

// bin/run.js maps a failure to its exit code with this module's exitFor: the
// bundle's error classes are its own (serverEntry.ts says more).
export { exitFor } from './exitCodes.js';

export const RESTORE_FLAGS = {
  'data-dir': { type: 'string', description: 'the new data dir (must not exist or be empty)', required: true },
  name: { type: 'string', description: 'name of the restored member', required: true },
  'initial-advertise-peer-urls': { type: 'string', description: "the restored member's peer URLs", required: true },
  'initial-cluster-token': { type: 'string', description: 'token the member ID derives from', default: 'etcd-cluster' },
  'bump-revision': { type: 'integer', description: 'raise the store revision by N so no client sees it go back (needs --mark-compacted)', default: 0 },
  'mark-compacted': {
    type: 'boolean',
    description: 'mark every revision before the new one compacted, so watchers relist (needs --bump-revision)',
    default: false,
  },
  'skip-hash-check': { type: 'boolean', description: 'accept a file without a sha256 trailer (a raw kv.db or etcd member/snap/db copy)', default: false },
} as const satisfies Record<string, FlagSpec>;

interface RestoreFlags {
  'data-dir': string;
  name: string;
  'initial-advertise-peer-urls': string;
  'initial-cluster-token': string;
  'bump-revision': number;
  'mark-compacted': boolean;
  'skip-hash-check': boolean;
}

/** Restores `file` with a progress bar on a terminal (the bytes copied or read), then prints what was restored. */
async function restoreAndPrint(file: string, flags: RestoreFlags, writeOut: WriteOut, log: (line: string) => void): Promise<void> {
  const bar = progressBar('restore');
  const result: RestoreResult = await restoreSnapshot(file, {
    onBytes: (done, total) => bar.update(done, total),
    dataDir: flags['data-dir'],
    name: flags.name,
    initialAdvertisePeerUrls: flags['initial-advertise-peer-urls'].split(',').map((s) => s.trim()),
    initialClusterToken: flags['initial-cluster-token'],
    bumpRevision: flags['bump-revision'],
    markCompacted: flags['mark-compacted'],
    skipHashCheck: flags['skip-hash-check'],
  }).finally(() => bar.finish());
  const text = render(writeOut, result, snapshotRestoreOutput);
  if (text !== '') log(text);
}

/** Runs `lifeboat snapshot restore` from its arguments (after `snapshot restore`); resolves to the exit code. Errors throw tagged as oclif's would be. */
export async function main(argv: string[]): Promise<number> {
  try {
    const { flags, args } = parseFlags(argv, { 'write-out': WRITE_OUT_FLAG, ...RESTORE_FLAGS }, { commandId: 'snapshot:restore', args: ['file'] });
    await restoreAndPrint(args[0], flags as unknown as RestoreFlags, flags['write-out'] as WriteOut, (line) => process.stdout.write(`${line}\n`));
    return EXIT.OK;
  } catch (err) {
    tagCommandError(err, 'snapshot:restore');
    throw err;
  }
}
