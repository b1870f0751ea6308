/**
 * Wiring validation (admin only, docs/switch-ports.md): what each switch's own tables (learned
 * MACs, LLDP neighbours) say is plugged into its ports, against the wiring the service holds
 * (hardware/wiring.ts). Reads only: a proposal is never applied by the service.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/wiring';
import { requireAdmin, found } from './guard';

export async function wiringRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;

  app.get<{ Params: { switch: string } }>('/admin/switch/:switch/wiring', { schema: S.switchWiring }, async (req) => {
    requireAdmin(req.caller);
    found(world.rm.switches.get(req.params.switch), `switch ${req.params.switch}`);
    return world.wiring.check(req.params.switch);
  });

  app.get('/admin/wiring', { schema: S.allWiring }, async (req) => {
    requireAdmin(req.caller);
    return world.wiring.checkAll();
  });

  // A POST for HIL-style clients that expect one, but it changes nothing: an auditor reads it too.
  app.post<{ Params: { switch: string } }>('/admin/switch/:switch/wiring/propose', { schema: S.proposeWiring, config: { reads: true } }, async (req) => {
    requireAdmin(req.caller);
    found(world.rm.switches.get(req.params.switch), `switch ${req.params.switch}`);
    return world.wiring.propose(req.params.switch);
  });
}
