import { Command } from '#oclif-core';
import { oclifFlag } from '../src/cli/oclifFlag.js';
import { parseServerArgs, SERVER_FLAGS } from '../src/cli/serverFlags.js';
import { runServer } from '../src/cli/serverRun.js';

export default class Server extends Command {
  static override description = `Run one Lifeboat member in the foreground: an embedded Raft member with an MVCC store, serving etcd's v3 API.

Flags follow etcd's names; each can also come from LIFEBOAT_<FLAG> (e.g. LIFEBOAT_INITIAL_CLUSTER), the flag winning.
Exit codes: 0 clean stop, 1 failure, 2 bad usage, 3 refused by a safety check, 78 removed or superseded (do not restart).`;

  static override examples = [
    '<%= config.bin %> server --name m1 --data-dir /var/lib/lifeboat/m1 --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 --initial-cluster m1=http://127.0.0.1:2380',
    'LIFEBOAT_NAME=m4 LIFEBOAT_INITIAL_CLUSTER_STATE=existing LIFEBOAT_INITIAL_CLUSTER=m1=http://127.0.0.1:2380,m4=http://127.0.0.1:2480 <%= config.bin %> server --data-dir /var/lib/lifeboat/m4 --listen-peer-urls http://127.0.0.1:2480 --initial-advertise-peer-urls http://127.0.0.1:2480 --listen-client-urls http://127.0.0.1:2479 --advertise-client-urls http://127.0.0.1:2479',
    '<%= config.bin %> server --name m1 --data-dir /var/lib/lifeboat/m1 --listen-client-urls https://10.0.0.1:2379 --advertise-client-urls https://10.0.0.1:2379 --cert-file m1.crt --key-file m1.key --trusted-ca-file ca.crt --client-cert-auth --listen-peer-urls https://10.0.0.1:2380 --initial-advertise-peer-urls https://10.0.0.1:2380 --peer-cert-file m1.crt --peer-key-file m1.key --peer-trusted-ca-file ca.crt --peer-client-cert-auth --initial-cluster m1=https://10.0.0.1:2380',
  ];

  static override flags = Object.fromEntries(Object.entries(SERVER_FLAGS).map(([name, f]) => [name, oclifFlag(name, f)]));

  // bin/run.js runs `lifeboat server` through src/cli/serverEntry.ts (no oclif): this is the path of --help and of oclif's own runners.
  async run(): Promise<void> {
    this.exit(await runServer(parseServerArgs(this.argv)));
  }
}
