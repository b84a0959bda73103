import { Args, Flags } from '#oclif-core';
import { EtcdCommand } from '../src/cli/baseCommand.js';
import { putOutput } from '../src/cli/output/kv.js';
import { InputError } from '../src/common/errors.js';
import { parseLeaseId } from '../src/client/ids.js';

export default class Put extends EtcdCommand {
  static override description = 'Write a key. The value is the second argument, or standard input when it is omitted.';

  static override examples = [
    '<%= config.bin %> put /config/mode blue',
    '<%= config.bin %> put /config/mode green --prev-kv',
    '<%= config.bin %> put /session/a 1 --lease 694d71ddacfda227',
    'cat cert.pem | <%= config.bin %> put /certs/web',
  ];

  static override args = {
    key: Args.string({ description: 'the key', required: true }),
    value: Args.string({ description: 'the value (default: read standard input)' }),
  };

  static override flags = {
    lease: Flags.string({ description: 'attach the key to this lease (hex ID)' }),
    'prev-kv': Flags.boolean({ description: 'print the previous key-value pair' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Put);
    const lease = flags.lease === undefined ? undefined : parseLeaseId(flags.lease);
    if (args.key === '') throw new InputError('KEY is empty: give a key, e.g. /config/mode');
    const value = args.value ?? (await readStdin());
    const result = await this.client(flags).put(args.key, value, { lease, prevKv: flags['prev-kv'] });
    this.print(flags['write-out'], result, putOutput);
  }
}

async function readStdin(): Promise<Buffer> {
  if (process.stdin.isTTY) throw new InputError('VALUE is missing: give it as the second argument or on standard input');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
