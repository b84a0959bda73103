// Steps that change a live cluster's membership, one member at a time:
// start-member, stop-member, wait-healthy, add-learner, wait-caught-up, promote,
// remove-member, update-peer-urls, check-cluster. Each checks first whether its
// work is already done, so a resumed run never adds a member twice.
import path from 'node:path';
import { clientFor } from '../../client/etcdClient.js';
import { parseMemberId } from '../../client/ids.js';
import { formatId as hex, resolveIdText } from '../../common/ids.js';
import type { Member, MemberListResult, ResponseHeader } from '../../client/types.js';
import { answers } from '../../recovery/fence.js';
import { checkCluster, memberList, promoteWhenReady, statusOf, LearnerStalledError, waitCaughtUp, waitHealthy, waitUntil } from '../../ops/memberOps.js';
import { clusterRuntime, etcdBinary, etcdVersionOf, memberPid, parseRuntimeChoice, resolveRuntime, runtimeOfDataDir } from '../../ops/runtime.js';
import { memberTlsFor, memberTlsProblem, missingTls, NAME_PLACEHOLDER } from '../../ops/memberTls.js';
import { logTail, memberSettings, spawnMember, startInstructions, type MemberTls, type StartedMember, type StartMemberOptions } from '../../ops/startMember.js';
import type { RuntimeName } from '../../common/memberCommand.js';
import { SafetyCheckError, type StepContext, type StepDefinition } from '../stepTypes.js';

const endpointsParam = { type: 'list' as const, required: true, description: 'client URLs of the cluster' };
const timeoutParam = (ms: number) => ({ type: 'duration' as const, default: ms, description: 'give up after this long' });

function findMember(members: Member[], ref: string): Member | undefined {
  const byName = members.find((m) => m.name === ref || m.peerURLs.includes(ref) || m.clientURLs.includes(ref));
  if (byName) return byName;
  // Hex or decimal (as etcdctl prints IDs in JSON): the reading that names a member wins.
  const id = resolveIdText(
    ref,
    members.map((m) => m.id),
  );
  return id === undefined ? undefined : members.find((m) => m.id === id);
}

function idsOf(l: MemberListResult): { clusterId: string; memberIds: string[] } {
  return { clusterId: l.header.clusterId.toString(16), memberIds: l.members.map((m) => m.id.toString(16)) };
}

/** Records the cluster and member IDs before and after a membership change (the run keeps the first before, the latest after). */
function recordIds(ctx: StepContext, what: string, before: MemberListResult, after: MemberListResult): void {
  const b = idsOf(before);
  const a = idsOf(after);
  ctx.event('ids', `${what}: members ${b.memberIds.join(',') || 'none'} -> ${a.memberIds.join(',') || 'none'} (cluster ${a.clusterId})`, {
    clusterIdBefore: b.clusterId,
    memberIdsBefore: b.memberIds,
    clusterIdAfter: a.clusterId,
    memberIdsAfter: a.memberIds,
  });
}

/** recordIds with the member list read after the change; the change is done, so a failed read is only reported. */
async function recordIdsAfter(ctx: StepContext, what: string, before: MemberListResult, endpoints: string[]): Promise<void> {
  try {
    recordIds(ctx, what, before, await listMembers(endpoints, ctx));
  } catch (e) {
    ctx.event('warning', `${what}: member IDs after the change not recorded: ${(e as Error).message}`);
  }
}

async function listMembers(endpoints: string[], ctx: StepContext): Promise<MemberListResult> {
  const c = clientFor(endpoints, ctx.connection);
  try {
    return await c.memberList();
  } finally {
    c.close();
  }
}

async function alreadyServing(clientUrl: string, ctx: StepContext): Promise<boolean> {
  return (await answeringMember(clientUrl, ctx)) !== undefined;
}

/** The member that answers Status at clientUrl (its response header: member and cluster ID), or undefined when nothing does. */
async function answeringMember(clientUrl: string, ctx: StepContext): Promise<ResponseHeader | undefined> {
  // A closed port fails at once here; a gRPC call would wait out its dial timeout.
  if (!(await answers(clientUrl, ctx.connection.dialTimeoutMs))) return undefined;
  try {
    return (await statusOf(clientUrl, { ...ctx.connection, dialTimeoutMs: 1000 })).header;
  } catch {
    return undefined;
  }
}

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
    'initial-cluster': { type: 'string', required: true, description: 'name=peerURL,... (for a joining member: as printed by add-learner)' },
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

export const waitHealthyStep: StepDefinition = {
  type: 'wait-healthy',
  description: 'Wait until the cluster has a leader and serves a linearizable read.',
  params: { endpoints: endpointsParam, timeout: timeoutParam(60_000) },
  describe: (p) => [`wait for a leader at ${(p.endpoints as string[]).join(', ')}`],
  async run(p, ctx) {
    const r = await waitHealthy(p.endpoints as string[], ctx.connection, Number(p.timeout), ctx.signal);
    ctx.progress(`leader ${r.leader}`);
    return r;
  },
};

export const addLearner: StepDefinition = {
  type: 'add-learner',
  description: 'Add a member as a learner (non-voting) — or find it already added — and give the settings it must start with.',
  params: {
    endpoints: endpointsParam,
    name: { type: 'string', required: true, description: 'the new member name' },
    'peer-url': { type: 'url', required: true, description: 'its peer URL' },
    runtime: { type: 'string', default: 'auto', description: "the new member's runtime (lifeboat, etcd); must be the cluster's (auto: the cluster's)" },
    'data-dir': { type: 'string', default: '', description: "the new member's data dir, if known: an existing one must be of the same runtime" },
    timeout: timeoutParam(60_000),
  },
  describe: (p) => [`add ${String(p.name)} (${String(p['peer-url'])}) as a learner`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const peerUrl = String(p['peer-url']);
    // A member of another runtime cannot join (a Lifeboat learner for an etcd cluster): refused before the add.
    const cluster = await clusterRuntime(endpoints, ctx.connection);
    const runtime = resolveRuntime(
      parseRuntimeChoice(typeof p.runtime === 'string' ? p.runtime : 'auto', 'runtime'),
      cluster.runtime,
      `the cluster at ${endpoints.join(',')} (version ${cluster.version})`,
    );
    const dir = typeof p['data-dir'] === 'string' ? p['data-dir'] : '';
    const layout = dir ? runtimeOfDataDir(dir) : undefined;
    if (layout && layout !== runtime)
      throw new SafetyCheckError(`data dir ${dir} belongs to a ${layout} member, but the cluster runs ${runtime}: give ${String(p.name)} an empty data dir`);
    const before = await listMembers(endpoints, ctx);
    let me = before.members.find((m) => m.peerURLs.includes(peerUrl));
    if (me) {
      ctx.progress(`${String(p.name)} is already a member (${me.id.toString(16)}); not adding it twice`);
    } else {
      // The strict check refuses until every voter has been connected for 5 s (after a
      // start or a promotion): asked again every 100 ms, a refusal costing one RPC.
      const added = await waitUntil(
        `${String(p.name)} to be added`,
        Number(p.timeout),
        async () => {
          const c = clientFor(endpoints, ctx.connection);
          try {
            return await c.memberAdd([peerUrl], { learner: true });
          } catch (e) {
            if (/unhealthy cluster|not enough started/.test((e as Error).message)) return undefined;
            throw e;
          } finally {
            c.close();
          }
        },
        100,
        ctx.signal,
      );
      me = added.member;
      ctx.progress(`added ${String(p.name)} as learner ${me.id.toString(16)}`);
    }
    const afterList = await listMembers(endpoints, ctx);
    recordIds(ctx, `add ${String(p.name)}`, before, afterList);
    const now = afterList.members;
    const initial = now
      .filter((m) => m.id === me.id || m.name !== '')
      .flatMap((m) => (m.id === me.id ? [`${String(p.name)}=${peerUrl}`] : m.peerURLs.map((u) => `${m.name}=${u}`)))
      .join(',');
    return { id: me.id.toString(16), 'initial-cluster': initial, runtime };
  },
};

export const waitCaughtUpStep: StepDefinition = {
  type: 'wait-caught-up',
  description:
    "Wait until a learner's applied index reaches the leader's raft index and stays there for the stabilization time; a learner that stops making progress is removed and reported.",
  params: {
    endpoints: endpointsParam,
    'learner-url': { type: 'url', required: true, description: "the learner's client URL" },
    'learner-id': { type: 'string', required: true, description: "the learner's member ID (hex)" },
    stabilization: { type: 'duration', default: 5000, description: 'how long it must stay caught up' },
    'stall-timeout': { type: 'duration', default: 30_000, description: 'remove it if it makes no progress for this long' },
    lag: { type: 'int', default: 2, description: 'entries it may be behind and still count as caught up' },
  },
  describe: (p) => [`wait until ${String(p['learner-url'])} has caught up and stayed so for ${Number(p.stabilization) / 1000}s`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const stabilization = Number(p.stabilization);
    try {
      const r = await waitCaughtUp(String(p['learner-url']), endpoints, ctx.connection, {
        lag: Number(p.lag),
        stabilizationMs: stabilization,
        stallMs: Number(p['stall-timeout']),
        onProgress: (t) => ctx.progress(t),
        // Recorded so the audit shows the stabilization gate: promotion comes at least this long after.
        onCaughtUp: (applied, leaderIndex) =>
          ctx.event(
            'caught-up',
            `learner ${String(p['learner-id'])} caught up (applied ${applied} of ${leaderIndex}); promoting once it stays so for ${stabilization / 1000}s`,
            { applied, leaderIndex, at: Date.now() },
          ),
        signal: ctx.signal,
      });
      return { ...r };
    } catch (e) {
      // Only a learner that itself stopped making progress is removed; no leader is the cluster's problem.
      if (ctx.signal.aborted || !(e instanceof LearnerStalledError)) throw e;
      const id = parseMemberId(String(p['learner-id']));
      const c = clientFor(endpoints, ctx.connection);
      try {
        const before = await c.memberList();
        await c.memberRemove(id);
        ctx.event('warning', `removed learner ${String(p['learner-id'])}: ${e.message}`);
        await recordIdsAfter(ctx, `remove stalled learner ${String(p['learner-id'])}`, before, endpoints);
      } finally {
        c.close();
      }
      throw new Error(`${e.message}; learner ${String(p['learner-id'])} was removed from the cluster`);
    }
  },
};

export const promote: StepDefinition = {
  type: 'promote',
  description: 'Promote a caught-up learner to a voter (retried while the leader says it is not yet in sync).',
  params: { endpoints: endpointsParam, member: { type: 'string', required: true, description: 'member ID (hex), name or URL' }, timeout: timeoutParam(60_000) },
  describe: (p) => [`promote ${String(p.member)} to a voter`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) throw new Error(`no member ${String(p.member)} in the cluster`);
    if (!m.isLearner) {
      ctx.progress(`${String(p.member)} is already a voter`);
      recordIds(ctx, `${String(p.member)} already a voter`, before, before);
      return { id: m.id.toString(16), promoted: false };
    }
    await promoteWhenReady(endpoints, m.id, ctx.connection, Number(p.timeout), ctx.signal);
    await recordIdsAfter(ctx, `promote ${m.id.toString(16)}`, before, endpoints);
    ctx.progress(`promoted ${m.id.toString(16)}`);
    return { id: m.id.toString(16), promoted: true };
  },
};

export const removeMember: StepDefinition = {
  type: 'remove-member',
  description: 'Remove a member from the cluster (nothing to do if it is already gone).',
  params: { endpoints: endpointsParam, member: { type: 'string', required: true, description: 'member ID (hex), name or URL' }, timeout: timeoutParam(30_000) },
  describe: (p) => [`remove ${String(p.member)} from the cluster`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) {
      ctx.progress(`${String(p.member)} is not a member; nothing to remove`);
      recordIds(ctx, `${String(p.member)} already gone`, before, before);
      return { removed: false };
    }
    // The member to remove may be the leader that just died: while the others
    // elect a new one, a removal fails (no leader, or the forward to the dead one).
    // Retried, bounded; an attempt whose answer was lost shows as the member gone.
    await waitUntil(
      `${m.id.toString(16)} to be removed`,
      Number(p.timeout),
      async () => {
        const c = clientFor(endpoints, ctx.connection);
        try {
          await c.memberRemove(m.id);
          return true;
        } catch (e) {
          if (!(await listMembers(endpoints, ctx)).members.some((x) => x.id === m.id)) return true;
          throw e;
        } finally {
          c.close();
        }
      },
      500,
      ctx.signal,
    );
    await recordIdsAfter(ctx, `remove ${m.id.toString(16)}`, before, endpoints);
    ctx.progress(`removed ${m.id.toString(16)}`);
    return { removed: true, id: m.id.toString(16) };
  },
};

export const updatePeerUrls: StepDefinition = {
  type: 'update-peer-urls',
  description: "Change a member's peer URLs (then restart it with them).",
  params: {
    endpoints: endpointsParam,
    member: { type: 'string', required: true, description: 'member ID (hex) or name' },
    'peer-urls': { type: 'list', required: true, description: 'the new peer URLs' },
  },
  describe: (p) => [`set ${String(p.member)}'s peer URLs to ${(p['peer-urls'] as string[]).join(',')}`],
  async run(p, ctx) {
    const endpoints = p.endpoints as string[];
    const urls = p['peer-urls'] as string[];
    const before = await listMembers(endpoints, ctx);
    const m = findMember(before.members, String(p.member));
    if (!m) throw new Error(`no member ${String(p.member)} in the cluster`);
    recordIds(ctx, `peer URLs of ${m.id.toString(16)}`, before, before);
    if ([...m.peerURLs].sort().join(',') === [...urls].sort().join(',')) return { id: m.id.toString(16), updated: false };
    const c = clientFor(endpoints, ctx.connection);
    try {
      await c.memberUpdate(m.id, urls);
    } finally {
      c.close();
    }
    return { id: m.id.toString(16), updated: true };
  },
};

export const checkClusterStep: StepDefinition = {
  type: 'check-cluster',
  description: 'Every member answers, exactly one leader, HashKV equal on all members at one revision.',
  params: {
    endpoints: endpointsParam,
    'expect-voters': { type: 'int', default: 0, description: 'fail unless there are this many voters (0: any)' },
    timeout: timeoutParam(30_000),
  },
  describe: (p) => [
    `check ${(p.endpoints as string[]).join(', ')}: one leader, equal HashKV${Number(p['expect-voters']) ? `, ${String(p['expect-voters'])} voters` : ''}`,
  ],
  async run(p, ctx) {
    const r = await checkCluster(p.endpoints as string[], ctx.connection, Number(p.timeout), ctx.signal);
    if (Number(p['expect-voters']) && r.voters !== Number(p['expect-voters'])) throw new Error(`${r.voters} voters, expected ${String(p['expect-voters'])}`);
    ctx.progress(`${r.voters} voters, ${r.learners} learners, leader ${r.leader}, HashKV equal at revision ${r.revision}`);
    const endpoints = p.endpoints as string[];
    await listMembers(endpoints, ctx).then(
      (now) => recordIds(ctx, 'checked', now, now),
      (e: Error) => ctx.event('warning', `member IDs not recorded: ${e.message}`),
    );
    return { ...r };
  },
};
