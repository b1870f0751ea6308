/**
 * What the simulators of the Linux-based switches (SONiC, Cumulus) share: a bash prompt
 * (`user@host:~$`), command lines of several commands joined by `;`, each command's exit
 * status (`echo $?` prints the last one), `sudo` (asking for the user's password once per
 * session when the simulator is told to), and bash's own answer to a command it does not know.
 */
import type { SimPort } from './model';
import type { Shell } from './sim';
import type { SimVendor } from './vendors';

/** One command's outcome: its exit status. */
export type Status = number;

const lastStatus = new WeakMap<Shell, number>();
const sudoDone = new WeakMap<Shell, boolean>();

export abstract class ShellCli implements SimVendor {
  abstract readonly name: string;
  abstract readonly hostname: string;
  abstract readonly portNames: string[];
  /** the prompt's directory part (`~`, Cumulus `mgmt:~`) */
  readonly dir: string = '~';
  readonly inbandLogin = false;
  readonly privilegedAtLogin = true;
  readonly pager = '';
  abstract readonly banner?: string;
  abstract readonly factoryVlans: string;

  abstract newPort(): SimPort;
  abstract canonical(typed: string): string | null;
  /** Run one command (its words, `sudo` taken off: `root`); its exit status. */
  abstract run(sh: Shell, words: string[], root: boolean): Promise<Status>;
  /** Words of a command that configures the switch (faults `hang`/`drop` at `config`, `failConfig`). */
  abstract configures(words: string[]): boolean;

  prompt(hostname: string, _mode: string, _iface: string, _vlan: number, user: string): string {
    return `${user}@${hostname}:${this.dir}$ `;
  }

  private parts(line: string): string[][] {
    return line.split(';').map((p) => p.trim()).filter(Boolean).map((p) => p.split(/\s+/));
  }

  configuring(_sh: Shell, line: string): boolean {
    return this.parts(line).some((w) => this.configures(w[0] === 'sudo' ? w.slice(1) : w));
  }

  async command(sh: Shell, line: string): Promise<void | 'logout'> {
    for (const words of this.parts(line)) {
      if (words[0] === 'exit' || words[0] === 'logout') return 'logout';
      if (words[0] === 'echo' && words[1] === '$?' && words.length === 2) {
        sh.line(String(lastStatus.get(sh) ?? 0));
        lastStatus.set(sh, 0);
        continue;
      }
      lastStatus.set(sh, await this.one(sh, words));
    }
  }

  private async one(sh: Shell, words: string[]): Promise<Status> {
    let w = words;
    let root = false;
    if (w[0] === 'sudo') {
      w = w.slice(1);
      if (!w.length) {
        sh.line('usage: sudo -h | -K | -k | -V');
        return 1;
      }
      if (sh.sim.faults.failConfig && this.configures(w)) {
        sh.line(`${sh.sim.username} is not in the sudoers file.  This incident will be reported.`);
        return 1;
      }
      if (sh.sim.opts.sudoAsksPassword && !sudoDone.get(sh)) {
        sh.print(`[sudo] password for ${sh.sim.username}: `);
        const pw = await sh.readLine(true);
        if (pw !== sh.sim.password) {
          sh.line('Sorry, try again.');
          sh.line('sudo: 1 incorrect password attempt');
          return 1;
        }
        sudoDone.set(sh, true);
      }
      root = true;
    }
    return this.run(sh, w, root);
  }

  /** bash's answer to a command it has not got */
  notFound(sh: Shell, word: string): Status {
    sh.line(`-bash: ${word}: command not found`);
    return 127;
  }
}

/** A table as Python's tabulate prints it with `grid` (SONiC's show commands): `+---+` rules, `|` cells, `+===+` under the header. */
export function grid(header: string[], rows: string[][]): string[] {
  const width = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const rule = (c: string) => `+${width.map((w) => c.repeat(w + 2)).join('+')}+`;
  // numbers right-aligned, text left-aligned, as tabulate does
  const row = (r: string[]) => `|${width.map((w, i) => ` ${/^\d+$/.test(r[i] ?? '') || (i === 0 && r[i] === '') ? (r[i] ?? '').padStart(w) : (r[i] ?? '').padEnd(w)} `).join('|')}|`;
  const out = [rule('-'), row(header), rule('=')];
  for (const r of rows) out.push(row(r));
  if (rows.length) out.push(rule('-'));
  return out;
}
