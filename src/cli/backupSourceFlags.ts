// `recover` and `recover plan` with a backup point as a source: --from-backup
// STORE@POINT and what reaching the store takes (the S3 flags of the backup
// commands, age identity files; secrets only from files or the environment), the
// points resolved against their stores for the plan, and the same settings as
// the recovery playbook's variables.
import path from 'node:path';
import { Flags } from '#oclif-core';
import { describeBackupPoint, parseBackupSource, type BackupAccess } from '../backup/backupSource.js';
import { readIdentityFiles } from '../backup/identityFiles.js';
import { formatDuration, parseDuration } from '../common/durations.js';
import { InputError } from '../common/errors.js';
import type { BackupPoint } from '../recovery/plan.js';
import { STORE_FLAGS, tagStoreError } from './backupStoreFlags.js';

export const BACKUP_SOURCE_FLAGS = {
  'from-backup': Flags.string({
    description:
      'a backup point to recover from: file:///dir@POINT or s3://bucket/prefix@POINT (POINT: CLUSTERID:REV, REV, an RFC 3339 time, -15m or latest); repeatable',
    multiple: true,
    helpValue: 'STORE@POINT',
  }),
  'prefer-backup': Flags.boolean({
    description: 'recover from the backup point even when a survivor holds more (what that loses is in the plan)',
    default: false,
  }),
  's3-endpoint': STORE_FLAGS['s3-endpoint'],
  's3-region': STORE_FLAGS['s3-region'],
  's3-path-style': STORE_FLAGS['s3-path-style'],
  's3-ca-file': STORE_FLAGS['s3-ca-file'],
  's3-imds': STORE_FLAGS['s3-imds'],
  'identity-file': Flags.string({
    description: 'an age identity file for an encrypted store (AGE-SECRET-KEY-1… lines); repeatable; never printed',
    helpValue: 'FILE',
    multiple: true,
  }),
  'max-time-uncertainty': Flags.string({
    description: 'a backup point at a time: refuse a time inside a revision window wider than this (an agent outage)',
    default: '30s',
    helpValue: 'DURATION',
  }),
  'accept-uncertain-time': Flags.boolean({
    description: 'a backup point at a time: take the last revision seen before it even when a wider window makes it uncertain',
    default: false,
  }),
};

/** The flags' names, for the runbook line (they go to the playbook as --set). */
export const BACKUP_SOURCE_FLAG_NAMES = Object.keys(BACKUP_SOURCE_FLAGS);

export interface BackupSourceFlagValues {
  'from-backup'?: string[];
  'prefer-backup': boolean;
  's3-endpoint'?: string;
  's3-region'?: string;
  's3-path-style'?: boolean;
  's3-ca-file'?: string;
  's3-imds'?: boolean;
  'identity-file'?: string[];
  'max-time-uncertainty': string;
  'accept-uncertain-time': boolean;
}

/** The backup-source flags out of a command's flags. */
export function backupSourceFlagValues(f: BackupSourceFlagValues): BackupSourceFlagValues {
  const out: Record<string, unknown> = {};
  for (const name of BACKUP_SOURCE_FLAG_NAMES)
    if ((f as unknown as Record<string, unknown>)[name] !== undefined) out[name] = (f as unknown as Record<string, unknown>)[name];
  return out as unknown as BackupSourceFlagValues;
}

function accessOf(f: BackupSourceFlagValues): BackupAccess {
  return {
    s3: {
      ...(f['s3-endpoint'] ? { endpoint: f['s3-endpoint'] } : {}),
      ...(f['s3-region'] ? { region: f['s3-region'] } : {}),
      ...(f['s3-path-style'] ? { pathStyle: true } : {}),
      ...(f['s3-ca-file'] ? { caFile: f['s3-ca-file'] } : {}),
      ...(f['s3-imds'] ? { imds: true } : {}),
    },
    identities: readIdentityFiles(f['identity-file'] ?? []),
    maxTimeUncertaintyMs: parseDuration(f['max-time-uncertainty'], '--max-time-uncertainty'),
    acceptUncertainTime: f['accept-uncertain-time'],
  };
}

/** Each --from-backup checked (bad input: one line, before any store is reached) and resolved against its store's catalog. */
export async function resolveBackupPoints(f: BackupSourceFlagValues, clusterId?: string): Promise<BackupPoint[]> {
  const given = f['from-backup'] ?? [];
  if (given.length === 0) {
    if (f['prefer-backup']) throw new InputError('--prefer-backup goes with --from-backup STORE@POINT');
    return [];
  }
  const sources = given.map((text) => {
    const src = parseBackupSource(text);
    if (!src) throw new InputError(`--from-backup ${text}: not a store point; give file:///dir@POINT or s3://bucket/prefix@POINT`);
    return src;
  });
  const access = accessOf(f);
  const out: BackupPoint[] = [];
  for (const src of sources) {
    try {
      // The store names clusters by 16 hex digits; --cluster-id may drop the leading zeros.
      const id = clusterId && /^(0x)?[0-9a-fA-F]{1,16}$/.test(clusterId) ? clusterId.replace(/^0x/, '').toLowerCase().padStart(16, '0') : undefined;
      out.push(await describeBackupPoint(src, access, id));
    } catch (e) {
      tagStoreError(e);
      if (e instanceof Error) e.message = `--from-backup ${src.text}: ${e.message}`;
      throw e;
    }
  }
  return out;
}

/** The recovery playbook's variables for the flags given (the store's settings; identity files by path, never their keys). */
export function backupSourceSets(f: BackupSourceFlagValues): string[] {
  if ((f['from-backup'] ?? []).length === 0) return [];
  const sets: string[] = [];
  for (const name of ['s3-endpoint', 's3-region'] as const) if (f[name]) sets.push(`${name}=${f[name]}`);
  if (f['s3-ca-file']) sets.push(`s3-ca-file=${path.resolve(f['s3-ca-file'])}`);
  for (const name of ['s3-path-style', 's3-imds', 'accept-uncertain-time'] as const) if (f[name]) sets.push(`${name}=true`);
  if ((f['identity-file'] ?? []).length > 0) sets.push(`identity-file=${f['identity-file']!.map((x) => path.resolve(x)).join(',')}`);
  if (f['max-time-uncertainty'] !== '30s')
    sets.push(`max-time-uncertainty=${formatDuration(parseDuration(f['max-time-uncertainty'], '--max-time-uncertainty'))}`);
  return sets;
}
