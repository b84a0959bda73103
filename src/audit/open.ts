// Opening the audit log a command names (--audit-db, else its defaults): read-only
// for review, created with its directories for recording runs.
import { InputError } from '../common/errors.js';
import { AuditLog } from './journal.js';
import { resolveAuditDbPath } from './location.js';
import { AuditDbMissingError } from './schema.js';

/**
 * The log named by --audit-db (or its defaults), opened read-only; a missing
 * file is an error, and so is a changed schema unless `checkSchema` is false.
 */
export function openAuditLogForReading(flag: string | undefined, opts: { checkSchema?: boolean } = {}): AuditLog {
  return AuditLog.open(resolveAuditDbPath(flag), { readonly: true, checkSchema: opts.checkSchema ?? true });
}

/**
 * openAuditLogForReading for a report: a missing file and a file that is not an
 * audit log are the caller's input errors (InputError: exit 2), each one line.
 */
export function openAuditLogForReport(flag: string | undefined): AuditLog {
  try {
    return openAuditLogForReading(flag);
  } catch (err) {
    // schema.ts says "… is not a Lifeboat audit log (…)" for any other file, SQLite or not.
    if (err instanceof AuditDbMissingError || / is not a Lifeboat audit log /.test((err as Error).message)) throw new InputError((err as Error).message);
    throw err;
  }
}

/** The log named by --audit-db (or its defaults), created with its directories if needed: for recording runs. */
export function openAuditLogForWriting(flag: string | undefined): AuditLog {
  return AuditLog.open(resolveAuditDbPath(flag));
}
