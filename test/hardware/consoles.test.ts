/** Consoles (hardware/consoles.ts) with a stand-in BMC session and read model. */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Consoles } from '../../hardware/consoles';
import type { ReadModel } from '../../actors/readmodel';
import type { NodeState } from '../../actors/node/protocol';
import type { PowerControl } from '../../hardware/power';
import type { ConsoleIo } from '../../drivers/obm/types';
import { sleep, until } from '../helpers/wait';

describe('Consoles', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-consoles-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('warns once that a node\'s log cannot be written (a full disk), not once per chunk of output; again after it could', async () => {
    const node = { name: 'n1', incarnation: 'i1', project: null, obm: { type: 'fake', fields: {} }, console: { by: 'admin', since: 1 } } as unknown as NodeState;
    const rm = { nodes: new Map([['n1', node]]) } as unknown as ReadModel;
    let io: ConsoleIo | undefined;
    const power = {
      hasConsole: () => true,
      openConsole: async (_obm: unknown, i: ConsoleIo) => {
        io = i;
        return { write: () => true, close: () => queueMicrotask(() => i.ended('closed')) };
      },
    } as unknown as PowerControl;
    const consoles = new Consoles({ rm, power, dataDir: dir, logBytes: 1024 });
    const warned: string[] = [];
    consoles.log = { info() {}, warn: (_o, msg) => void warned.push(msg) };
    const append = consoles.logs.append.bind(consoles.logs);
    let full = true;
    consoles.logs.append = (n, chunk) => (full ? Promise.reject(new Error('ENOSPC: no space left on device')) : append(n, chunk));
    consoles.start();
    await until('the session', () => io !== undefined);
    const burst = async () => {
      for (let i = 0; i < 100; i++) io!.data(Buffer.from('x'));
      await sleep(20);
    };
    const failures = () => warned.filter((m) => m === 'could not write a console log').length;
    await burst();
    expect(failures()).to.equal(1);
    full = false;
    await burst();
    full = true;
    await burst();
    expect(failures()).to.equal(2);
    await consoles.close();
  });
});
