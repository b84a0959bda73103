// A child process running s3rver (a real S3-protocol server) for tests:
// node s3ServerMain.js PORT DIR BUCKET [KEY CERT]. Prints "ready" once it
// listens; exits when its parent goes (standard input closes), so a test that
// dies never leaves one behind.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

interface S3rverInstance {
  run(): Promise<unknown>;
  close(): Promise<void>;
}
type S3rverClass = new (o: Record<string, unknown>) => S3rverInstance;

const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
const [port, directory, bucket, key, cert] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(port),
  directory,
  silent: true,
  configureBuckets: [{ name: bucket, configs: [] }],
  ...(key && cert ? { key: readFileSync(key), cert: readFileSync(cert) } : {}),
});
const stop = () => void server.close().finally(() => process.exit(0));
process.stdin.on('end', stop).on('close', stop).resume();
process.on('SIGTERM', stop);
await server.run();
process.stdout.write('ready\n');
