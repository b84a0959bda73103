// What every command that touches the audit log shares: the --audit-db flag and
// opening the log it names.
import { Flags } from '@oclif/core';
import { AuditLog } from './auditLog.js';
import { resolveAuditDbPath } from './location.js';

export const auditDbFlag = Flags.string({
  description:
    'the audit database (default: $LIFEBOAT_AUDIT_DB, else $XDG_STATE_HOME/lifeboat/audit.db, else ~/.local/state/lifeboat/audit.db)',
  helpValue: 'PATH',
});

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
