// Reading a TLS file a flag names, with a one-line reason when it cannot be read.
import { readFileSync } from 'node:fs';

/** Reads `file` (named by `flag`); an unreadable file throws `fail("cannot read <flag> <file>: <why>")`. */
export function readPem(file: string, flag: string, fail: (message: string) => Error): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : String(code ?? err);
    throw fail(`cannot read ${flag} ${file}: ${why}`);
  }
}
