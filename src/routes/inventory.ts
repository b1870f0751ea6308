/**
 * GET /admin/inventory (admin; issue 26): every switch with its ports and every node with its
 * BMC, metadata, nics and wiring, in one read of the read model, sorted by name, secrets left
 * out (a field whose name says it is one). An SSH switch's host key fingerprint (pinned at
 * registration or recorded at the first login; no secret) is its `host_key`, so that an export
 * keeps it and a restore does not trust whatever key answers first. What `hilt export` writes
 * and `hilt import` compares a file with. Beyond HIL's API.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/inventory';
import { requireAdmin } from './guard';
import { SECRET_KEY } from '../redact';

const byName = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });
const withoutSecrets = (fields: Record<string, unknown>) => Object.fromEntries(Object.entries(fields).filter(([k]) => !SECRET_KEY.test(k)));

export async function inventoryRoutes(app: FastifyInstance): Promise<void> {
  const rm = app.hilt.world.rm;
  app.get('/admin/inventory', { schema: S.inventory }, async (req) => {
    requireAdmin(req.caller);
    const switches = [...rm.switches.values()].sort((a, b) => byName(a.name, b.name)).map((sw) => ({
      name: sw.name, type: sw.type, fields: withoutSecrets(sw.fields), ...(sw.hostKey ? { host_key: sw.hostKey } : {}),
      ports: rm.portsOf(sw.name).map((p) => p.name).sort(byName),
    }));
    const nodes = [...rm.nodes.values()].sort((a, b) => byName(a.name, b.name)).map((n) => ({
      name: n.name,
      obm: { type: n.obm.type, fields: withoutSecrets(n.obm.fields) },
      metadata: n.metadata ?? {},
      nics: [...rm.nicsOf(n.name)].sort((a, b) => byName(a.name, b.name)).map((x) => {
        const port = rm.wiring.get(n.name, x.name);
        return { name: x.name, macaddr: x.macaddr, switch: port?.switch ?? null, port: port?.port ?? null };
      }),
    }));
    return { switches, nodes };
  });
}
