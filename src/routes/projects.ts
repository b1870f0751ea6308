import { FastifyInstance } from 'fastify';
import * as S from '../schemas/projects';
import { requireAdmin, requireProject, found, lookedUp, stillIn } from './guard';

type P = { project: string };

export async function projectRoutes(app: FastifyInstance): Promise<void> {
  const { world } = app.hilt;
  const rm = world.rm;

  app.put<{ Params: P }>('/project/:project', { schema: S.createProject }, async (req) => {
    requireAdmin(req.caller);
    await world.projects.ask(req.params.project, { type: 'project.create', by: req.caller.user });
  });

  app.delete<{ Params: P }>('/project/:project', { schema: S.deleteProject }, async (req) => {
    requireAdmin(req.caller);
    await world.projects.ask(req.params.project, { type: 'project.delete', by: req.caller.user });
  });

  app.get('/projects', { schema: S.listProjects }, async (req) => {
    requireAdmin(req.caller);
    return [...rm.projects.keys()];
  });

  app.post<{ Params: P; Body: { node: string } }>('/project/:project/connect_node', { schema: S.projectNode }, async (req) => {
    const { project } = req.params;
    found(rm.projects.get(project), `project ${project}`);
    requireProject(req.caller, project);
    await world.projects.ask(project, { type: 'project.connectNode', by: req.caller.user, node: lookedUp('node', req.body.node) }, stillIn(rm, req.caller, project));
  });

  app.post<{ Params: P; Body: { node: string } }>('/project/:project/detach_node', { schema: S.projectNode }, async (req) => {
    const { project } = req.params;
    found(rm.projects.get(project), `project ${project}`);
    requireProject(req.caller, project);
    found(rm.nodes.get(lookedUp('node', req.body.node)), `node ${req.body.node}`);
    await world.projects.ask(project, { type: 'project.detachNode', by: req.caller.user, node: req.body.node }, stillIn(rm, req.caller, project));
    // The release ended the node's console recording: its log is gone before the answer (docs/consoles.md).
    await app.hilt.consoles.forget(req.body.node);
  });

  app.get<{ Params: P }>('/project/:project/nodes', { schema: S.projectList }, async (req) => {
    found(rm.projects.get(req.params.project), `project ${req.params.project}`);
    requireProject(req.caller, req.params.project);
    return [...rm.nodesByProject.get(req.params.project)];
  });

  app.get<{ Params: P }>('/project/:project/networks', { schema: S.projectList }, async (req) => {
    found(rm.projects.get(req.params.project), `project ${req.params.project}`);
    requireProject(req.caller, req.params.project);
    return [...rm.networksByAccess.get(req.params.project)];
  });

  app.get<{ Params: P }>('/project/:project/headnodes', { schema: S.projectList }, async (req) => {
    found(rm.projects.get(req.params.project), `project ${req.params.project}`);
    requireProject(req.caller, req.params.project);
    return [...rm.headnodesByProject.get(req.params.project)];
  });
}
