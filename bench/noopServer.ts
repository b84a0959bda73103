// A gRPC server speaking etcd's KV and Maintenance.Status that does nothing but
// answer: driving it measures the load generator's own ceiling on this machine.
import * as grpc from '@grpc/grpc-js';
import { service } from '../src/api/protos.js';
import { freePorts } from '../test/support/ports.js';

export interface NoopServer {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startNoopServer(): Promise<NoopServer> {
  const [port] = await freePorts(1, 'bench-noop');
  const server = new grpc.Server();
  const header = { cluster_id: '1', member_id: '1', revision: '1', raft_term: '1' };
  const answer = (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header });
  server.addService(service('etcdserverpb.KV').service, { Range: answer, Put: answer, DeleteRange: answer, Txn: answer, Compact: answer });
  server.addService(service('etcdserverpb.Maintenance').service, { Status: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header, version: 'noop' }) });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return {
    endpoint: `127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
