// The machine a run happened on, recorded with its figures.
import { execFileSync } from 'node:child_process';
import os from 'node:os';

const sh = (cmd: string, args: string[]): string => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } }).trim();
  } catch {
    return 'unknown';
  }
};

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  disk: string;
  node: string;
  etcd: string;
  etcdctl: string;
  loadAverageAtStart: number[];
}

export function describeMachine(dataDirParent: string): Machine {
  const df = sh('df', ['-h', '--output=source,fstype,size', dataDirParent]).split('\n').pop() ?? 'unknown';
  const dev = df.split(/\s+/)[0] ?? '';
  const rota = dev.startsWith('/dev/') ? sh('lsblk', ['-dno', 'ROTA', dev]) : '';
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    disk: `${df.replace(/\s+/g, ' ')}${rota === '0' ? ' (non-rotational)' : rota === '1' ? ' (rotational)' : ''}`,
    node: process.version,
    etcd: /etcd Version: (\S+)/.exec(sh('etcd', ['--version']))?.[1] ?? 'unknown',
    etcdctl: /etcdctl version: (\S+)/.exec(sh('etcdctl', ['version']))?.[1] ?? 'unknown',
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

export const describeMachineLine = (m: Machine) =>
  `${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, disk ${m.disk}, Node ${m.node}, etcd ${m.etcd} / etcdctl ${m.etcdctl}, load average at start ${m.loadAverageAtStart.join(' ')}`;
