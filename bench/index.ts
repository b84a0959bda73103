// `npm run bench -- <name> [args]`: each benchmark is bench/<name>.ts exporting run(args).
const available = ['raft', 'storage', 'cluster', 'profile', 'idle', 'puts', 'medians', 'startup', 'backup', 'restore'];

const [name, ...args] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}> [options]`);
  process.exit(2);
}
const mod = (await import(`./${name}.js`)) as { run(args: string[]): Promise<void> };
await mod.run(args);
