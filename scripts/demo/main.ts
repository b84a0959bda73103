// `npm run demo [-- backup] [options]`: the recovery demo (recoveryDemo.ts), or
// with `backup` first, the backup and point-in-time restore demo (backupDemo.ts).
if (process.argv[2] === 'backup') await import('./backupDemo.js');
else await import('./recoveryDemo.js');
