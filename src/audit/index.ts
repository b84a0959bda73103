// The audit log: what the playbook engine, `recover` and `lifeboat audit …` import.
export { AuditLog, newRunId, isRunId } from './journal.js';
export { AuditReader, UnknownRunError } from './queries.js';
export type { AuditExport } from './queries.js';
export { verifyChain } from './verify.js';
export type { AuditLogOptions, EventInput, FinishRunInput, FinishStepInput, HexId, RunIdsPatch, StartRunInput, StartStepInput } from './journal.js';
export { openAuditLogForReading, openAuditLogForWriting } from './open.js';
export { canonicalJson, GENESIS_HASH, linkHash, sha256Hex } from './hashChain.js';
export { AUDIT_DB_ENV, resolveAuditDbPath } from './location.js';
export { AuditDbMissingError } from './schema.js';
export * from './types.js';
export { DRILL_PLAYBOOK, DRILL_RESULT_EVENT, drillHistory, drillSummaryOf, readDrillHistory, runKind } from './drillRuns.js';
export type { DrillCheck, DrillHistory, DrillHistoryEntry, DrillPhase, DrillSummary, RunKind } from './drillRuns.js';
export { operatorWaits, ownTime } from './operatorWait.js';
