#!/usr/bin/env node
// Part of `npm run lint`: every relative link in README.md and docs/**/*.md names a
// file of this repository (never one beside it, such as ../shared/, which users do
// not have), and every #anchor names a heading of the file it points into, by
// GitHub's rule (lower case, punctuation dropped, spaces to '-', repeats numbered);
// a repository file named in code (`src/...`, `test/...`) exists.
// Prints one line per broken link and exits 1, or prints nothing and exits 0.
import fs from 'node:fs';
import path from 'node:path';

// The repository root, or the tree given (the tests check small trees of their own).
const root = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));

function markdownFiles() {
  const out = [path.join(root, 'README.md')];
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) out.push(p);
    }
  };
  walk(path.join(root, 'docs'));
  return out;
}

/** The text outside fenced code blocks (a `#` in a shell block is no heading, a `](` in code no link). */
function prose(text) {
  let fenced = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

const anchorCache = new Map();
function anchorsOf(file) {
  if (!anchorCache.has(file)) {
    const seen = new Map();
    const anchors = new Set();
    for (const m of prose(fs.readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
      const base = m[1]
        .replace(/`/g, '')
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-');
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    anchorCache.set(file, anchors);
  }
  return anchorCache.get(file);
}

const broken = [];
for (const file of markdownFiles()) {
  const rel = path.relative(root, file);
  const lines = prose(fs.readFileSync(file, 'utf8')).split('\n');
  lines.forEach((line, i) => {
    // Inline code is no link either.
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [pathPart, anchor] = target.split('#', 2);
      const dest = pathPart === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
      const where = `${rel}:${i + 1}`;
      if (path.relative(root, dest).startsWith('..')) broken.push(`${where}: ${target} is outside the repository; users do not have it`);
      else if (!fs.existsSync(dest)) broken.push(`${where}: ${target} does not exist`);
      else if (anchor !== undefined && dest.endsWith('.md') && !anchorsOf(dest).has(anchor))
        broken.push(`${where}: ${target}: no heading '#${anchor}' in ${path.relative(root, dest)}`);
    }
    // A path to another repository's tree written as code is the same mistake.
    if (/\.\.\/shared\//.test(line)) broken.push(`${rel}:${i + 1}: names ../shared/, which users do not have`);
    // So is a file of ours named in code that is not there (renamed or removed since).
    for (const m of line.matchAll(/`((?:src|test|bench|commands|playbooks|scripts|docs|bin)\/[\w./-]+)`/g)) {
      if (!fs.existsSync(path.join(root, m[1]))) broken.push(`${rel}:${i + 1}: names ${m[1]}, which does not exist`);
    }
  });
}
for (const b of broken) console.error(b);
process.exit(broken.length > 0 ? 1 : 0);
