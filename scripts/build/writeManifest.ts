// `npm run build` ends here: writes oclif.manifest.json, the list of commands with
// their flags and where each lives. Without it oclif imports every command (and
// so all of Lifeboat) at each start just to find the one asked for; with it only
// that one is loaded. The manifest is made by oclif itself from the built commands.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config, type Interfaces } from '#oclif-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const file = path.join(root, 'oclif.manifest.json');
// A stale manifest would be used as is: compute a fresh one without it.
fs.rmSync(file, { force: true });
const config = await Config.load({ root, ignoreManifest: true });
// The loaded plugin class holds the manifest it computed (the interface type does not show it).
const self = config.getPluginsList().find((p) => p.root === root) as (Interfaces.Plugin & { manifest: Interfaces.Manifest }) | undefined;
if (!self) throw new Error(`oclif found no plugin at ${root}`);
const tmp = `${file}.tmp`;
fs.writeFileSync(tmp, JSON.stringify(self.manifest, null, 1) + '\n');
fs.renameSync(tmp, file);
console.log(`wrote ${path.relative(process.cwd(), file) || file} (${Object.keys(self.manifest.commands).length} commands)`);
