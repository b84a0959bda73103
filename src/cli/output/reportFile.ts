// Writing a report to a file: FILE.tmp, flushed, then renamed over FILE, so a
// reader never sees half a page and a failed write leaves no FILE.tmp behind.
import fs from 'node:fs';
import { writeFileDurably } from '../../storage/atomicFile.js';
import { NodeFileSystem } from '../../storage/fileSystem.js';
import { TEMP_SUFFIX } from '../../storage/layout.js';

export function writeReportFile(file: string, text: string): void {
  try {
    writeFileDurably(new NodeFileSystem(), file, Buffer.from(text));
  } catch (err) {
    fs.rmSync(`${file}${TEMP_SUFFIX}`, { force: true });
    throw new Error(`cannot write the report to ${file}: ${(err as Error).message}`);
  }
}
