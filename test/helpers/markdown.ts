/** Reading the docs' markdown in tests: a section, and a table's rows. */
import { expect } from 'chai';

/** The text under `## title`, up to the next heading of that level. */
export function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `section "${title}"`).to.be.at.least(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The rows of the table whose header line starts with `header`, as trimmed cells (an escaped `\|` is a `|` of its cell). */
export function rows(text: string, header: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(header));
  expect(start, `a table "${header}"`).to.be.at.least(0);
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end < 0 ? undefined : end)
    .map((l) => l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|')));
}
