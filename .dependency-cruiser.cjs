// The dependency rule of shared/ARCHITECTURE.md, checked by `npm run lint`:
//   commands → cli → {playbook, drill → recovery, ops, migrate, audit} → {client, server}
//     → {api, transport, etcdfile} → {net, kv, storage} → {raft, proto} → common
// Imports point down only (skipping floors is fine), never in a cycle, and
// nothing under src/ or commands/ imports test/ or bench/. On the two floors
// under the client and the server, a folder imports only floors below its own,
// not its neighbours: api → {net, kv}, transport → net, etcdfile → kv (what
// etcd's WAL entries hold), net, kv and storage → {raft, proto, common}. The
// client imports neither the member nor its gRPC services (src/server, src/api).
// Benchmarks are test tooling: they may use test/support (clusters, ports).
const FLOORS = [
  ['common'],
  ['raft', 'proto'],
  ['net', 'kv', 'storage'],
  ['api', 'transport', 'etcdfile'],
  ['client', 'server'],
  ['ops', 'audit', 'migrate', 'kube'],
  ['recovery'],
  ['playbook', 'drill', 'backup'],
  ['cli', 'demo'],
];

// Floors whose folders do not import one another.
const APART = [
  ['net', 'kv', 'storage'],
  ['api', 'transport', 'etcdfile'],
];

const folder = (names) => `^src/(${names.join('|')})/`;

const upward = FLOORS.flatMap((names, level) => {
  const above = FLOORS.slice(level + 1).flat();
  if (above.length === 0) return [];
  return [
    {
      name: `no-upward-from-${names.join('-')}`,
      comment: `src/{${names.join(',')}} may import only floors below it (or its own floor); see shared/ARCHITECTURE.md`,
      severity: 'error',
      from: { path: folder(names) },
      to: { path: `${folder(above)}|^commands/` },
    },
  ];
});

// `$1` is the folder the import is from: its own files are not its neighbours.
const sideways = APART.map((names) => ({
  name: `no-sideways-in-${names.join('-')}`,
  comment: `src/{${names.join(',')}} do not import one another: each imports only floors below; see shared/ARCHITECTURE.md`,
  severity: 'error',
  from: { path: folder(names) },
  to: { path: folder(names), pathNot: '^src/$1/' },
}));

module.exports = {
  forbidden: [
    ...upward,
    ...sideways,
    {
      name: 'client-imports-no-server-code',
      comment:
        "the client talks to members over the wire: it imports neither the member (src/server) nor its gRPC services (src/api); etcd's texts are in src/common",
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/(api|server)/' },
    },
    {
      name: 'raft-imports-only-common',
      comment: 'src/raft is the pure core: it imports nothing of ours but src/common',
      severity: 'error',
      from: { path: '^src/raft/' },
      to: { path: '^src/', pathNot: '^src/(raft|common)/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle makes two modules one; break it by moving the shared part down',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-test-imports',
      comment: 'production code never imports tests or benchmarks',
      severity: 'error',
      from: { path: '^(src|commands)/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
