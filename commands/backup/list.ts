import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { openBackupStore, STORE_ARG, STORE_FLAGS, storeUrlOf, tagStoreError } from '../../src/cli/backupStoreFlags.js';
import { backupListOutput } from '../../src/cli/output/backupList.js';
import { clusterIdText } from '../../src/backup/layout.js';
import { readCatalog } from '../../src/backup/catalog.js';
import { listBackups, type ClusterHead } from '../../src/backup/listing.js';

export default class BackupList extends EtcdCommand {
  static override description =
    'What a backup store holds, per cluster ID: fulls, chains of segments with their revision and time ranges, gaps and holes, sizes, encryption, and the restorable window; with --endpoints, how far the latest backup is behind the cluster.';

  static override examples = [
    '<%= config.bin %> backup list file:///var/backups/etcd',
    '<%= config.bin %> backup list s3://backups/prod --s3-endpoint https://minio.example:9000 -w json',
    '<%= config.bin %> backup list s3://backups/prod --endpoints https://10.0.0.1:2379 --cacert ca.pem',
  ];

  static override args = STORE_ARG;

  static override flags = STORE_FLAGS;

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagStoreError(err);
    return super.catch(err);
  }

  async run(): Promise<void> {
    const { args, flags, metadata } = await this.parse(BackupList);
    const url = storeUrlOf(flags, args.store);
    // The cluster is asked only when the operator named it (the default endpoint is not a choice).
    const endpointsGiven = metadata.flags.endpoints?.setFromDefault !== true || Boolean(process.env.ETCDCTL_ENDPOINTS);
    const store = await openBackupStore(url, flags);
    try {
      const catalog = await readCatalog(store);
      let head: ClusterHead | undefined;
      if (endpointsGiven) {
        const status = await this.client(flags).status();
        head = { endpoint: flags.endpoints, clusterId: clusterIdText(status.header.clusterId), revision: status.header.revision };
      }
      this.print(flags['write-out'], listBackups(url, catalog, head), backupListOutput);
    } finally {
      store.close();
    }
  }
}
