// A child process running s3rver (a real S3-protocol server) for tests:
// node s3ServerMain.js PORT DIR BUCKET [KEY CERT]. Prints "ready" once it
// listens; exits when its parent goes (standard input closes), so a test that
// dies never leaves one behind.
//
// s3rver listens on an ephemeral port behind a small front on PORT that makes
// it answer as S3 does where it falls short (s3Front.ts): it checks every
// request's SigV4 signature against the secret (s3rver checks only the access
// key, so a wrong secret would pass), and it answers ListMultipartUploads and
// AbortMultipartUpload from s3rver's own record of the uploads it holds
// (s3rver answers NotImplemented). Everything else goes to s3rver unchanged.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { S3_TEST_KEYS, s3Front } from './s3Front.js';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (o: Record<string, unknown>) => S3rverInstance;

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
const [port, directory, bucket, key, cert] = process.argv.slice(2);
const inner = new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory,
  silent: true,
  configureBuckets: [{ name: bucket, configs: [] }],
});
const innerAddress = await inner.run();
const handler = s3Front({ innerPort: innerAddress.port, directory, secrets: S3_TEST_KEYS });
const front = key && cert ? https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, handler) : http.createServer(handler);
const stop = () => {
  front.close();
  front.closeAllConnections();
  void inner.close().finally(() => process.exit(0));
};
process.stdin.on('end', stop).on('close', stop).resume();
process.on('SIGTERM', stop);
await new Promise<void>((resolve, reject) => front.once('error', reject).listen(Number(port), '127.0.0.1', resolve));
process.stdout.write('ready\n');
