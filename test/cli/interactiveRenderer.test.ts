// The live task list of a run on a terminal (listr2's default renderer, drawn as on
// a TTY): what each kind of step ends as.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stripVTControlCharacters } from 'node:util';
import { InteractiveRenderer } from '../../src/cli/output/interactiveRenderer.js';
import type { ExecNode } from '../../src/playbook/runView.js';

/** Runs `nodes` through the renderer with stdout taken for a terminal; returns what it drew. */
async function drawn(nodes: ExecNode[]): Promise<string> {
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
    await new InteractiveRenderer(() => undefined).run(nodes);
  } finally {
    out.write = write;
    out.isTTY = wasTty;
  }
  return stripVTControlCharacters(text);
}

test('a resumed run shows the steps done in an earlier attempt as done (✔), never as warnings (⚠)', async () => {
  const screen = await drawn([
    { kind: 'step', id: 'restore', title: 'restore', run: (ui) => Promise.resolve(ui.reuseRecorded('done in attempt 1')) },
    { kind: 'step', id: 'promote', title: 'promote m2', run: () => Promise.resolve() },
  ]);
  const last = (id: string) =>
    screen
      .split('\n')
      .filter((l) => l.includes(id))
      .at(-1) ?? '';
  assert.match(last('restore'), /✔ restore \(done in attempt 1: skipped, its recorded outputs reused\)/, screen);
  assert.match(last('promote'), /✔ promote: promote m2/, screen);
  assert.doesNotMatch(screen, /⚠/, screen);
});
