/**
 * The operators' documents cannot drift from the code: every setting src/config.ts reads is in
 * the runbook's Settings table (with the file key it sets and its default) and in the README's
 * Configuration section, and every metric src/metrics.ts makes is in the runbook's table.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULTS, OPTIONAL_KEYS } from '../../src/config';

/** dist/test/src → the repository's root */
const ROOT = join(__dirname, '..', '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The text of the section under the heading `## title`, up to the next heading of that level. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `section "${title}"`).to.be.at.least(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The rows of the markdown table whose header line starts with `header`, as trimmed cells. */
function rows(text: string, header: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(header));
  expect(start, `a table "${header}"`).to.be.at.least(0);
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end < 0 ? undefined : end).map((l) => l.slice(2, -2).split(' | ').map((c) => c.trim()));
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

  it('README: the Configuration section names every variable', () => {
    const text = section(read('README.md'), 'Configuration');
    for (const env of ['HILT_CONFIG', ...fromEnv.keys()]) expect(text, `${env} in README.md, Configuration`).to.include(`\`${env}\``);
  });

  it('runbook: the Metrics table lists every metric of src/metrics.ts', () => {
    const names = [...read('src/metrics.ts').matchAll(/name: '(hilt_\w+)'/g)].map((m) => m[1]);
    expect(names).to.include.members(['hilt_http_requests_total', 'hilt_storage_used_bytes', 'hilt_backup_last_duration_seconds']);
    const documented = new Set(rows(section(read('docs/operations.md'), 'Metrics'), '| metric |').map((r) => r[0]));
    for (const name of names) expect(documented.has(`\`${name}\``), `${name} in docs/operations.md, Metrics`).to.equal(true);
  });
});
