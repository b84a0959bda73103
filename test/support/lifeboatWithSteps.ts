// `lifeboat` with the playbook tests' fake step types (test/playbook/fakeSteps.ts):
// a test-only entry point for tests that need them in a CLI process of its own
// (a spawned or tmux-run `playbook run`). It adds them through the API, then runs
// the command as lifeboatWithFaults.ts does (bin/run.js, which reads its arguments
// from process.argv as it always does, with the failpoints a test may set).
import { addStepTypes } from '../../src/playbook/library.js';
import { TEST_STEPS } from '../playbook/fakeSteps.js';

addStepTypes(TEST_STEPS);
await import('./lifeboatWithFaults.js');
