// Opening the audit log a command names (--audit-db, else its defaults): read-only
// for review, created with its directories for recording runs.
import { AuditLog } from './journal.js';
import { resolveAuditDbPath } from './location.js';

/**
 * The log named by --audit-db (or its defaults), opened read-only; a missing
 * file is an error, and so is a changed schema unless `checkSchema` is false.
 */
export function openAuditLogForReading(flag: string | undefined, opts: { checkSchema?: boolean } = {}): AuditLog {
  return AuditLog.open(resolveAuditDbPath(flag), { readonly: true, checkSchema: opts.checkSchema ?? true });
}

/** The log named by --audit-db (or its defaults), created with its directories if needed: for recording runs. */
export function openAuditLogForWriting(flag: string | undefined): AuditLog {
  return AuditLog.open(resolveAuditDbPath(flag));
}
