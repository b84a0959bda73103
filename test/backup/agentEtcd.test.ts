// `lifeboat backup run` against a 3-member etcd cluster: see agentScenario.ts.
import { test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { agentScenario } from './agentScenario.js';

test(
  'backup agent on an etcd cluster: every revision once, through a member killed and an agent killed -9; a compaction past it is one exact gap',
  { timeout: 180_000 },
  async () => {
    const cluster = await EtcdCluster.start({ size: 3, portSeed: 'backupAgentEtcd' });
    try {
      await agentScenario('backupAgentEtcd', {
        endpoints: cluster.members.map((m) => cluster.endpointOf(m)),
        kill: async (endpoint) => {
          const m = cluster.members.find((x) => cluster.endpointOf(x) === endpoint)!;
          m.proc?.kill('SIGKILL');
          await cluster.stopMember(m);
        },
      });
    } finally {
      await cluster.stop();
    }
  },
);
