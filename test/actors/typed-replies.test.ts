/**
 * The protocols' types, checked by the compiler: each line marked @ts-expect-error must not
 * compile (tsc fails on an expect-error that finds no error), so a handler that answers its
 * command with the wrong type, or a route that sends a corridor's command, breaks the build.
 */
import { expect } from 'chai';
import type { Handlers } from '../../actors/runtime';
import type { RouteWorld } from '../../actors/world';
import type { NodeCommand, NodeEvent, NodeReplies, NodeState } from '../../actors/node/protocol';

type NodeHandlers = Handlers<NodeState, NodeCommand, NodeEvent, NodeReplies>;

describe('typed replies', () => {
  it('a handler must answer its command with the protocol\'s reply type', () => {
    const ok: Pick<NodeHandlers, 'node.revertPort'> = {
      'node.revertPort': () => ({ events: [], value: { nic: 'eth0', incarnation: 'i', seq: 1 } }),
    };
    const wrong: Pick<NodeHandlers, 'node.revertPort'> = {
      // @ts-expect-error a status reference is due, not a string
      'node.revertPort': () => ({ events: [], value: 'done' }),
    };
    const missing: Pick<NodeHandlers, 'node.revertPort'> = {
      // @ts-expect-error an answer is due: the reply is not void
      'node.revertPort': () => ({ events: [] }),
    };
    expect([ok, wrong, missing].length).to.equal(3);
  });

  it('routes ask public commands only', () => {
    const send = (world: RouteWorld) => [
      world.nodes.ask('n1', { type: 'node.revertPort', by: 'admin', nic: 'eth0' }),
      // @ts-expect-error node.assign is the project's to send (project → node)
      world.nodes.ask('n1', { type: 'node.assign', by: 'admin', project: 'p' }),
      // @ts-expect-error switch.recordHostKey is the switch sessions' to send
      world.switches.ask('s1', { type: 'switch.recordHostKey', by: 'admin', fingerprint: 'SHA256:x' }),
      // @ts-expect-error a route reaches a nic through its node
      world.nics.ask('n1/eth0', { type: 'nic.actionFinished', by: 'admin', seq: 1, error: null }),
    ];
    expect(send).to.be.a('function');
  });
});
