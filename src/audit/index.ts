// The audit log: what the playbook engine, `recover` and `lifeboat audit …` import.
export { AuditLog, UnknownRunError, newRunId, isRunId } from './auditLog.js';
export type {
  AuditExport,
  AuditLogOptions,
  EventInput,
  FinishRunInput,
  FinishStepInput,
  HexId,
  RunIdsPatch,
  StartRunInput,
  StartStepInput,
} from './auditLog.js';
export { auditDbFlag, openAuditLogForReading, openAuditLogForWriting } from './auditFlags.js';
export { canonicalJson, GENESIS_HASH, linkHash, sha256Hex } from './hashChain.js';
export { AUDIT_DB_ENV, resolveAuditDbPath } from './location.js';
export { AuditDbMissingError } from './schema.js';
export * from './types.js';
