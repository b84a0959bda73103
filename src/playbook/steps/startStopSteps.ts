// Starting and stopping a member: start-member (on this host, or printed for
// another host and waited for) and stop-member. A start checks first whether the
// member already answers (a resumed run), and that what answers is this member.
import path from 'node:path';
import { clientFor } from '../../client/etcdClient.js';
import { parseMemberId } from '../../client/ids.js';
import { formatId as hex } from '../../common/ids.js';
import type { Member, ResponseHeader } from '../../client/types.js';
import { memberList, waitUntil } from '../../ops/memberOps.js';
import { clusterRuntime, etcdBinary, etcdVersionOf, memberPid, parseRuntimeChoice, resolveRuntime, runtimeOfDataDir } from '../../ops/runtime.js';
import { memberTlsFor, memberTlsProblem, missingTls, NAME_PLACEHOLDER } from '../../ops/memberTls.js';
import {
  lifeboatOnToken,
  logTail,
  memberSettings,
  spawnMember,
  startInstructions,
  type MemberTls,
  type StartedMember,
  type StartMemberOptions,
} from '../../ops/startMember.js';
import type { RuntimeName } from '../../common/memberCommand.js';
import { SafetyCheckError, type StepContext, type StepDefinition } from '../stepTypes.js';
import { alreadyServing, answeringMember, recordIdsAfter, timeoutParam } from './memberCommon.js';

const sameUrl = (a: string, b: string): boolean => {
  try {
    const [x, y] = [new URL(a), new URL(b)];
    return x.protocol === y.protocol && x.host === y.host;
  } catch {
    return a === b;
  }
};

/**
 * Why the member answering at the client URL is not the one this step starts, or
 * undefined when it is. Any etcd port answers Status (a peer port too), so an
 * answer alone proves nothing: the member ID must be the learner's this run added;
 * without one, the answering member (or the cluster at endpoints) must list that ID
 * with this member's peer URL; a learner, which refuses MemberList, given neither,
 * passes only while a process on this host holds its data dir.
 */
async function notThisMember(there: ResponseHeader, p: Record<string, unknown>, ctx: StepContext): Promise<string | undefined> {
  const clientUrl = String(p['client-url']);
  const who = `member ${hex(there.memberId)} of cluster ${hex(there.clusterId)}`;
  const advice = 'another process listens there; stop it or choose another client URL';
  if (typeof p['member-id'] === 'string' && p['member-id']) {
    const want = parseMemberId(p['member-id']);
    return there.memberId === want ? undefined : `${who} answers at ${clientUrl}, not ${String(p.name)} (member ${hex(want)}): ${advice}`;
  }
  const peerUrl = String(p['peer-url']);
  const endpoints = (p.endpoints as string[] | undefined) ?? [];
  let why = '';
  for (const from of [[clientUrl], ...(endpoints.length > 0 ? [endpoints] : [])]) {
    let members: Member[];
    try {
      members = await memberList(from, { ...ctx.connection, dialTimeoutMs: 1000 });
    } catch (e) {
      why = (e as Error).message;
      continue;
    }
    const self = members.find((m) => m.id === there.memberId);
    if (self?.peerURLs.some((u) => sameUrl(u, peerUrl))) return undefined;
    const as = self ? ` (${self.name || 'unnamed'}, peer URL ${self.peerURLs.join(',')})` : '';
    return `${who}${as} answers at ${clientUrl}, not ${String(p.name)} (peer URL ${peerUrl}): ${advice}`;
  }
  if (!p.remote && memberPid(String(p['data-dir'])) !== undefined) return undefined;
  return `${who} answers at ${clientUrl}, no member list names it (${why}) and nothing runs on ${String(p['data-dir'])}, so it cannot be ${String(p.name)} (peer URL ${peerUrl}): ${advice}`;
}

/** The runtime for a member about to start: forced, else its data dir's layout, else the cluster's, else Lifeboat. */
async function runtimeForStart(p: Record<string, unknown>, ctx: StepContext): Promise<RuntimeName> {
  const choice = parseRuntimeChoice(typeof p.runtime === 'string' ? p.runtime : 'auto', 'runtime');
  const dataDir = String(p['data-dir']);
  const layout = runtimeOfDataDir(dataDir);
  if (layout) return resolveRuntime(choice, layout, `data dir ${dataDir}`);
  const endpoints = (p.endpoints as string[] | undefined) ?? [];
  if (choice === 'auto' && endpoints.length > 0) return (await clusterRuntime(endpoints, ctx.connection)).runtime;
  return resolveRuntime(choice, undefined, '');
}

/**
 * A learner this run added and that never started is removed again, so the next
 * add is not refused (too many learners); if that fails, the error says how.
 */
async function removeUnstartedLearner(p: Record<string, unknown>, ctx: StepContext): Promise<string> {
  const endpoints = (p.endpoints as string[] | undefined) ?? [];
  const idText = typeof p['member-id'] === 'string' ? p['member-id'] : '';
  if (!idText || endpoints.length === 0) return '';
  const id = parseMemberId(idText);
  try {
    const c = clientFor(endpoints, ctx.connection);
    try {
      const before = await c.memberList();
      const m = before.members.find((x) => x.id === id);
      if (!m || !m.isLearner || m.name !== '') return '';
      await c.memberRemove(id);
      ctx.event('warning', `removed learner ${idText} (${String(p.name)}): it was added by this run and never started`, { member: idText });
      await recordIdsAfter(ctx, `remove unstarted learner ${idText}`, before, endpoints);
      return `; learner ${idText}, which never started, was removed from the cluster`;
    } finally {
      c.close();
    }
  } catch (e) {
    const how = `lifeboat member remove ${idText} --endpoints ${endpoints.join(',')}`;
    ctx.event('warning', `learner ${idText} never started and could not be removed: ${(e as Error).message}; remove it with: ${how}`, { member: idText });
    return `; learner ${idText} never started and could not be removed (${(e as Error).message}): remove it with ${how}`;
  }
}

/** The member's own TLS settings: `{name}` in a file setting is its name. */
function tlsOf(p: Record<string, unknown>): MemberTls | undefined {
  const file = (k: string) => {
    const v = p[k];
    return typeof v === 'string' ? v : undefined;
  };
  return memberTlsFor(
    {
      certFile: file('cert-file'),
      keyFile: file('key-file'),
      trustedCaFile: file('trusted-ca-file'),
      clientCertAuth: !!p['client-cert-auth'],
      peerCertFile: file('peer-cert-file'),
      peerKeyFile: file('peer-key-file'),
      peerTrustedCaFile: file('peer-trusted-ca-file'),
      peerClientCertAuth: !!p['peer-client-cert-auth'],
    },
    String(p.name),
  );
}

/** Before the run: an https:// URL without its certificate, or a member's files that cannot serve its URLs (ops/memberTls.ts). */
function startTlsProblem(p: Record<string, unknown>): string | undefined {
  const [name, peerUrl, clientUrl] = [p.name, p['peer-url'], p['client-url']];
  if (typeof name !== 'string' || typeof peerUrl !== 'string' || typeof clientUrl !== 'string') return undefined;
  const m = { name, peerUrl, clientUrl };
  const tls = tlsOf(p);
  const missing = missingTls(m, tls);
  if (missing) {
    const url = missing[0] === 'cert-file' ? clientUrl : peerUrl;
    return `member ${name}: ${url} is https:// but no certificate is given; set ${missing.join(', ')} (and trusted-ca-file, peer-trusted-ca-file for mutual TLS), each member's own: ${NAME_PLACEHOLDER} in a path is the member's name, e.g. --set ${missing[0]}=/etc/etcd/pki/${NAME_PLACEHOLDER}/${missing[0] === 'cert-file' ? 'server' : 'peer'}.crt`;
  }
  return p.remote ? undefined : memberTlsProblem(m, tls); // a remote member's files are on its own host
}

export const startMember: StepDefinition = {
  type: 'start-member',
  description:
    "Start a member of either runtime (lifeboat or etcd): on this host (its log in the run's directory; one that exits is noticed at once), or on another host by printing the exact command and environment and waiting until it answers. A learner this run added that never starts is removed again.",
  params: {
    name: { type: 'string', required: true, description: 'member name' },
    'data-dir': { type: 'path', required: true, description: 'its data dir', check: 'new-data-dir' },
    'peer-url': { type: 'url', required: true, description: 'its peer URL', check: 'listen-url' },
    'client-url': { type: 'url', required: true, description: 'its client URL', check: 'listen-url' },
    'initial-cluster': {
      type: 'string',
      required: true,
      description: 'name=peerURL,... (for a joining member: as printed by add-learner); ignored with discovery',
    },
    discovery: {
      type: 'string',
      default: '',
      description: 'a discovery URL to bootstrap a new cluster from (first start only; etcd members get --discovery-fallback exit)',
    },
    'discovery-proxy': { type: 'string', default: '', description: 'the HTTP proxy to reach the discovery service through' },
    state: { type: 'string', default: 'new', description: 'new (a restored member) or existing (joining)' },
    'initial-cluster-token': { type: 'string', default: '', description: 'the cluster token (etcd: the one the data dir was restored with)' },
    runtime: { type: 'string', default: 'auto', description: "lifeboat, etcd, or auto: the data dir's layout, else the cluster's (endpoints), else lifeboat" },
    'etcd-bin': { type: 'string', default: '', description: 'the etcd binary (default: etcd on PATH)' },
    endpoints: { type: 'list', default: [], description: 'the cluster it joins (to detect its runtime and to remove an unstarted learner)' },
    'member-id': { type: 'string', default: '', description: 'the learner this run added for it (removed again if it never starts)' },
    'cert-file': { type: 'string', default: '', description: "TLS: the certificate for its client URL (https://); {name} is the member's name" },
    'key-file': { type: 'string', default: '', description: "TLS: the client URL certificate's key ({name}: the member's name)" },
    'trusted-ca-file': { type: 'string', default: '', description: 'TLS: the CA its clients present certificates from' },
    'client-cert-auth': { type: 'bool', default: false, description: 'TLS: clients must present a certificate' },
    'peer-cert-file': { type: 'string', default: '', description: "TLS: the certificate for its peer URL (https://); {name} is the member's name" },
    'peer-key-file': { type: 'string', default: '', description: "TLS: the peer certificate's key ({name}: the member's name)" },
    'peer-trusted-ca-file': { type: 'string', default: '', description: 'TLS: the CA of its peers' },
    'peer-client-cert-auth': { type: 'bool', default: false, description: 'TLS: peers must present a certificate' },
    remote: { type: 'bool', default: false, description: 'another host starts it: print the command and wait' },
    timeout: timeoutParam(60_000),
  },
  preflight: startTlsProblem,
  describe: (p) => [
    p.remote
      ? `ask the operator to start ${String(p.name)} on its host and wait for ${String(p['client-url'])}`
      : `start ${String(p.name)} on this host (${String(p['data-dir'])}${typeof p.runtime === 'string' && p.runtime !== 'auto' ? `, ${p.runtime}` : ''}), serving ${String(p['client-url'])}`,
  ],
  async run(p, ctx) {
    const clientUrl = String(p['client-url']);
    // What the hand-off to a supervisor needs (src/playbook/handoff.ts), whether or not this attempt started it.
    const handoff = (runtime: RuntimeName, o: StartMemberOptions) => ({
      name: o.name,
      dataDir: o.dataDir,
      runtime,
      remote: !!p.remote,
      etcdBin: o.etcdBin ?? '',
      settings: memberSettings(o).map(([k, v]) => [k, v]),
    });
    const options = (runtime: RuntimeName): StartMemberOptions => ({
      runtime,
      name: String(p.name),
      dataDir: String(p['data-dir']),
      peerUrl: String(p['peer-url']),
      clientUrl,
      initialCluster: String(p['initial-cluster']),
      state: String(p.state) === 'existing' ? 'existing' : 'new',
      ...(p['initial-cluster-token'] ? { initialClusterToken: p['initial-cluster-token'] as string } : {}),
      ...(p.discovery ? { discovery: { url: p.discovery as string, ...(p['discovery-proxy'] ? { proxy: p['discovery-proxy'] as string } : {}) } } : {}),
      ...(p['etcd-bin'] ? { etcdBin: p['etcd-bin'] as string } : {}),
      tls: tlsOf(p),
      logFile: path.join(ctx.runDir, `${String(p.name)}.log`),
    });
    const there = await answeringMember(clientUrl, ctx);
    if (there) {
      // Started before (a resumed run) — or another process listens there, which must not pass for this member.
      const other = await notThisMember(there, p, ctx);
      if (other) throw new SafetyCheckError(other);
      ctx.progress(`${String(p.name)} already answers at ${clientUrl}`);
      const runtime = await runtimeForStart(p, ctx).catch(() => 'lifeboat' as const);
      return { started: false, clientUrl, pid: memberPid(String(p['data-dir'])) ?? 0, ...handoff(runtime, options(runtime)) };
    }
    const runtime = await runtimeForStart(p, ctx);
    if (runtime === 'etcd' && !p.remote) {
      // 3.5 and 3.6 are driven the same way, but only 3.4 is tested here: say so in the run's record.
      // A binary that cannot say its version is left to fail at start, where its output is shown.
      const v = (() => {
        try {
          return etcdVersionOf(etcdBinary(typeof p['etcd-bin'] === 'string' && p['etcd-bin'] ? p['etcd-bin'] : undefined));
        } catch {
          return undefined;
        }
      })();
      if (v?.warning) ctx.event('warning', v.warning, { etcdVersion: v.version });
    }
    const o = options(runtime);
    const mixed = await lifeboatOnToken(o);
    if (mixed) throw new SafetyCheckError(mixed);
    let started: StartedMember | undefined;
    if (p.remote) {
      const how = startInstructions(o);
      ctx.progress(`on ${String(p.name)}'s host, run: ${how.command}`);
      ctx.event('note', `start ${String(p.name)} (${runtime}) on its host with: ${how.command}`, { environment: Object.fromEntries(how.env) });
    } else {
      started = spawnMember(o);
      ctx.progress(`started ${String(p.name)} (${runtime}, pid ${started.pid}), log ${o.logFile}`);
    }
    try {
      const answering = waitUntil(
        `${String(p.name)} to answer at ${clientUrl}`,
        Number(p.timeout),
        async () => {
          const answering = await answeringMember(clientUrl, ctx);
          if (!answering) return undefined;
          const other = await notThisMember(answering, p, ctx);
          if (other) throw new Error(other); // kept as the last error; the member itself will fail to bind and exit
          return true;
        },
        50,
        ctx.signal,
      );
      if (started) {
        // A member that exits (bad flags, a port taken, a refused join) fails the step at once.
        const exited = started.exited.then((how) => {
          throw new Error(`${String(p.name)} (${runtime}) stopped at once (${how}); last lines of ${o.logFile}:\n${logTail(o.logFile)}`);
        });
        exited.catch(() => undefined); // an exit after it answered is not this step's failure
        await Promise.race([answering, exited]);
      } else await answering;
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      const removed = await removeUnstartedLearner(p, ctx);
      if (started) ctx.event('warning', `${String(p.name)} did not start: ${(e as Error).message.split('\n')[0]}`, { log: o.logFile });
      throw new Error(`${(e as Error).message}${removed}`);
    }
    return { started: true, pid: started?.pid ?? 0, clientUrl, log: p.remote ? '' : o.logFile, ...handoff(runtime, o) };
  },
};

export const stopMember: StepDefinition = {
  type: 'stop-member',
  description:
    "Stop a member running on this host (SIGTERM to the process holding its data dir: Lifeboat's lock, or etcd's WAL locks) and wait until it no longer answers.",
  params: {
    'data-dir': { type: 'path', required: true, description: 'its data dir (the lock names the running process)' },
    'client-url': { type: 'url', required: true, description: 'its client URL' },
    timeout: timeoutParam(30_000),
  },
  describe: (p) => [`stop the member running on ${String(p['data-dir'])} (${String(p['client-url'])})`],
  async run(p, ctx) {
    const pid = memberPid(String(p['data-dir'])) ?? 0;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    // Stopped means gone, not only silent: a member shutting down still holds its data dir (the next step may pack it).
    await waitUntil(
      `${String(p['client-url'])} to stop answering and ${String(p['data-dir'])} to be released`,
      Number(p.timeout),
      async () => ((await alreadyServing(String(p['client-url']), ctx)) || memberPid(String(p['data-dir'])) !== undefined ? undefined : true),
      250,
      ctx.signal,
    );
    return { stopped: pid > 0, pid };
  },
};
