// --discovery-srv for the toolkit: client endpoints from DNS SRV records, as
// etcdctl 3.4 finds them (_etcd-client-ssl._tcp.<domain> gives https://,
// _etcd-client._tcp.<domain> http://; --discovery-srv-name N adds "-N").
import dns from 'node:dns/promises';
import { InputError } from '../common/errors.js';

/** "https://host:port,http://host:port" from the SRV records of `domain`. */
export async function srvEndpoints(domain: string, serviceName?: string): Promise<string> {
  const suffix = serviceName ? `-${serviceName}` : '';
  const out: string[] = [];
  const problems: string[] = [];
  for (const [service, scheme] of [
    [`etcd-client-ssl${suffix}`, 'https'],
    [`etcd-client${suffix}`, 'http'],
  ] as const) {
    try {
      for (const r of await dns.resolveSrv(`_${service}._tcp.${domain}`)) {
        const host = r.name.replace(/\.$/, '');
        out.push(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${r.port}`);
      }
    } catch (e) {
      problems.push(`_${service}._tcp.${domain}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  if (out.length === 0) {
    throw new InputError(
      `--discovery-srv ${domain}: no SRV records (${problems.join('; ')}); add _etcd-client-ssl._tcp or _etcd-client._tcp records, or give --endpoints`,
    );
  }
  return [...new Set(out)].join(',');
}
