// The drill's result for node_exporter's textfile collector: a `.prom` file,
// written to FILE.tmp and renamed over FILE, so the collector never reads half of
// it. The last success's timestamp is carried over from the previous file when
// this drill failed, so an alert on its age fires after a run of failures.
import fs from 'node:fs';
import path from 'node:path';
import { InputError } from '../common/errors.js';
import type { DrillSummary } from '../audit/drillRuns.js';

const LAST_SUCCESS = 'lifeboat_drill_last_success_timestamp_seconds';

/** Refuses, before the drill starts, a file that could not be written (exit 2). */
export function checkPrometheusPath(file: string): void {
  const dir = path.dirname(path.resolve(file));
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
    throw new InputError(`--prometheus ${file}: directory ${dir} does not exist; give a file in the textfile collector's directory`);
  if (!file.endsWith('.prom')) throw new InputError(`--prometheus ${file}: the textfile collector reads only *.prom files; name it e.g. lifeboat_drill.prom`);
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) throw new InputError(`--prometheus ${file} is a directory; give a file name ending in .prom`);
}

/** The previous file's last-success timestamp, if it has one. */
export function previousLastSuccess(file: string): number | undefined {
  try {
    const m = new RegExp(`^${LAST_SUCCESS}(?:\\{[^}]*\\})?\\s+([0-9.eE+-]+)\\s*$`, 'm').exec(fs.readFileSync(file, 'utf8'));
    const v = m ? Number(m[1]) : NaN;
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function num(x: number): string {
  return String(Math.round(x * 1000) / 1000);
}

/** The metrics text for one drill that ended at `endedAt`. */
export function prometheusText(s: DrillSummary, endedAt: Date, lastSuccess: number | undefined): string {
  const now = endedAt.getTime() / 1000;
  const success = s.passed ? now : lastSuccess;
  const out: string[] = [];
  const metric = (name: string, help: string, lines: string[]) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...lines);
  metric('lifeboat_drill_success', '1 if the last recovery drill passed, else 0.', [`lifeboat_drill_success ${s.passed ? 1 : 0}`]);
  metric('lifeboat_drill_last_run_timestamp_seconds', 'When the last recovery drill ended (Unix time).', [
    `lifeboat_drill_last_run_timestamp_seconds ${num(now)}`,
  ]);
  if (success !== undefined) metric(LAST_SUCCESS, 'When a recovery drill last passed (Unix time).', [`${LAST_SUCCESS} ${num(success)}`]);
  const rto = [
    ...s.phases.map((p) => `lifeboat_drill_rto_seconds{phase="${label(p.phase)}"} ${num(p.seconds)}`),
    ...(s.writableSeconds !== null ? [`lifeboat_drill_rto_seconds{phase="writable"} ${num(s.writableSeconds)}`] : []),
    ...(s.totalSeconds !== null ? [`lifeboat_drill_rto_seconds{phase="total"} ${num(s.totalSeconds)}`] : []),
  ];
  if (rto.length > 0)
    metric(
      'lifeboat_drill_rto_seconds',
      'Recovery time the last drill demonstrated, per phase; writable: snapshot to the first write accepted; total: to every member caught up.',
      rto,
    );
  return `${out.join('\n')}\n`;
}

/**
 * Writes FILE.tmp, fsyncs it and renames it over FILE. No --force here, unlike the
 * other named outputs: a textfile collector's file is meant to be rewritten by
 * every run (node_exporter reads the latest), and it holds nothing the audit log
 * does not (the previous last-success time is carried over).
 */
export function writePrometheusFile(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'w', 0o644);
    try {
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new Error(`cannot write ${file}: ${(err as Error).message}`);
  }
}
