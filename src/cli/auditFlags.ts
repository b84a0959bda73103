// The --audit-db flag every command that touches the audit log shares; opening
// the log it names is src/audit/open.ts.
import { Flags } from '#oclif-core';

export const auditDbFlag = Flags.string({
  description: 'the audit database (default: $LIFEBOAT_AUDIT_DB, else $XDG_STATE_HOME/lifeboat/audit.db, else ~/.local/state/lifeboat/audit.db)',
  helpValue: 'PATH',
});
