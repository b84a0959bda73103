// A question asked while a run's progress is drawn (listr2's default renderer, drawn
// as on a TTY) goes through the renderer: drawn under the running step, on screen
// before it is answered, never echoed. The only test in its file: stdout is taken
// for the terminal while it runs, and the test runner reports on stdout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';
import { password } from '@inquirer/prompts';
import { InteractiveRenderer } from '../../src/cli/output/interactiveRenderer.js';
import { askOnTerminal } from '../../src/cli/terminalPrompt.js';

test('a password asked mid-run is drawn under its step, on screen before it is answered, and the answer reaches the step', async () => {
  const input = new PassThrough();
  let got = '';
  let seenBeforeAnswer = '';
  const out = process.stdout;
  const wasTty = out.isTTY;
  const write = out.write.bind(out);
  let text = '';
  out.isTTY = true;
  out.write = (chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  };
  try {
    const renderer = new InteractiveRenderer(() => undefined);
    const answering = (async () => {
      // Bounded: 5 s for the prompt to be drawn.
      for (let i = 0; i < 100 && !stripVTControlCharacters(text).includes('Password of root:'); i++) await new Promise((r) => setTimeout(r, 50));
      seenBeforeAnswer = stripVTControlCharacters(text);
      input.write('s3cret\r');
    })();
    await renderer.run([
      {
        kind: 'step',
        id: 'start',
        title: 'start-member',
        run: async (ui) => {
          ui.progress('starting r1');
          got = await askOnTerminal((context) => password({ message: 'Password of root:' }, { ...context, input }));
        },
      },
    ]);
    await answering;
  } finally {
    out.write = write;
    out.isTTY = wasTty;
  }
  assert.match(seenBeforeAnswer, /start-member[\s\S]*\? Password of root:/, seenBeforeAnswer);
  assert.equal(got, 's3cret');
  assert.ok(!stripVTControlCharacters(text).includes('s3cret'), 'the password was echoed');
});
