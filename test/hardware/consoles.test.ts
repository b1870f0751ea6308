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
import { refusingDeletions } from '../helpers/faulty-fs';
import { HiltError } from '../../actors/errors';

/** n1 released (its recording ends), as a release's commit tells the watcher: the read model's map and the released state. */
function releaseN1(readModel: ReadModel, consoles: Consoles): { rm: { nodes: Map<string, NodeState> }; released: NodeState } {
  const rm = readModel as unknown as { nodes: Map<string, NodeState> };
  const before = rm.nodes.get('n1')!;
  const released = { ...before, project: null } as NodeState;
  delete released.console;
  rm.nodes.set('n1', released);
  consoles.watch('n1', before, released);
  return { rm, released };
}

/** Node n1 recording its console through a fake BMC: `io()` is what the test writes the node's output to. */
function recordingN1(): { rm: ReadModel; power: PowerControl; io: () => ConsoleIo | undefined } {
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
  return { rm, power, io: () => io };
}

describe('Consoles', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'hilt-consoles-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('attaches at most maxViewers viewers of a node: one past it is refused before anything is sent; a place freed is taken again', async () => {
    const node = { name: 'n1', incarnation: 'i1', project: null, obm: { type: 'fake', fields: {} }, console: { by: 'admin', since: 1 } } as unknown as NodeState;
    const rm = { nodes: new Map([['n1', node]]) } as unknown as ReadModel;
    const power = {
      hasConsole: () => true,
      openConsole: async (_obm: unknown, i: ConsoleIo) => ({ write: () => true, close: () => queueMicrotask(() => i.ended('closed')) }),
    } as unknown as PowerControl;
    const consoles = new Consoles({ rm, power, dataDir: dir, logBytes: 1024, maxViewers: 2 });
    consoles.start();
    const viewer = () => {
      const got: Buffer[] = [];
      return { got, allowed: () => true, mayType: () => true, send: (c: Buffer) => void got.push(c), backlog: () => 0, close() {} };
    };
    const [a, b, c] = [viewer(), viewer(), viewer()];
    expect(consoles.full('n1')).to.equal(false);
    expect(consoles.attach('n1', a)).to.equal('attached');
    expect(consoles.attach('n1', b)).to.equal('attached');
    expect(consoles.full('n1')).to.equal(true);
    expect(consoles.attach('n1', c)).to.equal('full');
    await sleep(50);
    expect(c.got, 'nothing sent to the refused viewer').to.deep.equal([]);
    expect(consoles.viewerCount()).to.equal(2);
    consoles.detach('n1', a);
    expect(consoles.full('n1')).to.equal(false);
    expect(consoles.attach('n1', c)).to.equal('attached');
    expect(consoles.attach('n2', viewer()), 'a node that does not record').to.equal('stopped');
    await consoles.close();
  });

  it('does not count the log a new viewer was sent as falling behind: a log over 4 MiB waiting for it does not drop it; HILT_CONSOLE_LOG_BYTES + 4 MiB waiting does', async () => {
    const n1 = recordingN1();
    const consoles = new Consoles({ rm: n1.rm, power: n1.power, dataDir: dir, logBytes: 16 << 20 });
    consoles.start();
    await until('the session', () => n1.io() !== undefined);
    for (let i = 0; i < 6; i++) n1.io()!.data(Buffer.alloc(1 << 20, 0x61));
    await until('the log written', async () => ((await consoles.read('n1'))?.length ?? 0) >= 6 << 20);
    // A viewer on a slow link: nothing it is sent has left yet.
    let sent = 0;
    let closed: number | undefined;
    const viewer = { allowed: () => true, mayType: () => false, send: (c: Buffer) => void (sent += c.length), backlog: () => sent, close: (code: number) => void (closed = code) };
    expect(consoles.attach('n1', viewer)).to.equal('attached');
    await until('the log sent', () => sent >= 6 << 20);
    n1.io()!.data(Buffer.from('a line after\r\n'));
    expect(closed, 'kept: only its own log is waiting').to.equal(undefined);
    for (let i = 0; i < 20 && closed === undefined; i++) n1.io()!.data(Buffer.alloc(1 << 20, 0x62));
    expect(closed, 'dropped once too much waits').to.equal(4429);
    expect(sent, 'what waited when it was dropped').to.be.greaterThan((16 << 20) + (4 << 20));
    await consoles.close();
  });

  it('warns once that a node\'s log cannot be written (a full disk), not once per chunk of output; again after it could', async () => {
    const n1 = recordingN1();
    const consoles = new Consoles({ rm: n1.rm, power: n1.power, dataDir: dir, logBytes: 1024 });
    const warned: string[] = [];
    consoles.log = { info() {}, warn: (_o, msg) => void warned.push(msg) };
    const append = consoles.logs.append.bind(consoles.logs);
    let full = true;
    consoles.logs.append = (n, chunk) => (full ? Promise.reject(new Error('ENOSPC: no space left on device')) : append(n, chunk));
    consoles.start();
    await until('the session', () => n1.io() !== undefined);
    const burst = (c: string) => {
      for (let i = 0; i < 100; i++) n1.io()!.data(Buffer.from(c));
    };
    const failures = () => warned.filter((m) => m === 'could not write a console log').length;
    // Each phase waits for what it shows, not for a time (a loaded machine writes late): a node's
    // chunks are written in order, so once a later chunk is in the log every earlier write ended.
    const written = (c: string) => until(`a chunk of ${c} written`, async () => String(await consoles.read('n1')).includes(c));
    burst('a');
    full = false;
    burst('b');
    await written('b');
    expect(failures(), 'warnings of a burst that could not be written').to.equal(1);
    full = true;
    burst('c');
    full = false;
    burst('d');
    await written('d');
    expect(failures(), 'warnings once a write failed again after one that could').to.equal(2);
    await consoles.close();
  });

  it('a log that cannot be deleted when a recording ends (a read-only disk) is warned of, never an unhandled rejection that ends the process; the next recording starts on an empty log', async () => {
    const n1 = recordingN1();
    const consoles = new Consoles({ rm: n1.rm, power: n1.power, dataDir: dir, logBytes: 1024 });
    const warned: string[] = [];
    consoles.log = { info() {}, warn: (_o, msg) => void warned.push(msg) };
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => void unhandled.push(err);
    process.prependListener('unhandledRejection', onUnhandled);
    try {
      consoles.start();
      await until('the session', () => n1.io() !== undefined);
      n1.io()!.data(Buffer.from('the first tenant\'s secret\r\n'));
      await until('the log written', async () => String(await consoles.read('n1')).includes('secret'));
      const remove = consoles.logs.remove.bind(consoles.logs);
      let failing = true;
      consoles.logs.remove = (n) => (failing ? Promise.reject(new Error('EROFS: read-only file system')) : remove(n));
      // The release's commit: the recording ends (World.nodeWatchers).
      const { rm, released } = releaseN1(n1.rm, consoles);
      await sleep(100);
      expect(unhandled.map(String), 'no unhandled rejection').to.deep.equal([]);
      expect(warned).to.include('could not delete a console log');
      // The disk is writable again; the next tenant records.
      failing = false;
      const next = { ...released, project: 'p2', console: { by: 'bob', since: 2 } } as NodeState;
      rm.nodes.set('n1', next);
      consoles.watch('n1', released, next);
      await until('the new session', async () => (await consoles.read('n1')) !== null);
      expect(String(await consoles.read('n1')), 'the next recording\'s log').to.not.include('secret');
    } finally {
      process.removeListener('unhandledRejection', onUnhandled);
      await consoles.close();
    }
  });

  it('a log that can be deleted neither when its recording ends nor when the next starts is never shown to the next: its read is a 503, its viewers get the live output only, until it can be deleted', async () => {
    const n1 = recordingN1();
    const consoles = new Consoles({ rm: n1.rm, power: n1.power, dataDir: dir, logBytes: 1024 });
    const warned: { obj: object; msg: string }[] = [];
    consoles.log = { info() {}, warn: (obj, msg) => void warned.push({ obj, msg }) };
    let undo = () => {};
    try {
      consoles.start();
      await until('the session', () => n1.io() !== undefined);
      n1.io()!.data(Buffer.from('the first tenant\'s secret\r\n'));
      await until('the log written', async () => String(await consoles.read('n1')).includes('secret'));
      undo = refusingDeletions(dir);
      const { rm, released } = releaseN1(n1.rm, consoles);
      await consoles.forget('n1');
      const next = { ...released, project: 'p2', console: { by: 'bob', since: 2 } } as NodeState;
      rm.nodes.set('n1', next);
      const io = n1.io();
      consoles.watch('n1', released, next);
      await until('the new session', () => n1.io() !== io);
      n1.io()!.data(Buffer.from('the next tenant\'s output\r\n'));
      const err = await consoles.read('n1').then((b) => { throw new Error(`served: ${String(b)}`); }, (e: unknown) => e);
      expect(err).to.be.instanceOf(HiltError);
      expect((err as HiltError).type).to.equal('ServiceUnavailableError');
      expect((err as HiltError).message).to.not.include('secret');
      expect(warned.map((w) => w.msg)).to.include.members(['could not delete a console log', 'could not create a console log', 'could not read a console log']);
      const got: Buffer[] = [];
      const viewer = { allowed: () => true, mayType: () => false, send: (c: Buffer) => void got.push(c), backlog: () => 0, close() {} };
      expect(consoles.attach('n1', viewer)).to.equal('attached');
      await until('the viewer told', () => got.length > 0);
      expect(got[0]!.toString()).to.include('[hilt] the recorded log cannot be read now');
      n1.io()!.data(Buffer.from('live\r\n'));
      await until('the live output', () => Buffer.concat(got).toString().includes('live'));
      expect(Buffer.concat(got).toString()).to.not.include('secret');
      // The disk deletes again: the next tenant's log starts then, without the first one's.
      undo();
      undo = () => {};
      n1.io()!.data(Buffer.from('after\r\n'));
      await until('recorded again', async () => String(await consoles.read('n1')).includes('after'));
      expect(String(await consoles.read('n1'))).to.not.include('secret');
    } finally {
      undo();
      await consoles.close();
    }
  });
});
