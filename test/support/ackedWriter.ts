// A client load that records what was acknowledged: eight loops of puts as fast as
// acknowledgements come back, against a Lifeboat member or real etcd (same API),
// until stopped. "Every acknowledged key" is checked against this list.
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';

type KvClient = { Put(req: unknown, opts: unknown, cb: (e: grpc.ServiceError | null) => void): void; close(): void };

export interface AckedWriter {
  acked: string[];
  stop(): Promise<string[]>;
}

/** Keys `${prefix}NNNNNN`, value `v`; a failed put is retried under a new key after 20 ms. */
export function ackedWriter(endpoint: string, prefix = 'acked/'): AckedWriter {
  const KV = service('etcdserverpb.KV');
  const kv = new KV(endpoint.replace(/^http:\/\//, ''), grpc.credentials.createInsecure()) as unknown as KvClient;
  const acked: string[] = [];
  let running = true;
  let i = 0;
  const loops = Array.from({ length: 8 }, async () => {
    while (running) {
      const key = `${prefix}${String(i++).padStart(6, '0')}`;
      const ok = await new Promise<boolean>((resolve) =>
        kv.Put({ key: Buffer.from(key), value: Buffer.from('v') }, { deadline: Date.now() + 2000 }, (e) => resolve(!e)),
      );
      if (ok) acked.push(key);
      else await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    acked,
    async stop() {
      running = false;
      await Promise.all(loops);
      kv.close();
      return acked;
    },
  };
}
