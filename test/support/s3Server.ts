// A real S3-protocol server for tests (s3rver) on 127.0.0.1, in a child
// process with its objects in a directory: tests stop it and start it again on
// the same port and directory to make an outage. Every server is killed when
// the test process exits (and kills itself if the test process dies first).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from './ports.js';

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), 's3ServerMain.js');
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export interface S3Server {
  /** http(s)://127.0.0.1:PORT: give it as --s3-endpoint */
  endpoint: string;
  bucket: string;
  /** s3://BUCKET/PREFIX */
  url(prefix?: string): string;
  /** the environment of a client with the right credentials (and no instance metadata) */
  env: Record<string, string>;
  /** the same with wrong keys */
  wrongKeysEnv: Record<string, string>;
  /** the right access key with a wrong secret (the server checks every request's SigV4 signature) */
  wrongSecretEnv: Record<string, string>;
  running(): boolean;
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after 2 s; resolves once it has exited */
  stop(): Promise<void>;
}

const S3RVER_KEYS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export async function startS3Server(dir: string, seed: string, o: { bucket?: string; tls?: { key: string; cert: string } } = {}): Promise<S3Server> {
  const [port] = await freePorts(1, `s3-${seed}`);
  const bucket = o.bucket ?? 'lifeboat';
  let child: ChildProcess | undefined;
  const common = { AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true' };
  const server: S3Server = {
    endpoint: `${o.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    bucket,
    url: (prefix = '') => `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
    env: { ...common, ...S3RVER_KEYS },
    wrongKeysEnv: { ...common, AWS_ACCESS_KEY_ID: 'NOTTHEKEY', AWS_SECRET_ACCESS_KEY: 'not-the-secret-either' },
    wrongSecretEnv: { ...common, AWS_ACCESS_KEY_ID: S3RVER_KEYS.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: 'not-the-secret' },
    running: () => child !== undefined,
    async start() {
      if (child) return;
      const args = [MAIN, String(port), dir, bucket, ...(o.tls ? [o.tls.key, o.tls.cert] : [])];
      const c = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
      running.add(c);
      c.once('exit', () => {
        running.delete(c);
        if (child === c) child = undefined;
      });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`s3rver did not start on port ${port} within 15 s`)), 15_000);
        let out = '';
        c.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('ready\n')) {
            clearTimeout(timer);
            resolve();
          }
        });
        c.once('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`s3rver exited (${code}) before it was ready`));
        });
      }).catch((e: unknown) => {
        c.kill('SIGKILL');
        throw e;
      });
      child = c;
    },
    async stop() {
      const c = child;
      if (!c) return;
      child = undefined;
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    },
  };
  await server.start();
  return server;
}
