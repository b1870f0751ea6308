/**
 * show_node's answer (`GET /node/<node>`), as the JSON text sent, from the read model's cache of
 * it (actors/readmodel-indexes.ts, NodeAnswers) or made and cached. Who may see it is decided by
 * the route against the committed node on every call; only the text is kept.
 */
import type { NodeView, ReadModel } from '../../actors/readmodel';
import type { NodeState } from '../../actors/node/protocol';

/** The answer as an object: what the text is the JSON of. */
export function nodeAnswerObject(rm: ReadModel, node: NodeState, view: NodeView): Record<string, unknown> {
  return {
    name: node.name,
    project: node.project,
    nics: rm.nicsOf(node.name).map((nic) => {
      const out: Record<string, unknown> = { label: nic.name, macaddr: nic.macaddr, networks: nic.networks };
      if (view === 'admin') {
        // Wiring is for operators only (docs/api-conventions.md §5).
        const port = rm.wiring.get(node.name, nic.name);
        out.port = port?.port ?? null;
        out.switch = port?.switch ?? null;
      }
      return out;
    }),
    ...(node.metadata ? { metadata: node.metadata } : {}),
  };
}

export function nodeAnswer(rm: ReadModel, node: NodeState, view: NodeView): string {
  let text = rm.nodeAnswers.get(node.name, view);
  if (text === undefined) rm.nodeAnswers.set(node.name, view, (text = JSON.stringify(nodeAnswerObject(rm, node, view))));
  return text;
}
