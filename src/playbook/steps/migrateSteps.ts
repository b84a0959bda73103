// The `migrate` step: `lifeboat migrate --once` inside a playbook. Run twice with
// the same parameters — before a cut-over and after the writers stopped — the
// second run goes on from the first one's progress, so the cut-over window is
// only the changes made in between.
import { clientFor } from '../../client/etcdClient.js';
import { authSummary, migrate, progressPath } from '../../migrate/migration.js';
import type { StepDefinition } from '../stepTypes.js';

export const migrateStep: StepDefinition = {
  type: 'migrate',
  description:
    "Copy the keys under a prefix from one etcd-API cluster to another, catch up to the source's current revision, and verify both sides equal there; resumes a migration with the same parameters.",
  params: {
    from: { type: 'list', required: true, description: 'client URLs of the source cluster' },
    to: { type: 'list', required: true, description: 'client URLs of the destination cluster' },
    prefix: { type: 'string', default: '', description: 'the keys to copy (empty: every key)' },
    'dest-prefix': { type: 'string', description: 'where they go (default: the same prefix)' },
    'copy-auth': { type: 'bool', default: true, description: "copy the source's roles and users (without passwords) before the keys" },
    'progress-file': { type: 'path', description: "where progress is recorded (default: lifeboat migrate's)" },
  },
  describe: (p) => [
    `copy ${JSON.stringify(p.prefix)} from ${(p.from as string[]).join(', ')} to ${JSON.stringify(p['dest-prefix'] ?? p.prefix)} at ${(p.to as string[]).join(', ')}, catch up, verify`,
  ],
  async run(p, ctx) {
    const from = p.from as string[];
    const to = p.to as string[];
    // string and path parameters arrive as strings (stepTypes.ts)
    const prefix = (p.prefix as string | undefined) ?? '';
    const destPrefix = p['dest-prefix'] === undefined ? prefix : (p['dest-prefix'] as string);
    const src = clientFor(from, { ...ctx.connection, commandTimeoutMs: Math.max(ctx.connection.commandTimeoutMs, 10_000) });
    const dst = clientFor(to, { ...ctx.connection, commandTimeoutMs: Math.max(ctx.connection.commandTimeoutMs, 10_000) });
    try {
      const r = await migrate({
        src,
        dst,
        sourcePrefix: Buffer.from(prefix),
        destPrefix: Buffer.from(destPrefix),
        once: true,
        progressFile: p['progress-file'] === undefined ? progressPath(from, to, prefix, destPrefix) : (p['progress-file'] as string),
        restart: false,
        copyAuth: p['copy-auth'] !== false,
        finish: new AbortController().signal,
        abort: ctx.signal,
        log: (line) => ctx.progress(line),
        onCopyProgress: (done, total) => ctx.progress(`copied ${done} of ${total} keys`),
      });
      for (const line of r.auth ? authSummary(r.auth) : []) ctx.progress(line);
      ctx.progress(`verified: ${r.verified.sourceKeys} keys equal at source revision ${r.verified.revision}`);
      return {
        revision: r.verified.revision,
        keys: r.verified.sourceKeys,
        sha256: r.verified.sourceSha256,
        copied: r.copy.keys,
        changes: r.applied.events,
        repaired: r.repaired,
        'progress-file': r.progressFile,
        ...(r.auth ? { 'roles-copied': r.auth.roles, 'users-copied': r.auth.users } : {}),
      };
    } finally {
      src.close();
      dst.close();
    }
  },
};
