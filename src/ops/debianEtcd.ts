// Debian's packaged etcd (etcd-server): etcd.service runs /usr/bin/etcd with
// the ETCD_* variables of /etc/default/etcd (EnvironmentFile=-/etc/default/%p,
// so a unit's env file is named after it), over the unit's own defaults
// ETCD_NAME=%H (the host name) and ETCD_DATA_DIR=/var/lib/etcd/default.
// What that file says about its member, the few edits a recovery makes to it
// (each a splice of its own line, the rest byte for byte as it was, re-read to
// check), and systemctl to stop and start the unit.
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { InputError } from '../common/errors.js';
import { readConfigFile, tlsFilesOf, type MemberTlsFiles } from './memberConfigFile.js';
import { envLine } from './supervisor.js';

export const DEFAULT_ETCD_ENV_FILE = '/etc/default/etcd';
/** etcd.service's Environment= defaults, which the env file overrides. */
const UNIT_DEFAULTS = { ETCD_DATA_DIR: '/var/lib/etcd/default' };

export interface DebianEtcd {
  file: string;
  text: string;
  /** the unit that reads the file (Debian: EnvironmentFile=-/etc/default/%p) */
  unit: string;
  /** the settings as etcd flags: ETCD_INITIAL_CLUSTER → initial-cluster */
  flags: Map<string, string>;
  name: string;
  hostDataDir: string;
  advertiseClientUrls: string[];
  initialAdvertisePeerUrls: string[];
  tls: MemberTlsFiles;
}

const LINE = /^\s*(?:export\s+)?(ETCD_[A-Z0-9_]+)=(.*)$/;

/** A value as systemd reads it: one pair of quotes removed, backslash escapes inside double quotes undone. */
function unquote(v: string): string {
  const t = v.trim();
  if (/^".*"$/s.test(t)) return t.slice(1, -1).replace(/\\(["\\$`])/g, '$1');
  if (/^'.*'$/s.test(t)) return t.slice(1, -1);
  return t;
}

export function parseDebianEtcd(file: string, text: string): DebianEtcd {
  const vars = new Map<string, string>(Object.entries(UNIT_DEFAULTS));
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m) vars.set(m[1], unquote(m[2]));
    else if (line.trim() !== '' && !/^\s*[#;]/.test(line) && !/^\s*[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      throw new InputError(`${file}: "${line.trim().slice(0, 60)}" is not a VARIABLE=value line: is this etcd's environment file?`);
  }
  const flags = new Map([...vars].map(([k, v]) => [k.slice('ETCD_'.length).toLowerCase().replace(/_/g, '-'), v]));
  const list = (k: string, dflt: string) => (flags.get(k) ?? dflt).split(',').filter(Boolean);
  return {
    file,
    text,
    unit: `${path.basename(file)}.service`,
    flags,
    name: flags.get('name') ?? os.hostname(),
    hostDataDir: flags.get('data-dir')!,
    advertiseClientUrls: list('advertise-client-urls', 'http://localhost:2379'),
    initialAdvertisePeerUrls: list('initial-advertise-peer-urls', 'http://localhost:2380'),
    tls: tlsFilesOf(flags),
  };
}

export function readDebianEtcd(file: string): DebianEtcd {
  return parseDebianEtcd(file, readConfigFile(file, `give the env file of Debian's etcd.service (--etcd-env-file, default ${DEFAULT_ETCD_ENV_FILE})`));
}

export interface EnvChange {
  dataDir?: string;
  initialCluster?: string;
  initialClusterState?: 'new' | 'existing';
}

/**
 * The env file with `change` applied: each variable's (last) line replaced in
 * place, a missing one appended; ETCD_FORCE_NEW_CLUSTER lines removed; every
 * other byte as it was. Throws if the result does not read back as intended.
 */
export function rewriteDebianEtcd(d: DebianEtcd, change: EnvChange): string {
  const lines = d.text.split('\n');
  const appended: string[] = [];
  const set = (key: string, value: string | undefined) => {
    if (value === undefined) return;
    let at = -1;
    lines.forEach((l, i) => {
      if (LINE.exec(l)?.[1] === key) at = i;
    });
    if (at < 0) return void appended.push(envLine(key, value));
    // The line keeps its own quoting (and stays as it was when its value does).
    const old = LINE.exec(lines[at])![2];
    if (unquote(old) === value) return;
    lines[at] = old.trim().startsWith('"') ? `${key}="${value.replace(/(["\\$`])/g, '\\$1')}"` : envLine(key, value);
  };
  set('ETCD_DATA_DIR', change.dataDir);
  set('ETCD_INITIAL_CLUSTER', change.initialCluster);
  set('ETCD_INITIAL_CLUSTER_STATE', change.initialClusterState);
  let kept = lines.filter((l) => LINE.exec(l)?.[1] !== 'ETCD_FORCE_NEW_CLUSTER');
  if (appended.length > 0) {
    // After the last line, keeping the file's final newline.
    const ends = kept.at(-1) === '';
    kept = [...(ends ? kept.slice(0, -1) : kept), ...appended, ...(ends || kept.length === 0 ? [''] : [])];
  }
  const out = kept.join('\n');
  const back = parseDebianEtcd(d.file, out);
  const want = (what: string, got: string | undefined, expected: string | undefined) => {
    if (expected !== undefined && got !== expected)
      throw new Error(`${d.file}: rewriting ${what} gave ${String(got)}, not ${expected}; the file was left as it was`);
  };
  want('ETCD_DATA_DIR', back.hostDataDir, change.dataDir);
  want('ETCD_INITIAL_CLUSTER', back.flags.get('initial-cluster'), change.initialCluster);
  want('ETCD_INITIAL_CLUSTER_STATE', back.flags.get('initial-cluster-state'), change.initialClusterState);
  return out;
}

/** Runs `systemctl ACTION UNIT`; fails with systemctl's own words. */
export function systemctl(action: 'start' | 'stop', unit: string, timeoutMs = 90_000): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('systemctl', [action, unit], { timeout: timeoutMs }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const why = stderr.trim().split('\n')[0] || err.message.split('\n')[0];
      reject(new Error(`systemctl ${action} ${unit} failed: ${why}`));
    });
  });
}

/**
 * The connection for a recovery on this host: the operator's TLS flags when
 * given; else, for https, the member's CA (ETCD_TRUSTED_CA_FILE), refused in
 * one line naming the flags when etcd asks for a client certificate.
 */
export function withDebianEtcdTls<C extends { tls?: { caFile?: string; certFile?: string; keyFile?: string } }>(d: DebianEtcd, connection: C): C {
  if (connection.tls || !d.advertiseClientUrls.some((u) => u.startsWith('https://'))) return connection;
  if (d.flags.get('client-cert-auth') === 'true')
    throw new InputError(`${d.file}: etcd asks for a client certificate (ETCD_CLIENT_CERT_AUTH=true): give --cacert, --cert and --key`);
  return d.tls.trustedCaFile ? { ...connection, tls: { caFile: d.tls.trustedCaFile } } : connection;
}
