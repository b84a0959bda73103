// `lifeboat` with the playbook tests' fake step types (test/playbook/fakeSteps.ts):
// a test-only entry point for tests that need them in a CLI process of its own
// (a spawned or tmux-run `playbook run`). It adds them through the API, then runs
// bin/run.js itself, which reads its arguments from process.argv as it always does.
import { createRequire } from 'node:module';
import { addStepTypes } from '../../src/playbook/library.js';
import { TEST_STEPS } from '../playbook/fakeSteps.js';

addStepTypes(TEST_STEPS);
// This file runs as dist/test/support/lifeboatWithSteps.js: bin/ is three levels up.
createRequire(import.meta.url)('../../../bin/run.js');
