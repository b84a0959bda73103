// A kube-apiserver stand-in run by the kubelet stand-in from a kube-apiserver.yaml:
// it serves HTTPS on --advertise-address:--secure-port with --tls-cert-file and
// --tls-private-key-file, and answers /readyz 503 for its first 1.5 s (as a real
// API server does while its post-start hooks run), then 200. Every /readyz answer
// is logged to stdout ("readyz 503"), which the kubelet stand-in keeps in the pod's log.
// At start it reads etcd's revision once (over --etcd-servers with its etcd client
// certificate, etcd's JSON gateway) and logs it ("etcd revision N"), as a real API
// server's watch cache starts from the revision it first lists at.
import { readFileSync } from 'node:fs';
import https from 'node:https';

const flags = new Map<string, string>();
for (const a of process.argv.slice(2)) {
  const m = /^--([^=]+)=(.*)$/.exec(a);
  if (m) flags.set(m[1], m[2]);
}
const NOT_READY_MS = 1500;
const server = https.createServer(
  { cert: readFileSync(flags.get('tls-cert-file') ?? ''), key: readFileSync(flags.get('tls-private-key-file') ?? '') },
  (req, res) => {
    if (req.url !== '/readyz') {
      res.writeHead(404).end();
      return;
    }
    const status = Date.now() - started < NOT_READY_MS ? 503 : 200;
    process.stdout.write(`readyz ${status}\n`);
    res
      .writeHead(status, { 'content-type': 'text/plain' })
      .end(status === 200 ? 'ok' : '[-]poststarthook/start-apiextensions-controllers failed: not finished\n');
  },
);
let started = Date.now();
server.listen(Number(flags.get('secure-port') ?? 6443), flags.get('advertise-address') ?? '127.0.0.1', () => {
  started = Date.now();
  process.stdout.write(`listening on ${flags.get('advertise-address')}:${flags.get('secure-port')}\n`);
});
process.on('SIGTERM', () => process.exit(0));

/** etcd's current revision through its gateway (POST /v3/maintenance/status); undefined when it does not answer. */
function etcdRevision(): Promise<number | undefined> {
  const url = new URL('/v3/maintenance/status', (flags.get('etcd-servers') ?? '').split(',')[0]);
  return new Promise((resolve) => {
    const req = https.request(
      url,
      {
        method: 'POST',
        ca: readFileSync(flags.get('etcd-cafile') ?? ''),
        cert: readFileSync(flags.get('etcd-certfile') ?? ''),
        key: readFileSync(flags.get('etcd-keyfile') ?? ''),
        timeout: 1000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => {
          try {
            const r = Number((JSON.parse(body) as { header?: { revision?: string } }).header?.revision);
            resolve(res.statusCode === 200 && r > 0 ? r : undefined);
          } catch {
            resolve(undefined);
          }
        });
      },
    );
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end('{}');
  });
}

// Bounded: 40 tries 250 ms apart (etcd may start with it).
for (let i = 0; i < 40; i++) {
  const r = await etcdRevision();
  if (r !== undefined) {
    process.stdout.write(`etcd revision ${r}\n`);
    break;
  }
  await new Promise((res) => setTimeout(res, 250));
}
