import { Flags } from '#oclif-core';
import { BaseCommand, credentialsFor, durationFlag } from '../src/cli/baseCommand.js';
import { runMigration } from '../src/cli/migrateRun.js';
import { migrateOutput } from '../src/cli/output/migrate.js';

const side = (which: 'from' | 'to', what: string) => `${what} for the ${which === 'from' ? 'source' : 'destination'} cluster`;

export default class Migrate extends BaseCommand {
  static override description = `Copy every key under --prefix from one etcd-API cluster to another (real etcd or Lifeboat, either way) at one consistent revision, then keep the destination in step by watching the source, applying each revision's changes together, in order. Interrupting it (Ctrl-C, SIGTERM) finishes: it applies the source's changes up to that moment, verifies both sides key by key at that revision, and stops; a second interrupt stops at once. --once copies, catches up, verifies and stops. Progress is recorded (--progress-file), so a killed run goes on where it stopped when started again with the same flags. Leases are not carried over: keys arrive without one. Users and roles are copied first (--no-copy-auth: not), users without a password; auth is not enabled on the destination.`;

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
    'copy-auth': Flags.boolean({
      description:
        "copy the source's roles (with their permissions) and users (with their roles, without passwords: etcd never returns them) before the keys; --no-copy-auth copies keys only",
      default: true,
      allowNo: true,
    }),
    'from-cacert': Flags.string({ description: side('from', 'CA bundle (PEM)') }),
    'from-cert': Flags.string({ description: side('from', 'client certificate (PEM)') }),
    'from-key': Flags.string({ description: side('from', 'client private key (PEM)') }),
    'to-cacert': Flags.string({ description: side('to', 'CA bundle (PEM)') }),
    'to-cert': Flags.string({ description: side('to', 'client certificate (PEM)') }),
    'to-key': Flags.string({ description: side('to', 'client private key (PEM)') }),
    'from-user': Flags.string({ description: side('from', 'etcd auth: username[:password]'), env: 'LIFEBOAT_FROM_USER' }),
    'from-password': Flags.string({ description: side('from', 'etcd auth: the password of --from-user'), env: 'LIFEBOAT_FROM_PASSWORD' }),
    'to-user': Flags.string({ description: side('to', 'etcd auth: username[:password]'), env: 'LIFEBOAT_TO_USER' }),
    'to-password': Flags.string({ description: side('to', 'etcd auth: the password of --to-user'), env: 'LIFEBOAT_TO_PASSWORD' }),
    'insecure-skip-tls-verify': Flags.boolean({ description: 'accept any server certificate on both sides; test clusters only' }),
    'dial-timeout': durationFlag('dial-timeout', 2000, '2s', 'how long to wait for a connection, e.g. 2s'),
    'command-timeout': durationFlag('command-timeout', 10_000, '10s', 'deadline of each request, e.g. 10s'),
    debug: Flags.boolean({ description: 'log every dial and request to stderr' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Migrate);
    const result = await runMigration({
      from: {
        endpoints: flags.from,
        cacert: flags['from-cacert'],
        cert: flags['from-cert'],
        key: flags['from-key'],
        ...credentialsFor(
          flags['from-user'],
          flags['from-password'],
          undefined,
          '--from-user',
          '--from-password, NAME:PASSWORD or LIFEBOAT_FROM_PASSWORD',
          'source: ',
        ),
      },
      to: {
        endpoints: flags.to,
        cacert: flags['to-cacert'],
        cert: flags['to-cert'],
        key: flags['to-key'],
        ...credentialsFor(
          flags['to-user'],
          flags['to-password'],
          undefined,
          '--to-user',
          '--to-password, NAME:PASSWORD or LIFEBOAT_TO_PASSWORD',
          'destination: ',
        ),
      },
      insecureSkipVerify: flags['insecure-skip-tls-verify'],
      dialTimeoutMs: flags['dial-timeout'],
      commandTimeoutMs: flags['command-timeout'],
      debug: flags.debug ? (line) => process.stderr.write(`debug: ${line}\n`) : undefined,
      prefix: flags.prefix,
      destPrefix: flags['dest-prefix'],
      once: flags.once,
      progressFile: flags['progress-file'],
      restart: flags.restart,
      copyAuth: flags['copy-auth'],
    });
    this.print(flags['write-out'], result, migrateOutput);
  }
}
