// oclif's flags of the backup commands that make objects (`backup run`, `backup
// full`), built from the tables in backupAgentSpecs.ts (which says what they are).
import { oclifBoolean, oclifDuration, oclifInteger, oclifSize, oclifString, oclifStrings } from './oclifFlag.js';
import { AGENT_FLAG_SPECS as A, CODEC_FLAG_SPECS as C } from './backupAgentSpecs.js';

export { checkSchedule, codecOf, recipientsOf } from './backupAgentSpecs.js';

export const CODEC_FLAGS = {
  compression: oclifString('compression', C.compression),
  'encrypt-to': oclifStrings('encrypt-to', C['encrypt-to']),
  'recipients-file': oclifString('recipients-file', C['recipients-file']),
};

export const AGENT_FLAGS = {
  'spool-dir': oclifString('spool-dir', A['spool-dir']),
  ...CODEC_FLAGS,
  'full-schedule': oclifString('full-schedule', A['full-schedule']),
  'full-after-events': oclifInteger('full-after-events', A['full-after-events']),
  'full-after-bytes': oclifSize('full-after-bytes', A['full-after-bytes']),
  'delta-interval': oclifDuration('delta-interval', A['delta-interval']),
  'segment-size': oclifSize('segment-size', A['segment-size']),
  'hash-every': oclifInteger('hash-every', A['hash-every']),
  'spool-limit': oclifSize('spool-limit', A['spool-limit']),
  'listen-metrics': oclifString('listen-metrics', A['listen-metrics']),
  force: oclifBoolean('force', A.force),
  'print-unit': oclifBoolean('print-unit', A['print-unit']),
};
