// `lifeboat server`: its run, shared by the oclif command (commands/server.ts:
// --help) and the lean entry (serverEntry.ts), which every `lifeboat server`
// goes through without loading oclif and the other commands.
import { EXIT } from './exitCodes.js';
import { failpointsInEffect } from '../common/failpoint.js';
import { buildServerConfig, ConfigError } from '../server/config.js';
import { createLogger } from '../server/logger.js';
import { DataDirLockedError } from '../storage/errors.js';
import { MemberExit } from '../server/member.js';
import { startMember } from '../server/startup.js';
import { silenceTlsServerNameWarning } from './warnings.js';
import type { ServerFlags } from './serverFlags.js';

/** An error that ends `lifeboat server` with `code` (the shape exitFor reads, as oclif's this.error makes it). */
const exitWith = (message: string, code: number) => Object.assign(new Error(message), { oclif: { exit: code } });

/**
 * Runs one member in the foreground until a signal (0) or its own exit (its
 * code); resolves to the exit code. A member that does not start throws with
 * the code it ends with: 2 bad flags, 3 refused (data dir locked), else its own.
 */
export async function runServer(flags: ServerFlags): Promise<number> {
  // Logs are JSON lines: no Node warning about https://<IP> peer URLs in between.
  silenceTlsServerNameWarning();
  let cfg;
  try {
    cfg = buildServerConfig({ ...flags, 'quota-backend-bytes': flags['quota-backend-bytes'] || 2 * 1024 ** 3 });
  } catch (e) {
    if (e instanceof ConfigError) throw exitWith(e.message, EXIT.USAGE);
    throw e;
  }
  let log;
  try {
    log = createLogger({ name: cfg.name }, flags['log-level']);
  } catch (e) {
    throw exitWith((e as Error).message, EXIT.USAGE);
  }
  // A test build's member started with failpoints says so first: its failures are on purpose.
  const faults = __LIFEBOAT_FAULTS__ && failpointsInEffect();
  if (faults) log.warn(faults, 'failpoints set: this member fails on purpose where they say (a test build)');
  let member;
  try {
    member = await startMember(cfg, log);
    await member.start();
  } catch (e) {
    // A data dir locked by a running member is a refusal (3), as for every command.
    const code = e instanceof MemberExit ? e.code : e instanceof DataDirLockedError ? EXIT.REFUSED : EXIT.FAILURE;
    log.error({ error: (e as Error).message }, 'member did not start');
    if (member) await member.stop().catch(() => undefined);
    throw exitWith((e as Error).message, code);
  }
  const running = member;
  const code = await new Promise<number>((resolve) => {
    const onSignal = (sig: string) => {
      log.info({ signal: sig }, 'received signal, stopping');
      resolve(EXIT.OK);
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    // exited() only ever resolves
    void running.exited().then((e) => resolve(e.code));
  });
  await running.stop();
  log.info({ code }, 'stopped');
  return code;
}
