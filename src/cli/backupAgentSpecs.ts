// The flags of the backup commands that make objects (`backup run`, `backup
// full`) as plain data (flagParser.ts), and what they give: the spool,
// compression and encryption, and the agent's schedule and limits. Each is also
// read from LIFEBOAT_<FLAG>. No oclif here: `backup run` parses them without it
// (backupRunMain.ts); backupAgentFlags.ts builds oclif's flags from the same tables.
import fs from 'node:fs';
import { Cron } from 'croner';
import type { Compression } from '../backup/layout.js';
import type { EncodeOptions } from '../backup/objectCodec.js';
import { InputError } from '../common/errors.js';
import { durationSpec } from './connectionFlags.js';
import { envName, type FlagSpec } from './flagParser.js';

const env = (name: string) => [envName('LIFEBOAT', name)];

const size = (name: string, description: string, def: number, defText: string) =>
  ({ type: 'size', description, default: def, defaultHelp: defText, helpValue: 'SIZE', env: env(name) }) as const satisfies FlagSpec;

export const CODEC_FLAG_SPECS = {
  compression: { type: 'string', description: 'compression of stored objects', options: ['gzip', 'brotli', 'none'], default: 'gzip', env: env('compression') },
  'encrypt-to': {
    type: 'strings',
    description: 'encrypt every object to this age recipient (age1...; repeat for more); the identity never touches the store or the agent',
    helpValue: 'RECIPIENT',
  },
  'recipients-file': {
    type: 'string',
    description: 'age recipients, one per line (# comments), as age -R reads them',
    env: env('recipients-file'),
    helpValue: 'FILE',
  },
} as const satisfies Record<string, FlagSpec>;

export const AGENT_FLAG_SPECS = {
  'spool-dir': {
    type: 'string',
    description: 'a local directory where every object is written durably before it is uploaded (and waits while the store is down)',
    env: env('spool-dir'),
    helpValue: 'DIR',
    required: true,
  },
  ...CODEC_FLAG_SPECS,
  'full-schedule': {
    type: 'string',
    description: "when to take fulls: a cron expression (minute hour day month weekday, the agent's local time); a full of an unchanged cluster is skipped",
    default: '0 */6 * * *',
    env: env('full-schedule'),
  },
  'full-after-events': {
    type: 'integer',
    description: 'also take a full after this many events since the last (0: off)',
    default: 0,
    env: env('full-after-events'),
  },
  'full-after-bytes': size('full-after-bytes', 'also take a full after this many bytes of changes since the last (0: off)', 0, '0'),
  'delta-interval': durationSpec('delta-interval', 5000, '5s', 'close a segment this long after its first revision (an idle cluster writes none)'),
  'segment-size': size('segment-size', 'close a segment once it is this large', 4 * 1024 ** 2, '4MiB'),
  'hash-every': {
    type: 'integer',
    description: 'record HashKV as a hash point every this many revisions, for `backup verify` (0: after fulls only)',
    default: 10000,
    env: env('hash-every'),
  },
  'spool-limit': size(
    'spool-limit',
    'past this much in the spool the agent stops reading the watch (and says so) until the store takes uploads again',
    1024 ** 3,
    '1GiB',
  ),
  'listen-metrics': {
    type: 'string',
    description: 'serve /metrics (Prometheus) and /health on this URL, e.g. http://127.0.0.1:9479',
    env: env('listen-metrics'),
    helpValue: 'URL',
  },
  force: { type: 'boolean', description: "take the store's lock from another agent (one that is gone for good)", default: false },
  'print-unit': { type: 'boolean', description: 'print a systemd unit and environment file that run this agent as given, and exit', default: false },
} as const satisfies Record<string, FlagSpec>;

/** The age recipients of --encrypt-to and --recipients-file, checked for shape. */
export function recipientsOf(flags: { 'encrypt-to'?: string[]; 'recipients-file'?: string }): string[] {
  const out = [...(flags['encrypt-to'] ?? [])];
  const file = flags['recipients-file'];
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new InputError(`--recipients-file ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    for (const line of text.split(/\r?\n/)) if (line.trim() && !line.trim().startsWith('#')) out.push(line.trim());
  }
  // Never echo the value: a mistaken identity file would put its secret key on stderr (and in the journal).
  for (const [i, r] of out.entries()) {
    if (/^AGE-SECRET-KEY-/i.test(r))
      throw new InputError(`age recipient ${i + 1} is an age identity (a secret key), not a recipient: give the public key, the output of age-keygen -y`);
    if (!/^age1[0-9a-z]{50,}$/.test(r)) throw new InputError(`age recipient ${i + 1} is not an age public key (age1...): give the output of age-keygen -y`);
  }
  return out;
}

export function codecOf(flags: { compression: string; 'encrypt-to'?: string[]; 'recipients-file'?: string }): EncodeOptions {
  return { compression: flags.compression as Compression, recipients: recipientsOf(flags) };
}

/** A cron expression croner takes, or a one-line error naming the flag. */
export function checkSchedule(expr: string): string {
  try {
    new Cron(expr, { paused: true });
  } catch (e) {
    throw new InputError(`--full-schedule ${JSON.stringify(expr)}: ${(e as Error).message}; give a cron expression such as "0 */6 * * *"`);
  }
  return expr;
}
