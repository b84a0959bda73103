// `lifeboat backup run` against a 3-member Lifeboat cluster and an S3 store
// (s3rver on 127.0.0.1, stopped for 20 s in the middle): see agentScenario.ts.
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../src/backup/openStore.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { startS3Server } from '../support/s3Server.js';
import { agentScenario } from './agentScenario.js';

test(
  'backup agent on a Lifeboat cluster to S3: every revision once, through a member killed, the agent killed -9 and the store down for 20 s; a compaction past it is one exact gap',
  { timeout: 180_000 },
  async () => {
    const cluster = await LifeboatCluster.start('backupAgentLifeboat', 3);
    let s3: Awaited<ReturnType<typeof startS3Server>> | undefined;
    try {
      await agentScenario(
        'backupAgentLifeboat',
        {
          endpoints: cluster.endpoints(),
          kill: async (endpoint) => {
            await cluster.kill(cluster.members.find((m) => m.client === endpoint)!);
          },
        },
        async (dir) => {
          const server = await startS3Server(path.join(dir, 's3'), 'backupAgentLifeboat');
          s3 = server;
          // The test reads the store with the same credentials as the agent.
          Object.assign(process.env, server.env);
          const url = server.url('cluster-a');
          return {
            url,
            args: ['--s3-endpoint', server.endpoint],
            env: server.env,
            store: await openStore(url, { endpoint: server.endpoint }),
            outage: { stop: () => server.stop(), start: () => server.start() },
          };
        },
      );
    } finally {
      await s3?.stop();
      await cluster.stopAll();
    }
  },
);
