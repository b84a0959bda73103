// Writing a report to a file: FILE.tmp, flushed, then renamed over FILE, so a
// reader never sees half a page and a failed write leaves no FILE.tmp behind.
import fs from 'node:fs';

export function writeReportFile(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'w');
    try {
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new Error(`cannot write the report to ${file}: ${(err as Error).message}`);
  }
}
