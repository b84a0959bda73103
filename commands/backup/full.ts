import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Flags } from '#oclif-core';
import { takeFull } from '../../src/backup/agent/fullBackup.js';
import { requireRootRole } from '../../src/backup/agent/rootCheck.js';
import { readCatalog } from '../../src/backup/catalog.js';
import { clusterIdText } from '../../src/backup/layout.js';
import { serializeManifest } from '../../src/backup/manifest.js';
import { CODEC_FLAGS, codecOf } from '../../src/cli/backupAgentFlags.js';
import { openBackupStore, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { connectionFromFlags, EtcdCommand } from '../../src/cli/baseCommand.js';

interface FullOutput {
  store: string;
  skipped: boolean;
  clusterId: string;
  revision: number;
  object?: string;
  keyCount?: number;
  plainSize?: number;
  storedSize?: number;
  member?: string;
}

export default class BackupFull extends EtcdCommand {
  static override summary = 'Take a full backup now and upload it to the store (as an operator does before an upgrade).';

  static override description = `Streams Maintenance.Snapshot from the first endpoint that answers into a temp file (its sha256 trailer checked), reads its revision and key count from the file itself, records HashKV at that revision, then uploads the plain snapshot bytes (compressed, optionally encrypted to age recipients) and, last, its manifest. A cluster still at the revision of the store's last full is not backed up again (it says so; --force takes one anyway). Runs beside a running agent (it takes no lock). Refuses (exit 3) a --user without the root role: etcd 3.4 serves Snapshot and HashKV to root only. After decrypting and decompressing, the object restores with 'etcdctl snapshot restore' or 'lifeboat snapshot restore'.`;

  static override examples = [
    '<%= config.bin %> backup full --endpoints 10.0.0.1:2379 --store file:///mnt/backups/etcd',
    '<%= config.bin %> backup full --endpoints 10.0.0.1:2379 --store s3://backups/etcd --s3-endpoint https://minio.example:9000 --encrypt-to age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p',
  ];

  static override flags = {
    ...STORE_FLAGS,
    ...CODEC_FLAGS,
    'work-dir': Flags.string({ description: 'where the snapshot is written before it is encoded and uploaded (default: a temp dir)', helpValue: 'DIR' }),
    force: Flags.boolean({ description: 'take a full even when the cluster is still at the revision of the last one', default: false }),
  };

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(BackupFull);
    const url = storeUrlOf(flags);
    const codec = codecOf(flags);
    const client = this.client(flags);
    await requireRootRole(client, connectionFromFlags(flags).credentials?.user);
    const store = await openBackupStore(url, flags);
    const work = fs.mkdtempSync(path.join(flags['work-dir'] ?? os.tmpdir(), 'lifeboat-backup-full-'));
    try {
      const cid = clusterIdText((await client.status()).header.clusterId);
      const c = (await readCatalog(store)).clusters.find((x) => x.clusterId === cid);
      const last = c && c.fulls.length > 0 ? Math.max(...c.fulls.map((f) => f.revision)) : undefined;
      const r = await takeFull(client, work, path.join(work, 'full.obj'), codec, flags.force ? undefined : last);
      let out: FullOutput;
      if ('skipped' in r) out = { store: store.url, skipped: true, clusterId: cid, revision: r.revision };
      else {
        // The data object first, its manifest last: the manifest is what makes the full exist.
        await store.put(r.key, undefined, { file: r.dataFile });
        await store.put(r.manifestKey, serializeManifest(r.manifest));
        const m = r.manifest;
        out = {
          store: store.url,
          skipped: false,
          clusterId: m.clusterId,
          revision: m.revision,
          object: m.object,
          keyCount: m.keyCount,
          plainSize: m.plainSize,
          storedSize: m.storedSize,
          member: m.member.endpoint,
        };
      }
      this.print(flags['write-out'], out, (o) =>
        o.skipped
          ? `full skipped: cluster ${o.clusterId} is still at revision ${o.revision}, the revision of the last full in ${o.store} (--force takes one anyway)`
          : `full of cluster ${o.clusterId} at revision ${o.revision} from ${o.member}: ${o.keyCount} keys, ${o.plainSize} bytes (${o.storedSize} stored) in ${o.store} as ${o.object}`,
      );
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
      store.close();
    }
  }
}
