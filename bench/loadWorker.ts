// One load-generator process: runs `clients` concurrent request loops over our
// own etcd v3 client and reports an HDR histogram of latencies. Forked by
// loadGenerator.ts; exits when its parent goes away, so no worker outlives a run.
import { randomBytes } from 'node:crypto';
import * as hdr from 'hdr-histogram-js';
import { EtcdClient } from '../src/client/etcdClient.js';
import type { TxnOp } from '../src/client/types.js';
import { silenceTlsServerNameWarning } from '../src/cli/warnings.js';
import { HISTOGRAM, keyAt, type FromWorker, type LoadJob, type ToWorker } from './loadJobs.js';

/** No client loop issues more requests than this, whatever the duration. */
const MAX_OPS_PER_CLIENT = 5_000_000;
const FILL_ATTEMPTS = 5;

const send = (m: FromWorker) => process.send?.(m);
process.on('disconnect', () => process.exit(0));

let job: LoadJob | undefined;
let clients: EtcdClient[] = [];

process.on('message', (m: ToWorker) => {
  if (m.type === 'job') {
    job = m.job;
    prepare(m.job).then(
      () => send({ type: 'ready' }),
      (e: Error) => send({ type: 'failed', message: e.message }),
    );
  } else if (m.type === 'go' && job) {
    execute(job).then(
      (r) => {
        send(r);
        for (const c of clients) c.close();
      },
      (e: Error) => send({ type: 'failed', message: e.message }),
    );
  }
});

/** One channel per endpoint, dialled before the clock starts. */
async function prepare(j: LoadJob): Promise<void> {
  if (j.tls) silenceTlsServerNameWarning();
  clients = j.endpoints.map((e) => new EtcdClient({ endpoints: [e], tls: j.tls, dialTimeoutMs: 5000, commandTimeoutMs: 10_000 }));
  await Promise.all(clients.map((c) => c.status()));
}

async function execute(j: LoadJob): Promise<FromWorker> {
  const histogram = hdr.build(HISTOGRAM);
  const value = randomBytes(j.valueSize);
  const deadline = performance.now() + j.durationMs;
  const op = j.op;
  let ops = 0;
  let errors = 0;
  let firstError: string | undefined;
  let nextFill = op.kind === 'fill' ? op.from : 0;

  const loop = async (n: number): Promise<void> => {
    const client = clients[(j.firstClient + n) % clients.length];
    for (let i = 0; i < MAX_OPS_PER_CLIENT && performance.now() < deadline; i++) {
      let request: () => Promise<unknown>;
      if (op.kind === 'fill') {
        if (nextFill >= op.to) return;
        const from = nextFill;
        const to = Math.min(op.to, from + op.batch);
        nextFill = to;
        const success: TxnOp[] = [];
        for (let k = from; k < to; k++) success.push({ put: { key: keyAt(op.keyPrefix, k), value } });
        // A fill must write every key: a txn that failed (a timeout under load) is retried a few times.
        request = async () => {
          for (let attempt = 1; ; attempt++) {
            try {
              return await client.txn({ success });
            } catch (e) {
              if (attempt >= FILL_ATTEMPTS) throw e;
            }
          }
        };
      } else {
        const key = keyAt(op.keyPrefix, Math.floor(Math.random() * op.keySpace));
        request = op.kind === 'put' ? () => client.put(key, value) : () => client.range(key, { serializable: op.serializable });
      }
      const t0 = performance.now();
      try {
        await request();
        histogram.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
        ops++;
      } catch (e) {
        errors++;
        firstError ??= (e as Error).message;
      }
    }
  };

  const started = performance.now();
  await Promise.all(Array.from({ length: j.clients }, (_, n) => loop(n)));
  const seconds = (performance.now() - started) / 1000;
  return { type: 'done', ops, errors, firstError, seconds, histogram: hdr.encodeIntoCompressedBase64(histogram) };
}
