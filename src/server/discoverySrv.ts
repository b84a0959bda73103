// --discovery-srv: the initial cluster from DNS SRV records, by etcd 3.4's rules
// (pkg/srv GetCluster): _etcd-server-ssl._tcp.<domain> gives https:// peers,
// _etcd-server._tcp.<domain> http:// ones (with --discovery-srv-name N:
// _etcd-server-ssl-N / _etcd-server-N). A record whose target and port resolve
// to the same address as one of this member's advertised peer URLs is this
// member (its name); the others are named 0, 1, ... as etcd names them.
import dns from 'node:dns/promises';
import { MemberExit } from './member.js';

async function resolveHostPort(host: string, port: string): Promise<string | undefined> {
  try {
    const { address } = await dns.lookup(host.replace(/^\[|\]$/g, ''));
    return `${address}:${port}`;
  } catch {
    return undefined;
  }
}

/** name → peer URLs from the SRV records of `domain`; throws (exit 1) when there are none or this member is not among them. */
export async function srvInitialCluster(
  domain: string,
  serviceName: string | undefined,
  self: { name: string; peerUrls: string[] },
): Promise<Map<string, string[]>> {
  const own = new Map<string, URL>();
  for (const u of self.peerUrls) {
    const url = new URL(u);
    const at = await resolveHostPort(url.hostname, url.port);
    if (at) own.set(at, url);
  }
  const suffix = serviceName ? `-${serviceName}` : '';
  const out = new Map<string, string[]>();
  const problems: string[] = [];
  let temp = 0;
  for (const [service, scheme] of [
    [`etcd-server-ssl${suffix}`, 'https'],
    [`etcd-server${suffix}`, 'http'],
  ] as const) {
    let records: Awaited<ReturnType<typeof dns.resolveSrv>>;
    try {
      records = await dns.resolveSrv(`_${service}._tcp.${domain}`);
    } catch (e) {
      problems.push(`_${service}._tcp.${domain}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      continue;
    }
    for (const r of records) {
      const host = r.name.replace(/\.$/, '');
      const port = String(r.port);
      const at = await resolveHostPort(host, port);
      if (!at) {
        problems.push(`${host} does not resolve`);
        continue;
      }
      const mine = own.get(at);
      if (mine && mine.protocol !== `${scheme}:`) {
        problems.push(`bootstrap at ${scheme}://${host}:${port} from DNS for ${service} has scheme mismatch with expected peer ${mine.href}`);
        continue;
      }
      const name = mine ? self.name : String(temp++);
      out.set(name, [...(out.get(name) ?? []), `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`]);
    }
  }
  if (out.size === 0)
    throw new MemberExit(1, `error querying DNS SRV records for ${domain} (${problems.join('; ')}); add _etcd-server-ssl._tcp or _etcd-server._tcp records`);
  if (!out.has(self.name)) {
    throw new MemberExit(
      1,
      `couldn't find local name "${self.name}" in the initial cluster configuration from DNS SRV records for ${domain}: no record resolves to --initial-advertise-peer-urls ${self.peerUrls.join(',')}`,
    );
  }
  return out;
}
