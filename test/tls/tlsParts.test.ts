// The parts of member TLS on their own: the rate-limited refusal log, TLS
// files re-read when they change (a half-rotated pair never used), and the
// verified client certificate's CN reaching a gRPC handler through a TLS
// listener ended before the :authority shim.
import * as grpc from '#grpc-js';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { listenWithAuthorityRewrite } from '../../src/net/authorityListener.js';
import { RefusalLog } from '../../src/net/refusalLog.js';
import { CLIENT_TLS_FLAGS, WatchedTlsFiles } from '../../src/net/tlsFiles.js';
import { callIdentity, type ConnectionIdentity } from '../../src/net/tlsTermination.js';
import { service } from '../../src/proto/grpcClients.js';
import { serviceDefinition } from '../../src/proto/load.js';
import { GrpcServer } from '../../src/net/grpcServer.js';
import { issueCert, makeCerts, type TestCerts } from '../support/certs.js';
import { requireTool } from '../support/tools.js';

let certs: TestCerts;

before(async () => {
  requireTool('openssl');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-parts-'));
  certs = await makeCerts(dir);
});

after(() => {
  if (certs) rmSync(certs.dir, { recursive: true, force: true });
});

test('a refusal is logged once per kind and window, with the count left out; all kinds together are capped', () => {
  const lines: Array<Record<string, unknown>> = [];
  let now = 1_000_000;
  const log = new RefusalLog({ warn: (fields, msg) => lines.push({ ...fields, msg }) }, 60_000, 3, () => now);
  const refuse = (cn: string, port = 40000) => log.refused({ listener: 'client', remoteAddr: `127.0.0.1:${port}`, cn, error: 'certificate has expired' });
  for (let i = 0; i < 1000; i++) refuse('a', 40000 + i); // one client retrying from new ports
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0], { listener: 'client', remoteAddr: '127.0.0.1:40000', cn: 'a', error: 'certificate has expired', msg: 'rejected connection' });
  refuse('b');
  refuse('c');
  refuse('d'); // over the cap of 3 lines per window
  refuse('e');
  assert.deepEqual(
    lines.map((l) => l.cn),
    ['a', 'b', 'c'],
  );
  now += 60_000;
  refuse('a');
  assert.equal(lines.length, 4);
  assert.equal(lines[3].suppressed, 999);
  assert.equal(lines[3].suppressedOther, 2);
});

test('TLS files are read again when they change; a certificate without its matching key is not used until the key arrives', async () => {
  const dir = path.join(certs.dir, 'watched');
  mkdirSync(dir);
  const cert = path.join(dir, 'tls.crt');
  const key = path.join(dir, 'tls.key');
  copyFileSync(certs.serverCert, cert);
  copyFileSync(certs.serverKey, key);
  const bad: string[] = [];
  const files = new WatchedTlsFiles({ certFile: cert, keyFile: key }, CLIENT_TLS_FLAGS, (m) => bad.push(m));
  assert.equal(files.refresh(), false, 'nothing changed');
  const next = await issueCert(certs, 'watched-next', { cn: 'next' });
  copyFileSync(next.cert, cert);
  assert.equal(files.refresh(), false, 'the new certificate without its key is not taken');
  assert.equal(files.refresh(), false, 'and not tried again until a file changes');
  assert.equal(bad.length, 1);
  assert.match(bad[0], /do not belong together/);
  assert.deepEqual(files.current().cert, readFileSync(certs.serverCert));
  copyFileSync(next.key, key);
  assert.equal(files.refresh(), true);
  assert.deepEqual(files.current().cert, readFileSync(next.cert));
  assert.equal(files.generation, 1);
});

test("a gRPC handler behind a TLS listener reads the verified client certificate's CN (grpc-js's auth context is empty there)", async () => {
  const Maintenance = service('etcdserverpb.Maintenance');
  const seen: Array<ConnectionIdentity | undefined> = [];
  const server = new GrpcServer();
  server.addService(serviceDefinition('etcdserverpb.Maintenance'), {
    Status: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      seen.push(callIdentity(call));
      cb(null, { header: { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' }, version: 'x' });
    },
  });
  const refused: string[] = [];
  const listener = await listenWithAuthorityRewrite(server, '127.0.0.1:0', {
    tls: {
      files: new WatchedTlsFiles({ certFile: certs.serverCert, keyFile: certs.serverKey, trustedCaFile: certs.ca }, CLIENT_TLS_FLAGS),
      clientCertAuth: true,
      listener: 'client',
      refusals: new RefusalLog({ warn: (f) => refused.push(String(f.error)) }),
    },
  });
  const creds = grpc.credentials.createSsl(readFileSync(certs.ca), readFileSync(certs.clientKey), readFileSync(certs.clientCert));
  const client = new Maintenance(`127.0.0.1:${listener.port}`, creds) as unknown as grpc.Client & {
    Status(req: unknown, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: { version: string }) => void): void;
  };
  try {
    const r = await new Promise<{ version: string }>((resolve, reject) =>
      client.Status({}, { deadline: Date.now() + 5000 }, (e, res) => (e ? reject(e) : resolve(res as { version: string }))),
    );
    assert.equal(r.version, 'x');
    assert.deepEqual(seen, [{ cn: 'lifeboat-client', verified: true }]);
    assert.deepEqual(refused, []);
  } finally {
    client.close();
    await listener.close();
    server.forceShutdown();
  }
});
