/**
 * Reading Prometheus's text exposition format in tests: a strict parser of our own (samples and
 * their labels, for assertions), and the reference parser of Prometheus's Python client
 * (python3-prometheus-client, listed in .ci/apt-packages) as an independent check that the
 * text parses.
 */
import { spawn, spawnSync } from 'node:child_process';

export interface Sample { name: string; labels: Record<string, string>; value: number }

export interface Exposition {
  samples: Sample[];
  /** metric family → its TYPE */
  types: Map<string, string>;
  help: Map<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function unescapeLabel(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** The suffixes a family's samples may carry (a histogram's or summary's series, a counter's total). */
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created', '_info'];

/** The family a sample belongs to: its own name, or its name without a suffix its family's type gives it. */
function familyOf(name: string, types: Map<string, string>): string {
  if (types.has(name)) return name;
  for (const suffix of SUFFIXES) {
    const base = name.endsWith(suffix) ? name.slice(0, -suffix.length) : undefined;
    if (base && types.has(base)) return base;
  }
  return name;
}

/**
 * Parses the text format (version 0.0.4); throws on any malformed line, and on what the format
 * forbids: a family's lines not together (its samples after another family's began), a family
 * typed twice, or a family whose name is another's plus a suffix that readers strip (`X` and
 * `X_total`), which a parser cannot tell apart.
 */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  /** the family whose lines are being read, and every family whose lines have ended */
  let current: string | undefined;
  const ended = new Set<string>();
  const enter = (family: string, where: string) => {
    if (family === current) return;
    if (ended.has(family)) throw new Error(`the lines of ${family} are not together, ${where}`);
    if (current !== undefined) ended.add(current);
    current = family;
  };
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    const where = `line ${i + 1}: ${line}`;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a comment
      if (!NAME.test(m[2])) throw new Error(`bad metric name, ${where}`);
      enter(m[2], where);
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3])) throw new Error(`bad type, ${where}`);
        if (types.has(m[2])) throw new Error(`TYPE given twice, ${where}`);
        const clash = SUFFIXES.map((s) => [`${m[2]}${s}`, m[2].endsWith(s) ? m[2].slice(0, -s.length) : ''])
          .flat().find((other) => other && types.has(other));
        if (clash) throw new Error(`${m[2]} and ${clash} are two families a reader cannot tell apart, ${where}`);
        types.set(m[2], m[3]);
      } else {
        help.set(m[2], m[3]);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`bad sample, ${where}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
      let at = 0;
      while (at < m[3].length) {
        re.lastIndex = at;
        const l = re.exec(m[3]);
        if (!l) throw new Error(`bad labels, ${where}`);
        labels[l[1]] = unescapeLabel(l[2]);
        at = re.lastIndex;
      }
    }
    const raw = m[4];
    // As Prometheus reads them (Go's ParseFloat): Inf and NaN in any case (prom-client writes `Nan`).
    const lower = raw.toLowerCase();
    const value = lower === '+inf' || lower === 'inf' ? Infinity : lower === '-inf' ? -Infinity : lower === 'nan' ? NaN : Number(raw);
    if (Number.isNaN(value) && lower !== 'nan') throw new Error(`bad value, ${where}`);
    enter(familyOf(m[1], types), where);
    samples.push({ name: m[1], labels, value });
  }
  return { samples, types, help };
}

/** The value of one sample whose labels include `labels` (0 when there is none: a counter not yet moved). */
export function value(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.reduce((n, s) => n + s.value, 0);
}

/** Checks every histogram: buckets cumulative and ending with +Inf, which equals _count. */
export function checkHistograms(e: Exposition): void {
  for (const [family, type] of e.types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of e.samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le: _le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
      for (let i = 1; i < buckets.length; i++) {
        if (!(les[i] > les[i - 1])) throw new Error(`${family}${key}: bucket bounds not ascending`);
        if (buckets[i].value < buckets[i - 1].value) throw new Error(`${family}${key}: buckets not cumulative`);
      }
      if (les[les.length - 1] !== Infinity) throw new Error(`${family}${key}: no +Inf bucket`);
      const count = e.samples.find((s) => s.name === `${family}_count` && JSON.stringify(s.labels) === key);
      if (!count || count.value !== buckets[buckets.length - 1].value) throw new Error(`${family}${key}: _count differs from the +Inf bucket`);
    }
  }
}

const PY_CHECK = `
import sys
from prometheus_client.parser import text_string_to_metric_families
n = 0
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        n += 1
print(n)
`;

/** Debian's python3 (where python3-prometheus-client installs), else the python3 on PATH, if it has the client. */
function python(): string {
  for (const py of ['/usr/bin/python3', 'python3']) {
    if (spawnSync(py, ['-c', 'import prometheus_client'], { stdio: 'ignore' }).status === 0) return py;
  }
  throw new Error('this test needs Python 3 with prometheus_client: apt-get install -y python3-prometheus-client (listed in .ci/apt-packages)');
}

/** Parses the text with Prometheus's Python client; resolves with the number of samples it read. */
export function parseWithPrometheusClient(text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(python(), ['-c', PY_CHECK], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`prometheus_client could not parse the metrics: ${err}`))));
    child.stdin.end(text);
  });
}
