// `backup restore --drop-leases`: the materialized snapshot's keys detached from
// their leases (they no longer expire with them) and the leases removed, in the
// snapshot's own format, its sha256 trailer rewritten. Worked on a copy beside
// the file and renamed over it: the file is whole either way.
import fs from 'node:fs';
import path from 'node:path';
import { syncDir } from '../common/durableFile.js';
import { checkTrailer, detachBoltLeases, hasTrailer, TRAILER_SIZE } from '../etcdfile/index.js';
import { detachLeasesInDb, fsyncFile, restoreSnapshot, writeSnapshotSync } from '../kv/index.js';
import { snapshotKind } from '../recovery/snapshotFormat.js';

export interface LeasesDropped {
  /** stored revisions whose key had a lease */
  revisions: number;
  leases: number;
}

export async function dropLeases(file: string): Promise<LeasesDropped> {
  const tmp = `${file}.drop-leases`;
  const db = `${file}.drop-leases.db`;
  try {
    if (snapshotKind(file).format === 'etcd') {
      // The trailer is rewritten below: check the old one first, so damage since the save is never re-signed.
      const before = checkTrailer(file);
      if (before.present && !before.matches) throw new Error(`${file}: its sha256 trailer does not match its bytes; nothing was changed`);
      fs.copyFileSync(file, tmp);
      const size = fs.statSync(tmp).size;
      if (hasTrailer(size)) fs.truncateSync(tmp, size - TRAILER_SIZE);
      const r = detachBoltLeases(tmp);
      fs.appendFileSync(tmp, Buffer.from(checkTrailer(tmp).computed, 'hex'));
      fsyncFile(tmp);
      fs.renameSync(tmp, file);
      await syncDir(path.dirname(path.resolve(file)));
      return r;
    }
    await restoreSnapshot(file, db);
    const r = detachLeasesInDb(db);
    writeSnapshotSync(db, tmp);
    fsyncFile(tmp);
    fs.renameSync(tmp, file);
    await syncDir(path.dirname(path.resolve(file)));
    return r;
  } finally {
    for (const f of [tmp, db, `${db}-wal`, `${db}-shm`]) fs.rmSync(f, { force: true });
  }
}
