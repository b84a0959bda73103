// Detaches every key of a KV database file from its lease (`backup restore
// --drop-leases`, on a scratch copy): every stored revision and every live key
// get lease 0, and the leases are removed, in one transaction.
import { openSqlite } from '../common/sqlite.js';

/** Returns how many stored revisions had a lease, and the leases removed. */
export function detachLeasesInDb(dbPath: string): { revisions: number; leases: number } {
  const db = openSqlite(dbPath, { fileMustExist: true });
  try {
    return db.transaction(() => {
      const revisions = db.prepare('UPDATE kv SET lease = 0 WHERE lease <> 0').run().changes;
      db.prepare('UPDATE live SET lease = 0 WHERE lease <> 0').run();
      const leases = db.prepare('DELETE FROM leases').run().changes;
      return { revisions, leases };
    })();
  } finally {
    db.close();
  }
}
