/**
 * Headnodes (spec: Headnodes; docs/api-conventions.md §9). Lookups and authorization come from the read
 * models; changes go to the headnode actor, VM operations through HeadnodeControl.
 */
import { FastifyInstance } from 'fastify';
import * as S from '../schemas/headnodes';
import { badArgument, duplicate } from '../errors';
import { quote } from '../../lib/text';
import { requireProject, found, lookedUp, stillIn } from './guard';
import type { Caller } from '../auth/basic';
import type { HeadnodeState } from '../../actors/headnode/protocol';

type H = { headnode: string };
type HH = { headnode: string; hnic: string };

export async function headnodeRoutes(app: FastifyInstance): Promise<void> {
  const { world, headnodes } = app.hilt;
  const rm = world.rm;

  /** headnode 404 → the owning project or admin (401). */
  function owned(caller: Caller, name: string): HeadnodeState {
    const h = found(rm.headnodes.get(name), `headnode ${name}`);
    requireProject(caller, h.project);
    return h;
  }

  app.put<{ Params: H; Body: { project: string; base_img: string } }>('/headnode/:headnode', { schema: S.createHeadnode }, async (req) => {
    const { headnode } = req.params;
    const { project, base_img } = req.body;
    // docs/api-conventions.md §9: base image 400 → name 409 → project 404 → auth.
    if (!(await headnodes.images()).includes(base_img)) throw badArgument(`base image ${quote(base_img)} is not installed`);
    if (rm.headnodes.has(headnode)) throw duplicate(`headnode ${headnode}`);
    found(rm.projects.get(lookedUp('project', project)), `project ${project}`);
    requireProject(req.caller, project);
    await world.projects.ask(project, { type: 'project.createHeadnode', by: req.caller.user, headnode, baseImg: base_img }, stillIn(rm, req.caller, project));
  });

  app.delete<{ Params: H }>('/headnode/:headnode', { schema: S.headnodeCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await headnodes.delete(h.name, req.caller.user, stillIn(rm, req.caller, h.project));
  });

  app.post<{ Params: H }>('/headnode/:headnode/start', { schema: S.headnodeCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await headnodes.start(h.name, req.caller.user, stillIn(rm, req.caller, h.project));
  });

  app.post<{ Params: H }>('/headnode/:headnode/stop', { schema: S.headnodeCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await headnodes.stop(h.name, req.caller.user, stillIn(rm, req.caller, h.project));
  });

  app.get<{ Params: H }>('/headnode/:headnode', { schema: S.showHeadnode }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    return {
      name: h.name,
      project: h.project,
      hnics: h.hnics.map((x) => x.name),
      vncport: h.vncport,
      // Beyond the contract: what an operator needs to see (a VM that died shows here).
      base_img: h.baseImg,
      status: h.status,
      error: h.error,
      networks: Object.fromEntries(h.hnics.map((x) => [x.name, x.network])),
    };
  });

  app.put<{ Params: HH }>('/headnode/:headnode/hnic/:hnic', { schema: S.hnicCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await world.headnodes.ask(h.name, { type: 'headnode.createHnic', by: req.caller.user, hnic: req.params.hnic }, stillIn(rm, req.caller, h.project));
  });

  app.delete<{ Params: HH }>('/headnode/:headnode/hnic/:hnic', { schema: S.hnicCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await world.headnodes.ask(h.name, { type: 'headnode.deleteHnic', by: req.caller.user, hnic: req.params.hnic }, stillIn(rm, req.caller, h.project));
  });

  app.post<{ Params: HH; Body: { network: string } }>('/headnode/:headnode/hnic/:hnic/connect_network', { schema: S.connectHnic }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    const { hnic } = req.params;
    // §9: hnic 404 before network 404, also for a network name that no network can have.
    found(h.hnics.find((x) => x.name === hnic), `hnic ${hnic} of headnode ${h.name}`);
    await world.headnodes.ask(h.name, { type: 'headnode.connectNetwork', by: req.caller.user, hnic, network: lookedUp('network', req.body.network) }, stillIn(rm, req.caller, h.project));
  });

  app.post<{ Params: HH }>('/headnode/:headnode/hnic/:hnic/detach_network', { schema: S.hnicCall }, async (req) => {
    const h = owned(req.caller, req.params.headnode);
    await world.headnodes.ask(h.name, { type: 'headnode.detachNetwork', by: req.caller.user, hnic: req.params.hnic }, stillIn(rm, req.caller, h.project));
  });

  // The installed base images (any authenticated caller, as in HIL).
  app.get('/headnode_images', { schema: S.listImages }, () => headnodes.images());
}
