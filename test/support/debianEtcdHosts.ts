// Hosts of Debian's packaged etcd under a temporary root, for tests of
// `recover --debian-etcd`: each has ROOT/HOST/etc/default/etcd-HOST (the
// ETCD_* variables under the header Debian ships) and its data dir at
// ROOT/HOST/var/lib/etcd/default, run by Debian's etcd.service (its text as
// etcd-server installs it, EnvironmentFile pointed under the root) through the
// systemctl stand-in, which is first on the PATH given in `env`. Members speak
// mutual TLS with the test CA's certificates.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeCerts, type TestCerts } from './certs.js';
import { run, type RunResult } from './tools.js';

export interface DebianEtcdHost {
  name: string;
  envFile: string;
  unit: string;
  dataDir: string;
  clientUrl: string;
  peerUrl: string;
}

export interface DebianEtcdHosts {
  hosts: DebianEtcdHost[];
  certs: TestCerts;
  /** PATH with the systemctl stand-in first, and its state dir */
  env: NodeJS.ProcessEnv;
  /** SYSTEMCTL_STANDIN_DIR: units/, state/ (pids, logs), calls.log */
  systemdDir: string;
  systemctl(action: 'start' | 'stop', unit: string): Promise<RunResult>;
  /** Every `systemctl ACTION UNIT` the stand-in was asked for, in order. */
  calls(): string[];
  /** Stops every daemon the stand-in started. */
  stopAll(): Promise<void>;
}

/** /etc/default/etcd as etcd-server ships it: comments only. */
export const DEBIAN_DEFAULT_HEADER = `## etcd(1) daemon options
## See "/usr/share/doc/etcd-server/op-guide/configuration.md.gz"
## for available options.
##
## Use environment to override, for example: ETCD_NAME=default
`;

/** /lib/systemd/system/etcd.service as etcd-server 3.4.23 installs it, but for where it reads its env file. */
export function debianEtcdUnit(envDir: string): string {
  return `[Unit]
Description=etcd - highly-available key value store
Documentation=https://etcd.io/docs
Documentation=man:etcd
After=network.target
Wants=network-online.target

[Service]
Environment=DAEMON_ARGS=
Environment=ETCD_NAME=%H
Environment=ETCD_DATA_DIR=/var/lib/etcd/default
EnvironmentFile=-${envDir}/%p
Type=notify
User=etcd
PermissionsStartOnly=true
#ExecStart=/bin/sh -c "GOMAXPROCS=$(nproc) /usr/bin/etcd $DAEMON_ARGS"
ExecStart=/usr/bin/etcd $DAEMON_ARGS
Restart=on-abnormal
#RestartSec=10s
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
Alias=etcd2.service
`;
}

export async function makeDebianEtcdHosts(
  dir: string,
  count: number,
  portSeed: string,
  freePorts: (n: number, seed: string) => Promise<number[]>,
): Promise<DebianEtcdHosts> {
  mkdirSync(path.join(dir, 'certs'), { recursive: true });
  const certs = await makeCerts(path.join(dir, 'certs'));
  const ports = await freePorts(count * 2, portSeed);
  const systemdDir = path.join(dir, 'systemd');
  mkdirSync(path.join(systemdDir, 'units'), { recursive: true });
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const standIn = fileURLToPath(new URL('./systemctlStandIn.js', import.meta.url));
  writeFileSync(path.join(bin, 'systemctl'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(standIn)} "$@"\n`, { mode: 0o755 });
  const hosts = Array.from({ length: count }, (_, i): DebianEtcdHost => {
    const name = `etcd${i + 1}`;
    return {
      name,
      envFile: path.join(dir, name, 'etc/default', `etcd-${name}`),
      unit: `etcd-${name}.service`,
      dataDir: path.join(dir, name, 'var/lib/etcd/default'),
      clientUrl: `https://127.0.0.1:${ports[2 * i]}`,
      peerUrl: `https://127.0.0.1:${ports[2 * i + 1]}`,
    };
  });
  const cluster = hosts.map((h) => `${h.name}=${h.peerUrl}`).join(',');
  for (const h of hosts) {
    const envDir = path.dirname(h.envFile);
    mkdirSync(envDir, { recursive: true });
    mkdirSync(h.dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(
      h.envFile,
      `${DEBIAN_DEFAULT_HEADER}ETCD_NAME="${h.name}"
ETCD_DATA_DIR="${h.dataDir}"
ETCD_LISTEN_PEER_URLS="${h.peerUrl}"
ETCD_LISTEN_CLIENT_URLS="${h.clientUrl}"
ETCD_INITIAL_ADVERTISE_PEER_URLS="${h.peerUrl}"
ETCD_ADVERTISE_CLIENT_URLS="${h.clientUrl}"
ETCD_INITIAL_CLUSTER="${cluster}"
ETCD_INITIAL_CLUSTER_STATE="new"
ETCD_INITIAL_CLUSTER_TOKEN="debian-etcd-test"
# TLS: the test CA's certificates, clients and peers both authenticated.
ETCD_CERT_FILE="${certs.serverCert}"
ETCD_KEY_FILE="${certs.serverKey}"
ETCD_CLIENT_CERT_AUTH="true"
ETCD_TRUSTED_CA_FILE="${certs.ca}"
ETCD_PEER_CERT_FILE="${certs.serverCert}"
ETCD_PEER_KEY_FILE="${certs.serverKey}"
ETCD_PEER_CLIENT_CERT_AUTH="true"
ETCD_PEER_TRUSTED_CA_FILE="${certs.ca}"
#ETCD_SNAPSHOT_COUNT="100000"
`,
    );
    writeFileSync(path.join(systemdDir, 'units', h.unit), debianEtcdUnit(envDir));
  }
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, SYSTEMCTL_STANDIN_DIR: systemdDir };
  const systemctl = (action: 'start' | 'stop', unit: string) => run(path.join(bin, 'systemctl'), [action, unit], { env, timeoutMs: 30_000 });
  return {
    hosts,
    certs,
    env,
    systemdDir,
    systemctl,
    calls: () => {
      try {
        return readFileSync(path.join(systemdDir, 'calls.log'), 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
    stopAll: async () => {
      let units: string[] = [];
      try {
        units = readdirSync(path.join(systemdDir, 'state')).filter((f) => f.endsWith('.pid'));
      } catch {
        return;
      }
      for (const f of units) await systemctl('stop', `${f.slice(0, -'.pid'.length)}.service`);
    },
  };
}
