// `lifeboat migrate` on a terminal: connects (migrate/connect.ts), runs migrate()
// with a copy progress bar and log lines on stderr, and turns the first interrupt
// (SIGINT, SIGTERM) into "finish" — with --once, or the second time, "stop now".
import { EXIT } from './exitCodes.js';
import { progressBar } from './progressBar.js';
import { silenceTlsServerNameWarning } from './warnings.js';
import { connectMigration, type MigrationRequest } from '../migrate/connect.js';
import { migrate, type MigrateResult } from '../migrate/migration.js';

/** Runs the migration to its end; an interrupted one throws (exit 1) naming where its progress is kept. */
export async function runMigration(req: MigrationRequest): Promise<MigrateResult> {
  silenceTlsServerNameWarning();
  const conn = connectMigration(req);
  const file = conn.progressFile;

  // First interrupt: finish (drain, verify); in --once mode, or the second time: stop now.
  const finish = new AbortController();
  const abort = new AbortController();
  const onSignal = () => {
    if (!req.once && !finish.signal.aborted) finish.abort();
    else abort.abort(new Error(`interrupted; progress is kept in ${file}: run the same command to go on`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const bar = progressBar('copy', process.stderr, String);
  try {
    const result = await migrate({
      ...conn,
      finish: finish.signal,
      abort: abort.signal,
      log: (line) => {
        bar.finish();
        process.stderr.write(`${line}\n`);
      },
      onCopyProgress: (done, total) => bar.update(done, total),
    });
    bar.finish();
    return result;
  } catch (err) {
    bar.finish();
    if (abort.signal.aborted) throw Object.assign(new Error((abort.signal.reason as Error).message), { oclif: { exit: EXIT.FAILURE } });
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    conn.close();
  }
}
