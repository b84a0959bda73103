// `lifeboat backup run` against a 3-member Lifeboat cluster: see agentScenario.ts.
import { test } from 'node:test';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { agentScenario } from './agentScenario.js';

test(
  'backup agent on a Lifeboat cluster: every revision once, through a member killed and an agent killed -9; a compaction past it is one exact gap',
  { timeout: 180_000 },
  async () => {
    const cluster = await LifeboatCluster.start('backupAgentLifeboat', 3);
    try {
      await agentScenario('backupAgentLifeboat', {
        endpoints: cluster.endpoints(),
        kill: async (endpoint) => {
          await cluster.kill(cluster.members.find((m) => m.client === endpoint)!);
        },
      });
    } finally {
      await cluster.stopAll();
    }
  },
);
