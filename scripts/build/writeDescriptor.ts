// `npm run build`: parses our .proto files with protobufjs (a build tool here,
// never loaded by a command or member) and writes them as protobufjs's JSON
// next to load.js (dist/src/proto/descriptor.json), from which load.ts plans
// its codec at every start.
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { DESCRIPTOR_JSON } from '../../src/proto/load.js';

/** src/proto, from dist/src/proto. */
const PROTO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src/proto');
const FILES = ['rpc.proto', 'kv.proto', 'auth.proto', 'health.proto', 'peer.proto'];

const root = new protobuf.Root();
// Imports name files in PROTO_DIR ("kv.proto"). Field names as written (keepCase).
root.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(PROTO_DIR, target));
writeFileSync(`${DESCRIPTOR_JSON}.tmp`, JSON.stringify(root.loadSync(FILES, { keepCase: true }).resolveAll().toJSON()));
// Renamed into place: a failed build never leaves a half-written descriptor behind.
renameSync(`${DESCRIPTOR_JSON}.tmp`, DESCRIPTOR_JSON);
console.log('wrote dist/src/proto/descriptor.json');
