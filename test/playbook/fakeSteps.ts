// Fake step types for the playbook tests: given to the engine API directly, and
// added to the CLI's library by test/support/lifeboatWithSteps.ts (addStepTypes).
import { appendFileSync, readFileSync } from 'node:fs';
import { SafetyCheckError, type StepDefinition } from '../../src/playbook/stepTypes.js';

/** Lines a `record` step wrote to `log`. */
export function recorded(log: string): string[] {
  try {
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  } catch {
    return [];
  }
}

const record: StepDefinition = {
  type: 'record',
  description: 'Appends its label to a log file (one line per call); returns the label and how many times it was recorded.',
  params: {
    log: { type: 'path', required: true, description: 'the log file' },
    label: { type: 'string', required: true, description: 'what to write' },
    sleep: { type: 'duration', description: 'wait this long first' },
  },
  describe: (p) => [`append "${String(p.label)}" to ${String(p.log)}`],
  async run(p, ctx) {
    if (p.sleep) await new Promise((r) => setTimeout(r, p.sleep as number));
    appendFileSync(p.log as string, `${String(p.label)}\n`);
    ctx.progress(`recorded ${String(p.label)}`);
    return { label: p.label, calls: recorded(p.log as string).filter((l) => l === p.label).length };
  },
};

const typed: StepDefinition = {
  type: 'typed',
  description: 'Takes one parameter of every type and returns them.',
  params: {
    url: { type: 'url', description: 'a URL' },
    count: { type: 'int', description: 'an int' },
    member: { type: 'member', description: 'a member' },
    names: { type: 'list', description: 'a list' },
    flag: { type: 'bool', description: 'a bool' },
    wait: { type: 'duration', description: 'a duration' },
    dir: { type: 'path', description: 'a path' },
    text: { type: 'string', description: 'text' },
    endpoints: { type: 'list', description: 'endpoints' },
  },
  describe: (p) => Object.entries(p).map(([k, v]) => `${k}=${JSON.stringify(v)}`),
  run(p) {
    return Promise.resolve({ ...p });
  },
};

const fail: StepDefinition = {
  type: 'fail',
  description: 'Always fails.',
  params: { message: { type: 'string', required: true, description: 'the error' } },
  describe: () => ['fail'],
  run(p) {
    return Promise.reject(new Error(String(p.message)));
  },
};

const unsafe: StepDefinition = {
  type: 'unsafe',
  description: 'Always fails its safety check.',
  params: { message: { type: 'string', required: true, description: 'the refusal' } },
  describe: () => ['refuse'],
  run(p) {
    return Promise.reject(new SafetyCheckError(String(p.message), 'assume-dead'));
  },
};

const ask: StepDefinition = {
  type: 'ask',
  description: 'Asks ctx.confirm and returns the answer (a no does not stop the run).',
  params: { question: { type: 'string', required: true, description: 'the question' } },
  describe: (p) => [`ask ${String(p.question)}`],
  async run(p, ctx) {
    return { answer: await ctx.confirm(String(p.question)) };
  },
};

const ids: StepDefinition = {
  type: 'ids',
  description: 'Reports cluster and member IDs through an event.',
  params: {},
  describe: () => ['report IDs'],
  run(_p, ctx) {
    ctx.event('cluster-ids', 'old cluster 8e9e05c52164694d, new cluster 2f0a', {
      clusterIdBefore: '8e9e05c52164694d',
      clusterIdAfter: '2f0a',
      memberIdsAfter: ['a1', 'b2'],
    });
    return Promise.resolve({});
  },
};

export const TEST_STEPS: Record<string, StepDefinition> = { record, typed, fail, unsafe, ask, ids };
