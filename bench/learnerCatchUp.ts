// Learner catch-up: with writes stopped, add a learner and start it; the clock
// runs until the learner has applied everything the leader had (Status'
// raftAppliedIndex), by whatever path each system takes (log or snapshot).
import { EtcdClient } from '../src/client/etcdClient.js';
import type { TlsOptions } from '../src/client/tls.js';
import { waitFor } from '../test/support/tools.js';
import { rssMiB } from './memberRss.js';
import type { BenchCluster } from './systems.js';

export interface CatchUpFigures {
  seconds: number;
  targetIndex: number;
  learnerRssMiB: number;
}

const status = async (endpoint: string, tls?: TlsOptions) => {
  const c = new EtcdClient({ endpoints: [endpoint], tls, dialTimeoutMs: 1000, commandTimeoutMs: 3000 });
  try {
    return await c.status();
  } finally {
    c.close();
  }
};

export async function measureCatchUp(sys: BenchCluster, leaderEndpoint: string, timeoutMs: number): Promise<CatchUpFigures> {
  const targetIndex = (await status(leaderEndpoint, sys.tls)).raftIndex;
  const t0 = performance.now();
  const learner = await sys.addLearner();
  await waitFor(
    `the ${sys.name} learner to apply index ${targetIndex}`,
    async () => (await status(learner.endpoint, sys.tls)).raftAppliedIndex >= targetIndex,
    {
      timeoutMs,
      intervalMs: 100,
    },
  );
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, targetIndex, learnerRssMiB: rssMiB(learner.pid) };
}
