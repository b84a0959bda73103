// Connecting a migration: a client for each cluster (its endpoints, TLS files
// and timeouts), the prefixes and the default progress file. The caller closes
// the clients (close()) when the migration ends.
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import { progressPath, type MigrateOptions } from './migration.js';

/** One side of a migration: endpoints (comma-separated) and its TLS files. */
export interface ClusterSide {
  endpoints: string;
  cacert?: string;
  cert?: string;
  key?: string;
  /** etcd auth on that side */
  credentials?: ConnectionOptions['credentials'];
}

export interface MigrationRequest {
  from: ClusterSide;
  to: ClusterSide;
  /** accept any server certificate on both sides */
  insecureSkipVerify?: boolean;
  dialTimeoutMs: number;
  commandTimeoutMs: number;
  /** every dial and request, one line each */
  debug?: (line: string) => void;
  /** copy the keys under this prefix ('' for every key) */
  prefix: string;
  /** write them under this prefix instead (default: prefix) */
  destPrefix?: string;
  once: boolean;
  /** default: progressPath(...), one file per migration */
  progressFile?: string;
  restart: boolean;
  /** copy the source's users, roles and grants before the keys */
  copyAuth: boolean;
}

/** The options of migrate() except its signals and callbacks, with the clients to close. */
export type MigrationConnection = Pick<MigrateOptions, 'src' | 'dst' | 'sourcePrefix' | 'destPrefix' | 'once' | 'progressFile' | 'restart' | 'copyAuth'> & {
  close(): void;
};

export function connectMigration(req: MigrationRequest): MigrationConnection {
  const client = (side: ClusterSide) =>
    clientFor(side.endpoints, {
      dialTimeoutMs: req.dialTimeoutMs,
      commandTimeoutMs: req.commandTimeoutMs,
      tls: { caFile: side.cacert, certFile: side.cert, keyFile: side.key, insecureSkipVerify: req.insecureSkipVerify },
      debug: req.debug,
      ...(side.credentials ? { credentials: side.credentials } : {}),
    });
  const src = client(req.from);
  const dst = client(req.to);
  const destPrefix = req.destPrefix ?? req.prefix;
  const progressFile =
    req.progressFile ??
    progressPath(
      src.endpoints.map((e) => e.text),
      dst.endpoints.map((e) => e.text),
      req.prefix,
      destPrefix,
    );
  return {
    src,
    dst,
    sourcePrefix: Buffer.from(req.prefix),
    destPrefix: Buffer.from(destPrefix),
    once: req.once,
    progressFile,
    restart: req.restart,
    copyAuth: req.copyAuth,
    close: () => {
      src.close();
      dst.close();
    },
  };
}
