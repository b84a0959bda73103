import { Flags } from '@oclif/core';
import { BaseCommand, durationFlag } from '../src/cli/baseCommand.js';
import { EXIT } from '../src/cli/exitCodes.js';
import { progressBar } from '../src/cli/progressBar.js';
import { silenceTlsServerNameWarning } from '../src/cli/warnings.js';
import { EtcdClient } from '../src/client/etcdClient.js';
import { migrateOutput } from '../src/migrate/output.js';
import { migrate, progressPath } from '../src/migrate/migration.js';

const side = (which: 'from' | 'to', what: string) => `${what} for the ${which === 'from' ? 'source' : 'destination'} cluster`;

export default class Migrate extends BaseCommand {
  static override description = `Copy every key under --prefix from one etcd-API cluster to another (real etcd or Lifeboat, either way) at one consistent revision, then keep the destination in step by watching the source, applying each revision's changes together, in order. Interrupting it (Ctrl-C, SIGTERM) finishes: it applies the source's changes up to that moment, verifies both sides key by key at that revision, and stops; a second interrupt stops at once. --once copies, catches up, verifies and stops. Progress is recorded (--progress-file), so a killed run goes on where it stopped when started again with the same flags. Leases are not carried over: keys arrive without one.`;

  static override examples = [
    '<%= config.bin %> migrate --from 10.0.0.1:2379,10.0.0.2:2379 --to 10.1.0.1:2379 --prefix /registry/',
    '<%= config.bin %> migrate --from https://etcd-a:2379 --from-cacert ca.pem --from-cert client.pem --from-key client-key.pem --to 10.1.0.1:2379 --once',
    '<%= config.bin %> migrate --from 10.0.0.1:2379 --to 10.1.0.1:2379 --prefix /app/ --dest-prefix /app-v2/',
  ];

  static override flags = {
    from: Flags.string({ description: 'endpoints of the source cluster, comma-separated', required: true }),
    to: Flags.string({ description: 'endpoints of the destination cluster, comma-separated', required: true }),
    prefix: Flags.string({ description: 'copy the keys under this prefix (default: every key)', default: '' }),
    'dest-prefix': Flags.string({ description: 'write them under this prefix instead (default: --prefix)' }),
    once: Flags.boolean({ description: 'copy, catch up to the current revision, verify, and stop', default: false }),
    'progress-file': Flags.string({ description: 'where progress is recorded (default: one file per migration under $XDG_STATE_HOME/lifeboat/migrations/)' }),
    restart: Flags.boolean({ description: 'forget recorded progress, delete what that run copied, and copy everything again', default: false }),
    'from-cacert': Flags.string({ description: side('from', 'CA bundle (PEM)') }),
    'from-cert': Flags.string({ description: side('from', 'client certificate (PEM)') }),
    'from-key': Flags.string({ description: side('from', 'client private key (PEM)') }),
    'to-cacert': Flags.string({ description: side('to', 'CA bundle (PEM)') }),
    'to-cert': Flags.string({ description: side('to', 'client certificate (PEM)') }),
    'to-key': Flags.string({ description: side('to', 'client private key (PEM)') }),
    'insecure-skip-tls-verify': Flags.boolean({ description: 'accept any server certificate on both sides; test clusters only' }),
    'dial-timeout': durationFlag('dial-timeout', 2000, '2s', 'how long to wait for a connection, e.g. 2s'),
    'command-timeout': durationFlag('command-timeout', 10_000, '10s', 'deadline of each request, e.g. 10s'),
    debug: Flags.boolean({ description: 'log every dial and request to stderr' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Migrate);
    silenceTlsServerNameWarning();
    const client = (endpoints: string, cacert?: string, cert?: string, key?: string) =>
      new EtcdClient({
        endpoints,
        dialTimeoutMs: flags['dial-timeout'],
        commandTimeoutMs: flags['command-timeout'],
        tls: { caFile: cacert, certFile: cert, keyFile: key, insecureSkipVerify: flags['insecure-skip-tls-verify'] },
        debug: flags.debug ? (line) => process.stderr.write(`debug: ${line}\n`) : undefined,
      });
    const src = client(flags.from, flags['from-cacert'], flags['from-cert'], flags['from-key']);
    const dst = client(flags.to, flags['to-cacert'], flags['to-cert'], flags['to-key']);
    const destPrefix = flags['dest-prefix'] ?? flags.prefix;
    const file = flags['progress-file'] ?? progressPath(src.endpoints.map((e) => e.text), dst.endpoints.map((e) => e.text), flags.prefix, destPrefix);

    // First interrupt: finish (drain, verify); in --once mode, or the second time: stop now.
    const finish = new AbortController();
    const abort = new AbortController();
    const onSignal = () => {
      if (!flags.once && !finish.signal.aborted) finish.abort();
      else abort.abort(new Error(`interrupted; progress is kept in ${file}: run the same command to go on`));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const bar = progressBar('copy', process.stderr, String);
    try {
      const result = await migrate({
        src,
        dst,
        sourcePrefix: Buffer.from(flags.prefix),
        destPrefix: Buffer.from(destPrefix),
        once: flags.once,
        progressFile: file,
        restart: flags.restart,
        fault: process.env.LIFEBOAT_FAULT,
        finish: finish.signal,
        abort: abort.signal,
        log: (line) => {
          bar.finish();
          process.stderr.write(`${line}\n`);
        },
        onCopyProgress: (done, total) => bar.update(done, total),
      });
      bar.finish();
      this.print(flags['write-out'], result, migrateOutput);
    } catch (err) {
      bar.finish();
      if (abort.signal.aborted) this.error((abort.signal.reason as Error).message, { exit: EXIT.FAILURE });
      throw err;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      src.close();
      dst.close();
    }
  }
}
