// `etcdctl check perf --load=s|m|l`: etcd's own 60-second write test, run against
// either system. It needs the v3 API and writes (then deletes) keys under its prefix.
import type { TlsOptions } from '../src/client/tls.js';
import { run } from '../test/support/tools.js';
import { cliTlsArgs } from './systems.js';

/** where check perf writes; it deletes its keys when it ends normally */
export const CHECK_PERF_PREFIX = '/etcdctl-check-perf/';

export type PerfLoad = 's' | 'm' | 'l';

export interface CheckPerfResult {
  load: PerfLoad;
  pass: boolean;
  writesPerSecond: number;
  /** the FAIL lines, when it failed */
  failures: string[];
}

export async function checkPerf(endpoints: string[], load: PerfLoad, tls?: TlsOptions): Promise<CheckPerfResult> {
  const r = await run('etcdctl', ['--endpoints', endpoints.join(','), ...cliTlsArgs(tls), '--command-timeout=30s', 'check', 'perf', `--load=${load}`], {
    env: { ...process.env, ETCDCTL_API: '3' },
    timeoutMs: 180_000,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  const throughput = /Throughput (?:is|too low:) (\d+(?:\.\d+)?) writes\/s/.exec(out);
  const verdict = /^(PASS|FAIL)\s*$/m.exec(out);
  if (!throughput || !verdict)
    throw new Error(`etcdctl check perf --load=${load} gave no verdict (exit ${r.code}): ${out.trim().split('\n').slice(-3).join(' | ')}`);
  return {
    load,
    pass: verdict[1] === 'PASS',
    writesPerSecond: Number(throughput[1]),
    failures: out
      .split('\n')
      .filter((l) => l.startsWith('FAIL:'))
      .map((l) => l.trim()),
  };
}
