// `lifeboat snapshot save FILE`, run by bin/run.js without oclif (main): oclif's
// import, config and command loading were about 0.15 s of a 0.9 s save of 100k
// keys. commands/snapshot/save.ts (its --help, oclif's runners) runs the same
// saveAndPrint with the same flags, built from these tables.
import { saveSnapshot } from '../client/snapshotSave.js';
import { resolveTarget, type ClientTarget } from '../client/target.js';
import { CONNECTION_FLAGS, connectionFromFlags, endpointsFromFlags, WRITE_OUT_FLAG, type ConnectionFlags, type WriteOut } from './connectionFlags.js';
import { EXIT, tagCommandError } from './exitCodes.js';
import { parseFlags, type FlagSpec } from './flagParser.js';
import { snapshotSaveOutput } from './output/maintenance.js';
import { render } from './output/render.js';
import { progressBar } from './progressBar.js';
import { silenceTlsServerNameWarning } from './warnings.js';
import { FORCE_FLAG_DESCRIPTION, refuseExistingOutput } from '../common/outputFile.js';

// bin/run.js maps a failure to its exit code with this module's exitFor: the
// bundle's error classes are its own (serverEntry.ts says more).
export { exitFor } from './exitCodes.js';

export const FORCE_FLAG = { type: 'boolean', description: FORCE_FLAG_DESCRIPTION, default: false } as const satisfies FlagSpec;

/** Saves the snapshot to `file` (an existing one only with `force`) with a progress bar on a terminal, then prints what was saved. */
export async function saveAndPrint(target: ClientTarget, file: string, force: boolean, writeOut: WriteOut, log: (line: string) => void): Promise<void> {
  // Before connecting: the file there may be the only pre-disaster snapshot.
  refuseExistingOutput(file, force, 'snapshot file');
  const bar = progressBar('snapshot');
  try {
    const saved = await saveSnapshot(target, file, { onProgress: (done, total) => bar.update(done, total) });
    bar.finish();
    const text = render(writeOut, saved, snapshotSaveOutput);
    if (text !== '') log(text);
  } finally {
    bar.finish();
  }
}

/** Runs `lifeboat snapshot save` from its arguments (after `snapshot save`); resolves to the exit code. Errors throw tagged as oclif's would be. */
export async function main(argv: string[]): Promise<number> {
  try {
    const { flags, args } = parseFlags(
      argv,
      { 'write-out': WRITE_OUT_FLAG, force: FORCE_FLAG, ...CONNECTION_FLAGS },
      { commandId: 'snapshot:save', args: ['file'] },
    );
    silenceTlsServerNameWarning();
    const target = resolveTarget({ ...connectionFromFlags(flags as unknown as ConnectionFlags), endpoints: await endpointsFromFlags(flags) });
    await saveAndPrint(target, args[0], flags.force === true, flags['write-out'] as WriteOut, (line) => process.stdout.write(`${line}\n`));
    return EXIT.OK;
  } catch (err) {
    tagCommandError(err, 'snapshot:save');
    throw err;
  }
}
