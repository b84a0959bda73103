// Child-process entry of a no-op etcd gRPC server (see noopServer.ts): binds the
// port in argv[2], says 'ready', answers every call at once, exits with its parent.
import * as grpc from '#grpc-js';
import { service } from '../src/proto/grpcClients.js';

process.on('disconnect', () => process.exit(0));

const port = Number(process.argv[2]);
const server = new grpc.Server();
const header = { cluster_id: '1', member_id: '1', revision: '1', raft_term: '1' };
const answer = (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header });
server.addService(service('etcdserverpb.KV').service, { Range: answer, Put: answer, DeleteRange: answer, Txn: answer, Compact: answer });
server.addService(service('etcdserverpb.Maintenance').service, {
  Status: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header, version: 'noop' }),
});
server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    console.error(`noop server: ${err.message}`);
    process.exit(1);
  }
  process.send?.('ready');
});
