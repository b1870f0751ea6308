/**
 * An actor that fails answers every waiting ask at once and starts again from storage
 * (docs/actors.md, the loop; issue 11 item 1): storage faults are 503, bugs 500 with the thrown
 * error's stack, and an actor above it that waits without bound (below()) is freed at once.
 */
import { expect } from 'chai';
import { ActorFault, ActorRuntime, Behavior, below, Command, Event } from '../../actors/runtime';
import { MemoryPersistenceEngine } from '../../actors/persistence/memory';
import type { PersistenceEngine } from '../../actors/persistence/engine';
import { HiltError } from '../../src/errors';

/** The memory engine, except that reads of the keys in `failing` throw (as LMDB's key encoder does). */
export class FaultyEngine extends MemoryPersistenceEngine {
  readonly failing = new Set<string>();
  readonly failingWrites = new Set<string>();

  private check(key: string): void {
    if (this.failing.has(key)) throw new RangeError(`injected storage fault reading ${key}`);
  }

  override async latestSnapshot(key: string) {
    this.check(key);
    return super.latestSnapshot(key);
  }

  override events(key: string, offset?: number) {
    this.check(key);
    return super.events(key, offset);
  }

  override async persist(events: Parameters<PersistenceEngine['persist']>[0]) {
    for (const e of events) if (this.failingWrites.has(e.key)) throw new Error(`injected write fault for ${e.key}`);
    return super.persist(events);
  }
}

type Cmd =
  | (Command & { type: 'add'; n: number })
  | (Command & { type: 'get' })
  | (Command & { type: 'crash' })
  | (Command & { type: 'refuse' })
  | (Command & { type: 'poison' })
  | (Command & { type: 'slow'; ms: number })
  | (Command & { type: 'askChild'; child: string });
type Ev = Event & { type: 'Added' | 'Poisoned'; n: number };
interface R { add: number; get: number; crash: never; refuse: never; poison: number; slow: number; askChild: number }

/** A counter; `poison` stores an event that apply throws on while `applyThrows` is set. */
function counter(kind: string, state: { applyThrows: boolean }, child?: () => { ask(id: string, c: Cmd): Promise<unknown> }): Behavior<number, Cmd, Ev, R> {
  return {
    kind,
    apply: (s, e) => {
      if (e.type === 'Poisoned' && state.applyThrows) throw new TypeError('apply bug: cannot read properties of undefined');
      return (s ?? 0) + e.n;
    },
    decide: {
      add: (s, c) => ({ events: [{ type: 'Added', n: c.n }], value: (s ?? 0) + c.n }),
      get: (s) => ({ events: [], value: s ?? 0 }),
      crash: () => { throw new TypeError('decide bug: x is not a function'); },
      refuse: () => { throw new HiltError('IllegalStateError', 'refused'); },
      poison: () => ({ events: [{ type: 'Poisoned', n: 100 }], value: 0 }),
      slow: async (s, c) => { await new Promise((r) => setTimeout(r, c.ms)); return { events: [], value: s ?? 0 }; },
      askChild: async (_s, c) => ({ events: [], value: (await child!().ask(c.child, { type: 'get', by: c.by })) as number }),
    },
  };
}

const by = 'test';
const settle = <T>(p: Promise<T>) => p.then((value) => ({ ok: true as const, value }), (error: HiltError) => ({ ok: false as const, error }));

describe('actor runtime: faults', () => {
  let engine: FaultyEngine;
  let rt: ActorRuntime;
  let faults: ActorFault[];
  const apply = { applyThrows: false };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let children: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let parents: any;
  /** Put an actor to sleep once its mailbox has finished its turn. */
  const sleepActor = async (id: string) => {
    await new Promise((r) => setImmediate(r));
    children.sleep([id]);
    expect(children.isLive(id)).to.equal(false);
  };

  beforeEach(() => {
    engine = new FaultyEngine();
    rt = new ActorRuntime(engine, { askTimeoutMs: 30_000 });
    faults = [];
    rt.onFault = (f) => faults.push(f);
    apply.applyThrows = false;
    children = rt.register(counter('child', apply), () => undefined);
    parents = rt.register(counter('parent', apply, () => below(children)), () => undefined);
  });
  afterEach(() => rt.close());

  it('a recovery that storage refuses answers every waiting ask at once (503), then reads again on the next message', async () => {
    await children.ask('c1', { type: 'add', by, n: 2 });
    await sleepActor('c1');
    engine.failing.add('child:c1');
    const t0 = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => settle(children.ask('c1', { type: 'add', by, n: 1 }))));
    expect(Date.now() - t0, "at once, not at the 30 s ask timeout").to.be.below(2000);
    for (const a of answers) {
      expect(a.ok).to.equal(false);
      expect((a as { error: HiltError }).error.type).to.equal('ServiceUnavailableError');
      expect((a as { error: HiltError }).error.message).to.include('could not be read from storage');
    }
    expect(faults).to.have.length(1);
    expect(faults[0]).to.include({ kind: 'child', id: 'c1', phase: 'recovery', answered: 5 });
    expect(children.isLive('c1')).to.equal(false);
    engine.failing.delete('child:c1');
    // Nothing was stored meanwhile, and the actor is read again.
    expect(await children.ask('c1', { type: 'get', by })).to.equal(2);
  });

  it('frees at once a parent waiting without bound on a child whose recovery faults; the parent goes on', async () => {
    engine.failing.add('child:bad');
    const t0 = Date.now();
    const [first, second] = await Promise.all([
      settle(parents.ask('p', { type: 'askChild', by, child: 'bad' })),
      settle(parents.ask('p', { type: 'add', by, n: 7 })),
    ]);
    expect(Date.now() - t0, "at once, not at the 30 s ask timeout").to.be.below(2000);
    expect(first.ok).to.equal(false);
    expect((first as { error: HiltError }).error.type).to.equal('ServiceUnavailableError');
    // The parent refused the one message (its child's error) and is not faulted itself.
    expect(second).to.deep.equal({ ok: true, value: 7 });
    expect(faults.map((f) => `${f.kind}:${f.id}`)).to.deep.equal(['child:bad']);
    expect(parents.isLive('p')).to.equal(true);
  });

  it('an event that cannot be replayed (a bug) is a 500 for every waiting ask, with the stack of what was thrown', async () => {
    await children.ask('c2', { type: 'poison', by });
    await sleepActor('c2');
    apply.applyThrows = true;
    const answers = await Promise.all([settle(children.ask('c2', { type: 'get', by })), settle(children.ask('c2', { type: 'get', by }))]);
    for (const a of answers) {
      const err = (a as { error: HiltError }).error;
      expect(err.type).to.equal('ServerError');
      expect(err.stack).to.include('apply bug').and.to.include('runtime-faults.test');
    }
    expect(faults[0]).to.include({ phase: 'recovery', answered: 2 });
    expect(faults[0].cause).to.be.instanceOf(TypeError);
  });

  it('a decide that throws a bug answers its ask and every waiting one with 500 and restarts from storage', async () => {
    await children.ask('c3', { type: 'add', by, n: 3 });
    const slow = settle(children.ask('c3', { type: 'slow', by, ms: 30 }));
    const crash = settle(children.ask('c3', { type: 'crash', by }));
    const waiting = [settle(children.ask('c3', { type: 'add', by, n: 1 })), settle(children.ask('c3', { type: 'get', by }))];
    expect(await slow).to.deep.equal({ ok: true, value: 3 });
    for (const a of [await crash, ...(await Promise.all(waiting))]) {
      expect(a.ok).to.equal(false);
      expect((a as { error: HiltError }).error.type).to.equal('ServerError');
    }
    expect(faults).to.have.length(1);
    expect(faults[0]).to.include({ phase: 'decide', answered: 3 });
    expect((faults[0].error.stack ?? '')).to.include('decide bug');
    // Restarted cleanly: the add that waited was not applied; the state is storage's.
    expect(await children.ask('c3', { type: 'get', by })).to.equal(3);
    expect(await children.ask('c3', { type: 'add', by, n: 1 })).to.equal(4);
  });

  it('an apply that throws after the commit drops the actor; the next message reads what was stored', async () => {
    await children.ask('c4', { type: 'add', by, n: 1 });
    apply.applyThrows = true;
    const [poison, after] = await Promise.all([settle(children.ask('c4', { type: 'poison', by })), settle(children.ask('c4', { type: 'add', by, n: 1 }))]);
    expect((poison as { error: HiltError }).error.type).to.equal('ServerError');
    expect((after as { error: HiltError }).error.type).to.equal('ServerError');
    expect(faults[0]).to.include({ phase: 'apply', answered: 2 });
    apply.applyThrows = false;
    // The stored event counts (it was committed), the add that waited was never decided.
    expect(await children.ask('c4', { type: 'get', by })).to.equal(101);
  });

  it('a refusal (HiltError) or a refused write is no fault: only that ask fails, the mailbox goes on', async () => {
    const [refused, added] = await Promise.all([settle(children.ask('c5', { type: 'refuse', by })), settle(children.ask('c5', { type: 'add', by, n: 5 }))]);
    expect((refused as { error: HiltError }).error.type).to.equal('IllegalStateError');
    expect(added).to.deep.equal({ ok: true, value: 5 });
    engine.failingWrites.add('child:c5');
    const [write, read] = await Promise.all([settle(children.ask('c5', { type: 'add', by, n: 1 })), settle(children.ask('c5', { type: 'get', by }))]);
    expect((write as { error: HiltError }).error.type).to.equal('ServiceUnavailableError');
    expect(read).to.deep.equal({ ok: true, value: 5 });
    expect(faults).to.deep.equal([]);
  });

  it('quotes at most a prefix of a long id in its messages', async () => {
    const id = 'x'.repeat(3000);
    engine.failing.add(`child:${id}`);
    const a = await settle(children.ask(id, { type: 'get', by }));
    const msg = (a as { error: HiltError }).error.message;
    expect(msg.length).to.be.below(600);
  });
});
