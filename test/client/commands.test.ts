// Every command is documented: a description and at least one example (so
// `--help` shows how to use it), and the client commands take the global flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Config } from '#oclif-core';
import { fileURLToPath } from 'node:url';
import { confirmDangerous } from '../../src/cli/confirm.js';
import { RefusedError } from '../../src/common/errors.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

const CLIENT_COMMANDS = [
  'member:list',
  'member:add',
  'member:remove',
  'member:update',
  'member:promote',
  'put',
  'get',
  'del',
  'endpoint:status',
  'endpoint:health',
  'endpoint:hashkv',
  'move-leader',
  'compaction',
  'defrag',
  'alarm:list',
  'alarm:disarm',
  'snapshot:save',
];

test('every everyday command has a description, examples and the global flags', async () => {
  const config = await Config.load(root);
  for (const id of CLIENT_COMMANDS) {
    const cmd = config.findCommand(id);
    assert.ok(cmd, `command ${id} exists`);
    assert.ok(cmd.description && cmd.description.length > 20, `${id} has a description`);
    assert.ok(Array.isArray(cmd.examples) && cmd.examples.length > 0, `${id} has examples`);
    for (const flag of ['endpoints', 'dial-timeout', 'command-timeout', 'write-out', 'cacert', 'cert', 'key', 'insecure-skip-tls-verify', 'debug']) {
      assert.ok(cmd.flags[flag], `${id} has --${flag}`);
    }
  }
  assert.ok(config.findCommand('member:remove')!.flags.yes, 'member remove has --yes');
});

test('a dangerous step without a terminal is refused, naming the flag; --yes or no danger lets it pass', async () => {
  const step = { action: 'remove member 1 (a)', reasons: ['it is the leader (x)'], yes: false };
  await assert.rejects(
    confirmDangerous(step, false),
    (e: Error) => e instanceof RefusedError && e.message === 'refusing to remove member 1 (a): it is the leader (x); re-run with --yes to confirm',
  );
  await confirmDangerous({ ...step, yes: true }, false);
  await confirmDangerous({ ...step, reasons: [] }, false);
});
