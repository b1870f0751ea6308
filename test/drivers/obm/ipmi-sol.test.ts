/**
 * activateSol (drivers/obm/ipmi-sol.ts) with a stand-in for ipmitool: a script that prints the
 * session banner and then reads its stdin only when told, as an ipmitool whose BMC stopped
 * acknowledging the SOL payload (it sends the next input only after the last was taken).
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activateSol, MAX_PENDING_INPUT } from '../../../drivers/obm/ipmi-sol';

describe('a SOL session whose ipmitool takes no input', function () {
  this.timeout(20_000);
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-sol-')); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('holds at most MAX_PENDING_INPUT of typed bytes for it: the rest is refused, not kept in memory', async () => {
    const fake = join(dir, 'ipmitool');
    // Reads nothing for a second (the pipe fills), then counts what it was sent until its stdin ends.
    writeFileSync(fake, '#!/bin/sh\nprintf \'[SOL Session operational.  Use ~? for help]\\n\'\nsleep 1\nprintf \'got %s\\n\' "$(wc -c)"\n');
    chmodSync(fake, 0o700);
    let out = '';
    let ended!: () => void;
    const over = new Promise<void>((r) => (ended = r));
    const link = await activateSol({ file: fake, argv: [], env: { PATH: process.env.PATH }, label: 'fake', redact: (s) => s },
      { data: (c) => (out += c.toString('latin1')), ended: () => ended() }, new AbortController().signal);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let refused = 0;
    for (let i = 0; i < 128; i++) if (!link.write(chunk)) refused++;
    link.close();
    await over;
    const got = Number(/got (\d+)/.exec(out)?.[1]);
    expect(refused, 'writes refused once the input is full').to.be.greaterThan(0);
    // What the kernel holds in the child's stdin (a socket pair: about 200 KiB) comes on top of the bound.
    expect(got).to.be.at.most(MAX_PENDING_INPUT + 512 * 1024);
    expect(got).to.equal((128 - refused) * chunk.length);
  });
});
