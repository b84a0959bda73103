// Everything a benchmark starts registers how to stop it here, so a normal end,
// an error and Ctrl-C all stop every process and remove every temp dir.
type Stop = () => Promise<void> | void;

const stops = new Map<number, Stop>();
let nextId = 0;
let installed = false;

/** Register a stop function; returns a function that unregisters it once it has run. */
export function onCleanup(stop: Stop): () => void {
  installSignalHandlers();
  const id = nextId++;
  stops.set(id, stop);
  return () => void stops.delete(id);
}

/** Run every registered stop, newest first; errors are reported, not thrown. */
export async function cleanupAll(): Promise<void> {
  const pending = [...stops.entries()].reverse();
  stops.clear();
  for (const [, stop] of pending) {
    try {
      await stop();
    } catch (e) {
      console.error(`cleanup: ${(e as Error).message}`);
    }
  }
}

function installSignalHandlers(): void {
  if (installed) return;
  installed = true;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: stopping every process this benchmark started...`);
      // A second signal while cleaning up kills us outright.
      process.once(sig, () => process.exit(130));
      void cleanupAll().finally(() => process.exit(130));
    });
  }
}
