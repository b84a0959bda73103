// Flags of `npm run bench -- cluster`. --quick picks small sizes and short runs
// for development; every size can still be set on its own.
import path from 'node:path';
import type { PerfLoad } from './checkPerf.js';
import type { SystemName } from './systems.js';
import { WARMUP_SECONDS } from './warmUp.js';

export interface ClusterOptions {
  quick: boolean;
  systems: SystemName[];
  seconds: number;
  /** 16-client puts on each system before its first measured load (bench/warmUp.ts) */
  warmupSeconds: number;
  workers: number;
  valueSize: number;
  putClients: number[];
  getClients: number[];
  keySpace: number;
  checkPerf: PerfLoad[];
  snapshotKeys: number[];
  learnerKeys: number;
  recoveryKeys: number;
  stabilizationSeconds: number;
  learnerTimeoutSeconds: number;
  /** from the cluster being up to the second idle RSS figure: V8's memory-reducing collection comes about 10 s in */
  idleSettleSeconds: number;
  outDir?: string;
  /** an older Lifeboat build (a worktree with its own dist/) benchmarked just before the current one, for before/after figures */
  before?: string;
  /** appended to the results' file names */
  tag?: string;
  /** clients and peers on https:// with certificate auth, on every system */
  tls: boolean;
}

export const USAGE = `usage: npm run bench -- cluster [--quick] [--systems etcd,lifeboat|none] [--seconds S] [--warmup S] [--workers N]
    [--put-clients 1,16,100] [--get-clients 1,100] [--check-perf s,m,l|none]
    [--snapshot-keys 100000,1000000] [--learner-keys 1000000] [--recovery-keys 100000|0]
    [--stabilization S] [--learner-timeout S] [--idle-settle S] [--out DIR] [--tag NAME] [--before DIR] [--tls]
  --systems none runs only the generator ceiling and the recovery figure
  --tls serves clients and peers of every system over TLS with certificate auth (not the recovery figure)
  --before DIR also runs the Lifeboat build in DIR (a worktree of an older commit, built), just before this one`;

const list = (s: string): number[] => s.split(',').filter(Boolean).map(Number);

export function parseClusterOptions(args: string[]): ClusterOptions {
  const quick = args.includes('--quick');
  const o: ClusterOptions = {
    quick,
    systems: ['etcd', 'lifeboat'],
    seconds: quick ? 2 : 10,
    warmupSeconds: quick ? 1 : WARMUP_SECONDS,
    workers: 4,
    valueSize: 256,
    putClients: [1, 16, 100],
    getClients: [1, 100],
    keySpace: 10_000,
    checkPerf: quick ? [] : ['s', 'm', 'l'],
    snapshotKeys: quick ? [2_000, 20_000] : [100_000, 1_000_000],
    learnerKeys: quick ? 20_000 : 1_000_000,
    recoveryKeys: quick ? 5_000 : 100_000,
    stabilizationSeconds: quick ? 1 : 5,
    learnerTimeoutSeconds: quick ? 60 : 180,
    idleSettleSeconds: 30,
    tls: args.includes('--tls'),
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = () => {
      const x = args[++i];
      if (x === undefined) throw new Error(`${a} needs a value\n${USAGE}`);
      return x;
    };
    switch (a) {
      case '--quick':
      case '--tls':
        break;
      case '--systems': {
        const x = v();
        o.systems = x === 'none' ? [] : (x.split(',') as SystemName[]);
        break;
      }
      case '--seconds':
        o.seconds = Number(v());
        break;
      case '--warmup':
        o.warmupSeconds = Number(v());
        break;
      case '--workers':
        o.workers = Number(v());
        break;
      case '--put-clients':
        o.putClients = list(v());
        break;
      case '--get-clients':
        o.getClients = list(v());
        break;
      case '--check-perf': {
        const x = v();
        o.checkPerf = x === 'none' ? [] : (x.split(',') as PerfLoad[]);
        break;
      }
      case '--snapshot-keys':
        o.snapshotKeys = list(v()).sort((p, q) => p - q);
        break;
      case '--learner-keys':
        o.learnerKeys = Number(v());
        break;
      case '--recovery-keys':
        o.recoveryKeys = Number(v());
        break;
      case '--stabilization':
        o.stabilizationSeconds = Number(v());
        break;
      case '--out':
        o.outDir = v();
        break;
      case '--tag':
        o.tag = v();
        break;
      case '--before':
        o.before = path.resolve(v());
        break;
      case '--learner-timeout':
        o.learnerTimeoutSeconds = Number(v());
        break;
      case '--idle-settle':
        o.idleSettleSeconds = Number(v());
        break;
      default:
        throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  const counts = [...o.putClients, ...o.getClients, ...o.snapshotKeys];
  if (
    !(o.seconds > 0) ||
    !(o.warmupSeconds >= 0) ||
    !(o.workers >= 1) ||
    counts.some((n) => !Number.isInteger(n) || n < 1) ||
    !(o.learnerKeys >= 0) ||
    !(o.recoveryKeys >= 0) ||
    !(o.stabilizationSeconds > 0) ||
    !(o.learnerTimeoutSeconds > 0) ||
    !(o.idleSettleSeconds >= 2)
  ) {
    throw new Error(`sizes, clients, --seconds and --workers must be positive numbers, --idle-settle at least 2\n${USAGE}`);
  }
  if (o.systems.some((s) => s !== 'etcd' && s !== 'lifeboat')) throw new Error(`--systems takes etcd and/or lifeboat\n${USAGE}`);
  if (o.checkPerf.some((l) => !['s', 'm', 'l'].includes(l))) throw new Error(`--check-perf takes s, m, l or none\n${USAGE}`);
  return o;
}
