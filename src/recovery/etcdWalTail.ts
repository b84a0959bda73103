// placeholder until the WAL reader lands
export function commitWalTail(_walDir: string): { pastCommit: number; appended: boolean } {
  throw new Error('keeping the entries past the commit index of an etcd data dir needs the WAL reader');
}
