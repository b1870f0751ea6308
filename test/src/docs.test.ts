/**
 * The documents cannot drift from the code: every setting src/config.ts reads is in the runbook's
 * Settings table (with the file key it sets and its default), every metric src/metrics.ts makes
 * is in the runbook's table, every relative link of README.md and docs/*.md reaches a file
 * and, where it names one, a heading of that file, and every path of the tree they name exists.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { DEFAULTS, OPTIONAL_KEYS } from '../../src/config';
import { section, rows } from '../helpers/markdown';

/** dist/test/src → the repository's root */
const ROOT = join(__dirname, '..', '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/**
 * Markdown with its fenced code blocks and inline code spans blanked out (links there are text),
 * except a code span that is a link's whole text (`[\`snippet\`](file)`).
 */
function prose(text: string): string {
  return text
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/(\[?)`[^`\n]*`(\]\()?/g, (m, open: string, close?: string) => (open && close ? m : open + (close ?? '')));
}

/** The anchors of a markdown file's headings, as GitHub makes them (a repeated one gets -1, -2, …). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const words = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = words.toLowerCase().replace(/[^\p{L}\p{N}\p{M}_ -]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links `[text](target)` of a markdown file: their text, target, path ('' for this file) and anchor. */
function relativeLinks(text: string): { text: string; target: string; path: string; anchor: string }[] {
  const links = [];
  for (const m of prose(text).matchAll(/\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[2];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const hash = target.indexOf('#');
    links.push({ text: m[1], target, path: hash < 0 ? target : target.slice(0, hash), anchor: hash < 0 ? '' : decodeURIComponent(target.slice(hash + 1)) });
  }
  return links;
}

/**
 * What is wrong with the relative links of `file` (its path from the root), given a reader of
 * other files: a missing file, a missing heading, or a code snippet its file does not contain (a
 * link whose whole text is a code span points at the line that holds it: \`[\`persist(\`](x.ts)\`).
 */
function brokenLinks(file: string, text: string, readOther: (path: string) => string | undefined): string[] {
  const broken = [];
  for (const link of relativeLinks(text)) {
    const path = link.path === '' ? file : normalize(join(dirname(file), link.path));
    const target = path.startsWith('..') ? undefined : path === file ? text : readOther(path);
    if (target === undefined) broken.push(`${file}: (${link.target}): no file ${path}`);
    else if (link.anchor && path.endsWith('.md') && !anchors(target).has(link.anchor)) broken.push(`${file}: (${link.target}): no heading #${link.anchor} in ${path}`);
    else if (/^`[^`]+`$/.test(link.text) && !target.includes(link.text.slice(1, -1))) broken.push(`${file}: (${link.target}): ${path} does not contain ${link.text}`);
  }
  return broken;
}

const source = read('src/config.ts');
/** environment variable → the Config key it sets, as loadConfig reads them */
const fromEnv = new Map([...source.matchAll(/if \(env\.([A-Z_]+)[^)]*\) cfg\.(\w+) =/g)].map((m) => [m[1], m[2]]));

describe('the documents', () => {
  it('found the settings in src/config.ts', () => {
    // Every variable the source names was understood (a new form of reading one would slip by).
    const named = new Set([...source.matchAll(/env\.(HILT?_[A-Z_]+)/g)].map((m) => m[1]).filter((v) => v !== 'HILT_CONFIG'));
    expect([...fromEnv.keys()].sort()).to.deep.equal([...named].sort());
    expect(fromEnv.size).to.be.at.least(38);
    expect(fromEnv.get('HILT_TLS_CERT')).to.equal('tlsCert');
    expect(source).to.include('env.HILT_CONFIG');
  });

  it('runbook: the Settings table lists every variable with the file key it sets, every file key, and the defaults', () => {
    const table = rows(section(read('docs/operations.md'), 'Settings'), '| variable | file key |');
    const byVar = new Map(table.map((r) => [r[0], r]));
    const keys = new Set(table.map((r) => r[1]));
    for (const [env, key] of fromEnv) {
      const row = byVar.get(`\`${env}\``);
      expect(row, `${env} in docs/operations.md, Settings`).to.not.equal(undefined);
      // (a key followed by words: a setting the file may not set, which the row says)
      expect(row![1].split(' ')[0], `the file key of ${env}`).to.equal(`\`${key}\``);
    }
    expect(byVar.has('`HILT_CONFIG`'), 'HILT_CONFIG').to.equal(true);
    for (const key of [...Object.keys(DEFAULTS), ...OPTIONAL_KEYS]) expect(keys.has(`\`${key}\``), `file key ${key}`).to.equal(true);
    // Numbers and words as the code has them (lists, flags and empty values are written as prose).
    for (const [key, value] of Object.entries(DEFAULTS)) {
      if (typeof value !== 'number' && !(typeof value === 'string' && value)) continue;
      const row = table.find((r) => r[1] === `\`${key}\``)!;
      expect(row[2], `the default of ${key}`).to.equal(`\`${value}\``);
    }
    // Every row names a real setting.
    for (const r of table) if (r[0] !== '—' && r[0] !== '`HILT_CONFIG`') expect(fromEnv.has(r[0].slice(1, -1)), r[0]).to.equal(true);
  });

  it('runbook: the Metrics table lists every metric of src/metrics.ts', () => {
    const names = [...read('src/metrics.ts').matchAll(/name: '(hilt_\w+)'/g)].map((m) => m[1]);
    expect(names).to.include.members(['hilt_http_requests_total', 'hilt_storage_used_bytes', 'hilt_backup_last_duration_seconds']);
    const documented = new Set(rows(section(read('docs/operations.md'), 'Metrics'), '| metric |').map((r) => r[0]));
    for (const name of names) expect(documented.has(`\`${name}\``), `${name} in docs/operations.md, Metrics`).to.equal(true);
  });

  it('links: every relative link of README.md and docs/*.md reaches its file and heading', () => {
    const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    expect(files).to.include.members(['docs/operations.md', 'docs/api.md', 'docs/cli.md']);
    const other = (path: string) => (!existsSync(join(ROOT, path)) ? undefined : statSync(join(ROOT, path)).isDirectory() ? '' : read(path));
    expect(files.flatMap((f) => brokenLinks(f, read(f), other))).to.deep.equal([]);
    expect(files.reduce((n, f) => n + relativeLinks(read(f)).length, 0), 'links found').to.be.at.least(20);
  });

  it('paths: every file or folder of the tree that README.md and docs/*.md name in code exists', () => {
    const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const missing: string[] = [];
    let named = 0;
    for (const file of files) {
      for (const m of read(file).matchAll(/`((?:src|lib|actors|hardware|drivers|test|bench|docs|deploy|ui|\.ci)\/[\w./-]*)`/g)) {
        named++;
        if (!existsSync(join(ROOT, m[1]))) missing.push(`${file}: ${m[1]}`);
      }
    }
    expect(missing).to.deep.equal([]);
    expect(named).to.be.at.least(50);
  });

  it('links: the anchors are GitHub\'s, and a link that misses is caught', () => {
    const doc = '# The API\n\n## HTTPS: built in, or behind a reverse proxy\n\n### `GET /health`\n\n## §1 HTTP basics\n\n## Logs\n\n## Logs\n\n```sh\n# not a heading\n```\n';
    expect([...anchors(doc)]).to.deep.equal(['the-api', 'https-built-in-or-behind-a-reverse-proxy', 'get-health', '1-http-basics', 'logs', 'logs-1']);
    const text = 'See [a](a.md#x), [b](https://example.org/b), `[c](c.md)`, [d](#logs) and\n```\n[e](e.md)\n```\n';
    expect(relativeLinks(text).map((l) => [l.path, l.anchor])).to.deep.equal([['a.md', 'x'], ['', 'logs']]);
    const files: Record<string, string> = { 'docs/a.md': '# A\n\n## Top\n', 'README.md': '', 'src/x.ts': 'await engine.persist(events);\n' };
    const readOther = (path: string) => files[path];
    const text2 = '[ok](a.md#top) [self](#b) [gone](z.md) [no heading](a.md#bottom) [up](../README.md) [out](../../x.md) [`engine.persist(`](../src/x.ts) [`persist(one)`](../src/x.ts)\n\n## B\n';
    expect(brokenLinks('docs/b.md', text2, readOther)).to.deep.equal([
      'docs/b.md: (z.md): no file docs/z.md',
      'docs/b.md: (a.md#bottom): no heading #bottom in docs/a.md',
      'docs/b.md: (../../x.md): no file ../x.md',
      'docs/b.md: (../src/x.ts): src/x.ts does not contain `persist(one)`',
    ]);
  });
});
