// hilt's operator dashboard: one plain ES module, no framework, no build step. It reads the
// service's JSON under ./api/ (src/routes/ui.ts), follows the event stream (./api/events, no
// polling loop) and refetches the summary and the table on screen when a change of a kind it
// shows is committed. Tables are filtered,
// sorted and paged by the service, so 10,000 nodes cost one page of rows here. Every value
// from the service is put into the page as text (textContent), never as HTML.
//
// The state of a view is in its URL (issue 26): the hash is `#/<view>[/<object>]?<table>.<key>=…`
// (filters `<table>.f.<column>`, `sort`, `dir`, `q`, `offset`), so a view can be shared and
// the back button returns to the previous filter. Actions on the rows, forms and charts are in
// more.js and charts.js.
import { nodeActionsCell, nodeDetailActions, nicActionsMore, registerForms, crumbs, followOperation, stateCell, isMember } from './more.js';
import { inventoryCharts, operationsCharts, healthCharts } from './charts.js';

const PAGE = 50;
/** Changes that come together are shown together: one refetch per this many ms at most. */
const SETTLE_MS = 150;

export const $ = (id) => document.getElementById(id);
export const state = {
  me: null,
  summary: null,
  /** per table: offset, sort, dir, q, filters */
  tables: {},
  /** the view on screen: { name, arg, render(), kinds } */
  view: null,
  /** the event stream (EventSource) while logged in */
  events: null,
  /** a refetch planned: { timer, view } (view: the table on screen must be refetched too) */
  pending: null,
  /** the hash's query: every table's state (see the header) */
  params: new URLSearchParams(),
  /** the hash last rendered */
  routed: null,
};

// ---------------------------------------------------------------- calls

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.msg ? body.msg : `HTTP ${status}`);
    this.status = status;
    this.type = body && body.type;
  }
}

export async function api(path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' };
  if (method !== 'GET') {
    headers['content-type'] = 'application/json';
    if (state.me) headers['x-csrf-token'] = state.me.csrf;
  }
  const r = await fetch(`api/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!r.ok) {
    const err = new ApiError(r.status, data);
    // A 401 is also the API's answer to a missing right (an action): the page says the session
    // ended only when the service says so, never while it is live (anyone could reload it).
    if (r.status === 401 && path !== 'login' && state.me && (path === 'me' || !(await sessionLive()))) loggedOut('Your session has ended: log in again.');
    throw err;
  }
  return data;
}

/** Does the service still serve this page's session? (a failure to ask: assume it does) */
async function sessionLive() {
  try {
    return (await fetch('api/me', { headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' })).status !== 401;
  } catch {
    return true;
  }
}

export const query = (params) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
};

// ---------------------------------------------------------------- small DOM helpers

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'class') el.className = v;
    else if (k in el && k !== 'list' && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const say = (text) => { $('status').textContent = text; };
export const link = (href, text) => h('a', { href }, text);
export const time = (iso) => (iso ? h('time', { datetime: iso, title: iso }, new Date(iso).toLocaleString()) : '');

export function badge(value) {
  const v = String(value);
  const kind = { DONE: 'ok', running: 'ok', free: 'ok', ERROR: 'bad', died: 'bad', PENDING: 'warn', starting: 'warn', stopping: 'warn', deleting: 'warn',
    on: 'ok', reachable: 'ok', ok: 'ok', off: 'plain', unreachable: 'bad', failing: 'bad' }[v] || 'plain';
  return h('span', { class: `badge ${kind}` }, v);
}

export function confirmDialog(text, ok = 'Confirm') {
  const d = $('confirm');
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = ok;
  d.returnValue = '';
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.showModal();
    $('confirm-cancel').focus();
  });
}

export function showResult(title, value) {
  $('result-title').textContent = title;
  $('result-text').textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  $('result').showModal();
}

// ---------------------------------------------------------------- tables

/**
 * A table of one of the service's tables: caption, filter box, optional select filters, sortable
 * headers, one page of rows, a pager. `columns`: [{ key, label, render?(row), sort? }].
 */
function tableState(name, defaults = {}) {
  if (!state.tables[name]) {
    const p = state.params;
    const filters = { ...(defaults.filters || {}) };
    for (const [k, v] of p) if (k.startsWith(`${name}.f.`) && !(defaults.fixed || []).includes(k.slice(name.length + 3))) filters[k.slice(name.length + 3)] = v;
    state.tables[name] = {
      offset: Number(p.get(`${name}.offset`)) || 0, sort: p.get(`${name}.sort`) || defaults.sort, dir: p.get(`${name}.dir`) === 'desc' ? 'desc' : (defaults.dir || 'asc'),
      q: p.get(`${name}.q`) || '', filters, defaults: { sort: defaults.sort, dir: defaults.dir || 'asc' }, fixed: defaults.fixed || [],
    };
  }
  return state.tables[name];
}

/** Writes every table's state into the URL: a new history entry when it changed (the back button undoes it). */
export function remember() {
  const [path] = (location.hash || '#/inventory').split('?');
  const q = new URLSearchParams();
  for (const [name, ts] of Object.entries(state.tables)) {
    if (ts.cursors) continue;
    if (ts.offset) q.set(`${name}.offset`, String(ts.offset));
    if (ts.sort && ts.sort !== ts.defaults.sort) q.set(`${name}.sort`, ts.sort);
    if (ts.dir !== ts.defaults.dir) q.set(`${name}.dir`, ts.dir);
    if (ts.q) q.set(`${name}.q`, ts.q);
    for (const [k, v] of Object.entries(ts.filters)) if (v && !ts.fixed.includes(k)) q.set(`${name}.f.${k}`, v);
  }
  for (const [k, v] of Object.entries(state.extra || {})) if (v) q.set(k, v);
  const hash = `${path}${q.toString() ? `?${q}` : ''}`;
  if (hash === location.hash) return;
  state.params = q;
  state.routed = hash;
  history.pushState(null, '', hash);
}

/** `name`: this table's state and ids; `table`: the service's table it shows (default: name). */
export function dataTable({ name, table: source = name, caption, columns, selects = [], actions, defaults }) {
  const ts = tableState(name, defaults);
  const wrap = h('div', { class: 'table-wrap', 'data-table': name });
  const body = h('tbody');
  const info = h('span', { class: 'muted', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', on: { click: () => { ts.offset = Math.max(0, ts.offset - PAGE); load(); } } }, 'Previous');
  const next = h('button', { type: 'button', on: { click: () => { ts.offset += PAGE; load(); } } }, 'Next');
  const search = h('input', { type: 'search', id: `${name}-q`, value: ts.q, placeholder: 'words in any column' });
  let timer;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { ts.q = search.value; ts.offset = 0; load(); }, 250);
  });
  // Filters no select shows (a switch's ports, a link's filter): a chip each, which removes it.
  const chips = h('span', { class: 'chips' });
  const controls = h('div', { class: 'controls' },
    h('label', { for: `${name}-q` }, 'Filter'), search,
    selects.map((s) => {
      const sel = h('select', { id: `${name}-${s.key}`, on: { change: () => { ts.filters[s.key] = sel.value; ts.offset = 0; load(); } } },
        h('option', { value: '' }, s.any || 'all'), s.options.map((o) => h('option', { value: o, selected: ts.filters[s.key] === o }, o)));
      return [h('label', { for: sel.id }, s.label), sel];
    }), chips);
  const headRow = h('tr', {}, columns.map((c) => {
    const th = h('th', { scope: 'col' });
    if (c.sort === false) th.append(c.label);
    else {
      th.append(h('button', { type: 'button', class: 'sort', on: { click: () => {
        if (ts.sort === c.key) ts.dir = ts.dir === 'asc' ? 'desc' : 'asc';
        else { ts.sort = c.key; ts.dir = 'asc'; }
        ts.offset = 0;
        load();
      } } }, c.label));
    }
    return th;
  }), actions ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')) : null);
  const table = h('table', {}, h('caption', {}, caption), h('thead', {}, headRow), body);
  wrap.append(controls, h('div', { class: 'scroll' }, table), h('div', { class: 'pager' }, prev, info, next));

  async function load() {
    remember();
    chips.replaceChildren(...Object.entries(ts.filters).filter(([k, v]) => v && !ts.fixed.includes(k) && !selects.some((s) => s.key === k)).map(([k, v]) => {
      const label = (columns.find((c) => c.key === k) || { label: k }).label;
      return h('button', { type: 'button', class: 'chip', 'aria-label': `Remove the filter ${label}: ${v}`, on: { click: () => { delete ts.filters[k]; ts.offset = 0; load(); } } }, `${label}: ${v} ✕`);
    }));
    const params = { offset: ts.offset, limit: PAGE, sort: ts.sort, dir: ts.dir, q: ts.q };
    for (const [k, v] of Object.entries(ts.filters)) params[`f.${k}`] = v;
    let page;
    try {
      page = await api(`table/${source}${query(params)}`);
    } catch (err) {
      say(`Could not read ${caption}: ${err.message}`);
      body.replaceChildren(h('tr', {}, h('td', { colspan: columns.length + (actions ? 1 : 0), class: 'error', role: 'alert' }, `Could not read ${caption}: ${err.message}`)));
      return;
    }
    if (page.offset >= page.total && page.total > 0 && ts.offset > 0) { ts.offset = Math.max(0, page.total - PAGE); return load(); }
    for (const [i, th] of [...headRow.children].entries()) {
      const c = columns[i];
      if (!c) continue;
      th.setAttribute('aria-sort', ts.sort === c.key ? (ts.dir === 'asc' ? 'ascending' : 'descending') : 'none');
    }
    body.replaceChildren(...page.rows.map((row) => h('tr', { 'data-key': columns[0].key ? String(row[columns[0].key]) : '' },
      columns.map((c) => h('td', { 'data-col': c.key, 'data-label': c.label }, c.render ? c.render(row) : fmt(row[c.key]))),
      actions ? h('td', { class: 'actions', 'data-label': 'Actions' }, actions(row)) : null)));
    if (!page.rows.length) body.append(h('tr', {}, h('td', { colspan: columns.length + (actions ? 1 : 0), class: 'muted' }, 'Nothing to show.')));
    info.textContent = page.total ? `${page.offset + 1}–${page.offset + page.rows.length} of ${page.total}` : '0 rows';
    prev.disabled = page.offset === 0;
    next.disabled = page.offset + page.rows.length >= page.total;
  }
  return { el: wrap, load };
}

export const fmt = (v) => (v === null || v === undefined ? '' : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v));

// ---------------------------------------------------------------- views

export const nodeLink = (row) => link(`#/node/${encodeURIComponent(row.name ?? row.node)}`, row.name ?? row.node);
export const projectLink = (p) => (p ? link(`#/project/${encodeURIComponent(p)}`, p) : '');

/** Cards of figures; a card with `href` opens it, one with `bad` is red while non-zero. */
function cards(items) {
  return h('dl', { class: 'cards' }, items.map(([label, value, o = {}]) => h('div', { class: `card${o.bad && value ? ' bad' : ''}` },
    h('dt', {}, label), h('dd', {}, o.href ? link(o.href, fmt(value)) : fmt(value)))));
}

const VIEWS = {
  inventory: {
    title: 'Inventory',
    kinds: ['node', 'nic', 'project'],
    render(el) {
      const s = state.summary;
      const projects = s ? s.inventory.perProject.map((p) => p.project) : [];
      const top = h('div', { id: 'inventory-cards' });
      const t = dataTable({
        name: 'nodes', caption: 'Nodes',
        defaults: { sort: 'name' },
        selects: [{ key: 'state', label: 'State', options: ['free', 'in use'] }, { key: 'project', label: 'Project', options: projects }],
        columns: [
          { key: 'name', label: 'Node', render: nodeLink },
          { key: 'state', label: 'State', render: (r) => badge(r.state) },
          { key: 'project', label: 'Project', render: (r) => projectLink(r.project) },
          { key: 'nics', label: 'Nics' },
          { key: 'networks', label: 'Networks' },
          { key: 'pending', label: 'Pending operations' },
          { key: 'power', label: 'Power', render: (r) => stateCell(badge(r.power), r.power_at, r.power_error) },
          { key: 'last_status', label: 'Last operation', render: (r) => (r.last_status ? stateCell(h('span', {}, badge(r.last_status), ' ', r.last_op), r.last_at, r.last_error) : '') },
          ...(state.me.isAdmin ? [{ key: 'obm', label: 'BMC driver' }] : []),
          { key: 'metadata', label: 'Metadata' },
          { key: 'lease', label: 'Lease left', render: (r) => leaseLeft(r.lease) },
        ],
        actions: (r) => nodeActionsCell(r),
      });
      const refreshCards = () => {
        const x = state.summary;
        if (!x) return;
        top.replaceChildren(
          cards([['Nodes', x.inventory.nodes], ['Free', x.inventory.free, { href: '#/inventory?nodes.f.state=free' }], ['In use', x.inventory.inUse], ['Projects', x.inventory.projects],
            ['Operations in flight', x.operations.pending, { href: '#/operations?operations.f.status=PENDING' }],
            ['Failures (24 h)', x.operations.failuresLastDay, { bad: true, href: '#/operations?operations.f.status=ERROR' }]]),
          x.inventory.perProject.length ? h('table', { class: 'compact' }, h('caption', {}, 'Nodes per project'),
            h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Project'), h('th', { scope: 'col' }, 'Nodes'))),
            h('tbody', {}, x.inventory.perProject.map((p) => h('tr', {}, h('td', {}, projectLink(p.project)), h('td', {}, String(p.nodes)))))) : '');
      };
      const charts = h('div', { id: 'inventory-charts', class: 'charts' });
      el.append(top, charts, registerForms('inventory'), t.el);
      refreshCards();
      return () => { refreshCards(); inventoryCharts(charts); return t.load(); };
    },
  },
  projects: {
    title: 'Projects',
    kinds: ['project', 'node', 'network', 'user', 'headnode'],
    render(el) {
      const t = dataTable({
        name: 'projects', caption: 'Projects', defaults: { sort: 'name' },
        columns: [
          { key: 'name', label: 'Project', render: (r) => projectLink(r.name) },
          { key: 'nodes', label: 'Nodes' },
          { key: 'networks', label: 'Networks' },
          { key: 'members', label: 'Members' },
          { key: 'headnodes', label: 'Headnodes' },
          { key: 'pending', label: 'Operations in flight' },
          { key: 'failures', label: 'Nodes whose last operation failed', render: (r) => (r.failures ? badge(String(r.failures)) : '0') },
        ],
      });
      el.append(t.el);
      return t.load;
    },
  },
  project: {
    title: 'Project',
    kinds: ['project', 'node', 'nic', 'network', 'headnode', 'user'],
    render(el, name) {
      el.querySelector('h1').textContent = `Project ${name}`;
      el.querySelector('h1').before(crumbs([['Projects', '#/projects'], [`Project ${name}`]]));
      const f = { filters: { project: name }, fixed: ['project'] };
      const nodes = dataTable({ name: 'project-nodes', table: 'nodes', caption: `Nodes of ${name}`, defaults: { sort: 'name', ...f }, columns: [
        { key: 'name', label: 'Node', render: nodeLink }, { key: 'nics', label: 'Nics' }, { key: 'networks', label: 'Networks' }, { key: 'pending', label: 'Pending operations' },
        { key: 'power', label: 'Power', render: (r) => stateCell(badge(r.power), r.power_at, r.power_error) },
        { key: 'last_status', label: 'Last operation', render: (r) => (r.last_status ? stateCell(h('span', {}, badge(r.last_status), ' ', r.last_op), r.last_at, r.last_error) : '') },
      ], actions: (r) => nodeActionsCell(r) });
      const members = dataTable({ name: 'project-members', table: 'members', caption: `Members of ${name}`, defaults: { sort: 'user', ...f }, columns: [
        { key: 'user', label: 'User' }, { key: 'admin', label: 'Admin' },
      ] });
      const heads = dataTable({ name: 'project-headnodes', table: 'headnodes', caption: `Headnodes of ${name}`, defaults: { sort: 'name', ...f }, columns: [
        { key: 'name', label: 'Headnode' }, { key: 'status', label: 'Status', render: (r) => badge(r.status) }, { key: 'vncport', label: 'VNC port' }, { key: 'hnics', label: 'Hnics' },
      ] });
      const nets = dataTable({ name: 'project-networks', table: 'networks', caption: `Networks ${name} may use`, defaults: { sort: 'name', ...f }, columns: [
        { key: 'name', label: 'Network' }, { key: 'owner', label: 'Owner' }, { key: 'access', label: 'Access' }, { key: 'vlan', label: 'VLAN' }, { key: 'attached', label: 'Attached nics' },
      ] });
      el.append(members.el, nodes.el, nets.el, heads.el);
      return () => Promise.all([members.load(), nodes.load(), nets.load(), heads.load()]);
    },
  },
  networks: {
    title: 'Networks',
    kinds: ['network', 'nic', 'headnode'],
    render(el) {
      const t = dataTable({
        name: 'networks', caption: 'Networks', defaults: { sort: 'name' },
        selects: [{ key: 'access', label: 'Access', options: ['public'] }],
        columns: [
          { key: 'name', label: 'Network' },
          { key: 'owner', label: 'Owner' },
          { key: 'access', label: 'Access' },
          { key: 'vlan', label: 'VLAN id' },
          { key: 'allocation', label: 'VLAN from' },
          { key: 'attachments', label: 'Attachments' },
          { key: 'attached', label: 'Attached nics' },
        ],
      });
      el.append(t.el);
      return t.load;
    },
  },
  switches: {
    title: 'Switches',
    admin: true,
    kinds: ['switch', 'port', 'nic'],
    render(el) {
      const sw = dataTable({
        name: 'switches', caption: 'Switches', defaults: { sort: 'name' },
        columns: [
          // Narrows the ports to it: a chip above the ports says so and removes it; the URL keeps it.
          { key: 'name', label: 'Switch', render: (r) => h('button', { type: 'button', class: 'linkish', 'aria-label': `Show the ports of ${r.name}`, on: { click: () => { state.tables.ports.filters.switch = r.name; state.tables.ports.offset = 0; ports.load(); $('ports-q').focus(); } } }, r.name) },
          { key: 'type', label: 'Driver' },
          { key: 'family', label: 'Family' },
          { key: 'ports', label: 'Ports' },
          { key: 'wired', label: 'Wired' },
          { key: 'pending', label: 'Pending operations' },
          { key: 'queued', label: 'Queued calls' },
          { key: 'health', label: 'Health', render: (r) => stateCell(badge(r.health), null, r.last_error) },
          { key: 'audit', label: 'Last drift audit', render: (r) => (r.audit ? stateCell(h('span', {}, r.audit), r.audit_at, null) : 'never') },
          { key: 'failing', label: 'Failing ports', render: (r) => (r.failing ? h('a', { href: `#/switches?ports.f.switch=${encodeURIComponent(r.name)}&ports.f.status=failing`, class: 'badge bad' }, String(r.failing)) : '0') },
          { key: 'tls', label: 'TLS' },
        ],
        actions: state.me.features.drift ? (r) => h('span', {},
          h('button', { type: 'button', on: { click: () => drift(r.name) } }, 'Drift audit'), ' ',
          state.me.readOnly ? '' : h('button', { type: 'button', on: { click: () => action({ action: 'repair', switch: r.name }, `Set every drifted port of switch ${r.name} back to the configuration the service holds?`, 'Repair') } }, 'Repair'), ' ',
          h('button', { type: 'button', on: { click: () => wiring(r.name) } }, 'Wiring check')) : undefined,
      });
      const ports = dataTable({
        name: 'ports', caption: 'Ports and wiring', defaults: { sort: 'port' },
        selects: [{ key: 'status', label: 'Status', options: ['failing', 'ok', 'free'] }],
        actions: (r) => portActions(r),
        columns: [
          { key: 'switch', label: 'Switch' },
          { key: 'port', label: 'Port' },
          { key: 'status', label: 'Status', render: (r) => stateCell(badge(r.status), null, r.problem) },
          { key: 'node', label: 'Node', render: (r) => (r.node ? nodeLink({ name: r.node }) : '') },
          { key: 'nic', label: 'Nic' },
          { key: 'native', label: 'Native VLAN' },
          { key: 'tagged', label: 'Tagged VLANs' },
        ],
      });
      el.append(registerForms('switches'), sw.el, ports.el);
      return () => Promise.all([sw.load(), ports.load()]);
    },
  },
  operations: {
    title: 'Operations',
    kinds: ['nic'],
    render(el) {
      const t = dataTable({
        name: 'operations', caption: 'Network operations: in flight, then the latest outcomes',
        selects: [{ key: 'status', label: 'Status', options: ['PENDING', 'DONE', 'ERROR'] }],
        columns: [
          { key: 'status', label: 'Status', render: (r) => badge(r.status) },
          { key: 'node', label: 'Node', render: nodeLink },
          { key: 'nic', label: 'Nic' },
          { key: 'seq', label: '#' },
          { key: 'type', label: 'Operation' },
          { key: 'network', label: 'Network' },
          // Wiring is for operators only: a member's rows have no switch or port.
          ...(state.me.isAdmin ? [{ key: 'switch', label: 'Switch' }, { key: 'port', label: 'Port' }] : []),
          { key: 'accepted', label: 'Accepted', render: (r) => time(r.accepted) },
          { key: 'finished', label: 'Finished', render: (r) => time(r.finished) },
          { key: 'error', label: 'Reason', render: (r) => (r.error ? h('span', { class: 'error' }, r.error) : '') },
        ],
      });
      const charts = h('div', { id: 'operations-charts', class: 'charts' });
      el.append(charts, t.el);
      return () => { if (state.me.isAdmin) operationsCharts(charts); return t.load(); };
    },
  },
  headnodes: {
    title: 'Headnodes',
    kinds: ['headnode'],
    render(el) {
      const t = dataTable({
        name: 'headnodes', caption: 'Headnodes', defaults: { sort: 'name' },
        selects: [{ key: 'status', label: 'Status', options: ['created', 'starting', 'running', 'stopping', 'stopped', 'died', 'deleting'] }],
        columns: [
          { key: 'name', label: 'Headnode' },
          { key: 'project', label: 'Project', render: (r) => projectLink(r.project) },
          { key: 'status', label: 'Status', render: (r) => badge(r.status) },
          { key: 'vncport', label: 'VNC port' },
          { key: 'image', label: 'Base image' },
          { key: 'hnics', label: 'Hnics and networks' },
          { key: 'error', label: 'Last error', render: (r) => (r.error ? h('span', { class: 'error' }, r.error) : '') },
        ],
      });
      el.append(t.el);
      return t.load;
    },
  },
  lifecycle: {
    title: 'Lifecycle',
    admin: true,
    kinds: ['node', 'project'],
    render(el) {
      const flagged = dataTable({
        name: 'attention', caption: 'Nodes that need attention', defaults: { sort: 'since' },
        columns: [
          { key: 'node', label: 'Node', render: (r) => (r.node === null ? `port ${r.port} of ${r.switch}` : nodeLink(r)) },
          { key: 'problem', label: 'Problem', render: (r) => badge(r.problem) },
          { key: 'since', label: 'Since' },
          { key: 'detail', label: 'Detail', render: (r) => h('span', { class: 'error' }, r.detail) },
        ],
        actions: (r) => attentionActions(r),
      });
      const pool = dataTable({
        name: 'maintenance', caption: 'Maintenance pool', defaults: { sort: 'since' },
        columns: [
          { key: 'node', label: 'Node', render: nodeLink },
          { key: 'from', label: 'Released from', render: (r) => projectLink(r.from) },
          { key: 'since', label: 'Since' },
          { key: 'notice', label: 'Notice', render: (r) => badge(r.notice) },
          { key: 'attempts', label: 'Failed POSTs' },
          { key: 'error', label: 'Last error', render: (r) => (r.error ? h('span', { class: 'error' }, r.error) : '') },
        ],
      });
      el.append(flagged.el, pool.el);
      return () => Promise.all([flagged.load(), pool.load()]);
    },
  },
  health: {
    title: 'Health',
    admin: true,
    kinds: null,
    render(el) {
      const box = h('div', { id: 'health' });
      const charts = h('div', { id: 'health-charts', class: 'charts' });
      el.append(charts, box);
      return () => {
        healthCharts(charts);
        const x = state.summary && state.summary.health;
        if (!x) return;
        const r = x.requests;
        box.replaceChildren(
          cards([['Version', x.version], ['Up', duration(x.uptimeSeconds)], ['Requests/s (10 s)', r.perSecond10s.toFixed(1)], ['Requests/s (1 min)', r.perSecond60s.toFixed(1)],
            ['5xx/s (1 min)', r.errorsPerSecond60s.toFixed(2)], ['Switch calls queued', x.deviceQueues.switch], ['BMC calls queued', x.deviceQueues.obm],
            ['VM operations queued', x.deviceQueues.headnode], ['Memory', `${Math.round(x.memoryBytes / 2 ** 20)} MiB`]]),
          simpleTable('Live actors and mailboxes', ['Kind', 'Live actors', 'Messages waiting', 'Fullest mailbox'], x.actors.map((a) => [a.kind, a.live, a.messages, a.busiest])),
          simpleTable('Pending network operations per switch', ['Switch', 'Pending'], x.pendingOperations.map((p) => [p.switch, p.pending])),
          h('p', { class: 'muted' }, 'Prometheus reads the same and more at /metrics.'));
      };
    },
  },
  audit: {
    title: 'Audit log',
    admin: true,
    kinds: null,
    render(el) {
      const f = state.tables.audit || (state.tables.audit = { kind: '', name: '', user: '', since: '', until: '', cursors: [] });
      for (const k of ['kind', 'name', 'user', 'since', 'until']) f[k] = state.params.get(`audit.${k}`) || f[k];
      const keep = () => { state.extra = Object.fromEntries(['kind', 'name', 'user', 'since', 'until'].map((k) => [`audit.${k}`, f[k]])); remember(); };
      const input = (key, label, attrs = {}) => {
        const i = h('input', { id: `audit-${key}`, value: f[key], ...attrs });
        i.addEventListener('change', () => { f[key] = i.value.trim(); f.cursors = []; load(); });
        return [h('label', { for: i.id }, label), i];
      };
      const kind = h('select', { id: 'audit-kind', on: { change: () => { f.kind = kind.value; f.cursors = []; load(); } } },
        h('option', { value: '' }, 'all'), ['project', 'node', 'nic', 'port', 'switch', 'network', 'user', 'headnode'].map((k) => h('option', { value: k, selected: f.kind === k }, k)));
      const body = h('tbody');
      const info = h('span', { class: 'muted', 'aria-live': 'polite' });
      const newer = h('button', { type: 'button', on: { click: () => { f.cursors.pop(); load(); } } }, 'Newer');
      const older = h('button', { type: 'button' }, 'Older');
      let next = null;
      older.addEventListener('click', () => { if (next) { f.cursors.push(next); load(); } });
      el.append(h('div', { class: 'table-wrap' },
        h('div', { class: 'controls' }, h('label', { for: 'audit-kind' }, 'Kind'), kind, input('name', 'Name'), input('user', 'User'),
          input('since', 'Since', { placeholder: '2026-01-31T00:00:00Z' }), input('until', 'Until', { placeholder: 'ISO 8601' })),
        h('div', { class: 'scroll' }, h('table', {}, h('caption', {}, 'Every change, newest first'),
          h('thead', {}, h('tr', {}, ['When', 'Who', 'Kind', 'Name', 'Call', 'Event', 'What changed'].map((c) => h('th', { scope: 'col' }, c)))), body)),
        h('div', { class: 'pager' }, newer, info, older)));
      async function load() {
        const cursor = f.cursors[f.cursors.length - 1];
        let p;
        keep();
        try {
          p = await api(`audit${query({ kind: f.kind, name: f.name, user: f.user, since: f.since, until: f.until, cursor, limit: PAGE })}`);
        } catch (err) {
          // Not the rows of an earlier filter: the refusal, where the rows were.
          say(`Could not read the audit log: ${err.message}`);
          body.replaceChildren(h('tr', {}, h('td', { colspan: 7, class: 'error', role: 'alert' }, `Could not read the audit log: ${err.message}`)));
          info.textContent = '';
          newer.disabled = true;
          older.disabled = true;
          return;
        }
        next = p.next;
        body.replaceChildren(...p.entries.map((e) => {
          const { type, ...rest } = e.event;
          // A nic's and a port's id is two escaped names: shown as the two names.
          const name = e.kind === 'nic' || e.kind === 'port' ? e.name.split('/').map(decodeURIComponent).join(' ') : e.name;
          return h('tr', {}, h('td', {}, time(e.at)), h('td', {}, fmt(e.by)), h('td', {}, e.kind), h('td', {}, name), h('td', {}, fmt(e.call)), h('td', {}, type),
            h('td', { class: 'details' }, Object.keys(rest).length ? JSON.stringify(rest) : ''));
        }));
        if (!p.entries.length) body.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'Nothing to show.')));
        info.textContent = `page ${f.cursors.length + 1}`;
        newer.disabled = !f.cursors.length;
        older.disabled = !next;
      }
      // Live on the first page only: an older page stays as it was read.
      return () => (f.cursors.length ? undefined : load());
    },
  },
  tokens: {
    title: 'Tokens',
    kinds: ['user'],
    render(el) {
      const box = h('div', { id: 'tokens' });
      const desc = h('input', { id: 'token-description', maxlength: 200 });
      const days = h('input', { id: 'token-days', type: 'number', min: 1, value: 1 });
      const project = h('input', { id: 'token-project', placeholder: 'any' });
      const readOnly = h('input', { id: 'token-read-only', type: 'checkbox' });
      const form = h('form', { class: 'controls', id: 'token-form' },
        h('label', { for: desc.id }, 'Description'), desc, h('label', { for: days.id }, 'Days'), days,
        h('label', { for: project.id }, 'Project'), project, h('label', { for: readOnly.id }, 'Read-only'), readOnly,
        h('button', { type: 'submit' }, 'Create token'));
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        try {
          const r = await api('action', { method: 'POST', body: { action: 'token_create', description: desc.value, expires_in: Math.round(Number(days.value) * 86400), read_only: readOnly.checked, project: project.value.trim() } });
          desc.value = '';
          showResult('Your new token: copy it now, it is not shown again', r.token);
          load();
        } catch (err) {
          say(`Could not create the token: ${err.message}`);
        }
      });
      el.append(h('p', { class: 'muted' }, 'Tokens for scripts and CI jobs: send one as Authorization: Bearer, or set HILT_TOKEN for the hilt command.'), form, box);
      async function load() {
        let list;
        try {
          list = await api('tokens');
        } catch (err) {
          box.replaceChildren(h('p', { class: 'muted' }, `No tokens to show: ${err.message}`));
          return;
        }
        box.replaceChildren(simpleTable('Your tokens (never their secrets)', ['Id', 'Description', 'Project', 'Read-only', 'Created', 'Expires', 'Last used', ''],
          list.map((t) => [t.id, t.description, t.project || '', t.read_only ? 'yes' : 'no', time(t.created_at), t.expired ? 'expired' : time(t.expires_at), time(t.last_used_at),
            h('button', { type: 'button', class: 'danger', on: { click: () => action({ action: 'token_revoke', id: t.id }, `Revoke token ${t.id} (${t.description || 'no description'})? Whatever uses it stops working at once.`, 'Revoke').then(load) } }, 'Revoke')])));
      }
      return load;
    },
  },
  node: {
    title: 'Node',
    kinds: ['node', 'nic', 'port'],
    render(el, name) {
      el.querySelector('h1').textContent = `Node ${name}`;
      const trail = h('div');
      el.querySelector('h1').before(trail);
      const box = h('div', { id: 'node-detail' });
      el.append(box);
      return async () => {
        let n;
        try {
          n = await api(`node?name=${encodeURIComponent(name)}`); // not a path segment: a browser drops a `.` or `..` one
        } catch (err) {
          box.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message));
          return;
        }
        const admin = state.me.isAdmin;
        const mine = admin || isMember(n.project);
        trail.replaceChildren(crumbs(n.project ? [['Projects', '#/projects'], [`Project ${n.project}`, `#/project/${encodeURIComponent(n.project)}`], [`Node ${name}`]] : [['Inventory', '#/inventory'], [`Node ${name}`]]));
        followOperation(n.operations);
        box.replaceChildren(
          cards([['Project', n.project || 'free'], ['Power', n.power], ...(admin ? [['BMC driver', n.obm]] : []), ['Metadata', Object.entries(n.metadata).map(([k, v]) => `${k}=${v}`).join(', ') || '—']]),
          n.power_error ? h('p', { class: 'error', role: 'alert' }, `The last power call failed: ${n.power_error}`) : '',
          nodeDetailActions(n),
          // The live serial console: a page of its own (console.html), with a terminal emulator.
          h('p', {}, h('a', { href: `console.html#${encodeURIComponent(n.name)}`, id: 'node-console' }, 'Serial console')),
          simpleTable('Nics', ['Nic', 'MAC', ...(admin ? ['Switch', 'Port'] : []), 'Networks', 'Pending', 'Last operation', ...(mine ? ['Actions'] : [])], n.nics.map((x) => [
            x.name, x.macaddr, ...(admin ? [x.switch, x.port] : []),
            x.networks.map((w) => `${w.network} (${w.channel})`).join(', '),
            x.pending ? `${x.pending.type} ${x.pending.network || ''} (#${x.pending.seq})` : '',
            x.last ? stateCell(h('span', {}, badge(x.last.status), ' ', `${x.last.type} ${x.last.network || ''}`), x.last.finished, x.last.error) : '',
            ...(mine ? [h('span', { class: 'buttons' }, nicActionsMore(n, x), admin && !state.me.readOnly ? nicActions(n.name, x) : '')] : []),
          ])),
          simpleTable('Network operations, newest first', ['Status', '#', 'Nic', 'Operation', 'Network', 'Accepted', 'Finished', 'Reason'], n.operations.map((o) => [
            badge(o.status), o.seq, o.nic, o.type, o.network, time(o.accepted), time(o.finished), o.error ? h('span', { class: 'error' }, o.error) : '',
          ])));
      };
    },
  },
};

/** A port's actions (admins): revert it, re-apply its nic's configuration (a drift repair of one port). */
function portActions(r) {
  if (!state.me.isAdmin || state.me.readOnly || !r.node) return '';
  return h('span', { class: 'buttons' },
    h('button', { type: 'button', on: { click: () => action({ action: 'revert', switch: r.switch, port: r.port },
      `Revert port ${r.port} of switch ${r.switch}: detach it, and nic ${r.nic} of node ${r.node}, from every network?`, 'Revert') } }, 'Revert'),
    h('button', { type: 'button', on: { click: () => action({ action: 'reapply', node: r.node, nic: r.nic },
      `Re-apply the configuration the service holds to port ${r.port} of switch ${r.switch} (nic ${r.nic} of node ${r.node})?`, 'Re-apply') } }, 'Re-apply'));
}

/** A problem's action (admins): a port in doubt on a switch gone for good has its doubt cleared by hand. */
function attentionActions(r) {
  if (r.problem !== 'port_in_doubt' || !state.me.isAdmin || state.me.readOnly) return '';
  return h('button', { type: 'button', class: 'danger', 'data-action': 'clear_doubt', on: { click: () => action(
    { action: 'clear_doubt', switch: r.switch, port: r.port },
    `Clear the doubt of port ${r.port} of switch ${r.switch} by hand? It asserts that the switch no longer carries the VLANs the port may carry: use it only for a switch gone for good. The holds on those VLANs' networks and on the port's node go with it.`, 'Clear doubt') } },
  'Clear doubt');
}

function nicActions(node, nic) {
  const out = [];
  if (nic.switch) {
    out.push(h('button', { type: 'button', 'data-action': 'reapply', on: { click: () => action(
      { action: 'reapply', node, nic: nic.name },
      `Re-apply the configuration the service holds to the switch port of nic ${nic.name} of node ${node} (${nic.switch} ${nic.port})?`, 'Re-apply') } }, 'Re-apply port'));
  }
  for (const w of nic.networks) {
    out.push(h('button', { type: 'button', class: 'danger', 'data-action': 'force_detach', on: { click: () => action(
      { action: 'force_detach', node, nic: nic.name, network: w.network },
      `Forget that nic ${nic.name} of node ${node} is attached to ${w.network}, in the service's state only? The switch is not told: use this for a dead switch.`, 'Force-detach') } },
    `Force-detach ${w.network}`));
  }
  return h('span', { class: 'buttons' }, out);
}

/** An action after its confirmation; a queued network operation is followed to its end (more.js). */
export async function action(body, question, verb) {
  if (!(await confirmDialog(question, verb))) { say('Cancelled.'); return; }
  try {
    const r = await api('action', { method: 'POST', body });
    if (r && r.status_id) state.following = { id: r.status_id, verb };
    say(r && r.status_id ? `${verb}: queued (status ${r.status_id}).` : `${verb}: done.`);
    refresh();
  } catch (err) {
    say(`${verb} failed: ${err.message}`);
  }
}

async function drift(sw) {
  if (!(await confirmDialog(`Run a drift audit of switch ${sw}? It reads every port's VLANs from the switch.`, 'Run'))) return;
  try {
    showResult(`Drift audit of ${sw}`, await api('action', { method: 'POST', body: { action: 'drift', switch: sw } }));
  } catch (err) {
    say(`Drift audit failed: ${err.message}`);
  }
}

/** The wiring check of a switch: its counts, then the ports whose cable is not the nic the inventory says (mismatch, unwired). */
async function wiring(sw) {
  try {
    const r = await api('action', { method: 'POST', body: { action: 'wiring', switch: sw } });
    const bad = r.ports.filter((p) => p.verdict === 'mismatch' || p.verdict === 'unwired');
    const counts = Object.entries(r.summary).map(([k, n]) => `${k} ${n}`).join(', ');
    const lines = bad.map((p) => `${p.port} ${p.verdict}${p.nic ? ` (wired to ${p.nic.node} ${p.nic.nic}, ${p.nic.macaddr})` : ''}\n  ${(p.details || []).join('\n  ')}`);
    showResult(`Wiring of ${sw}: ${counts}`, lines.length ? `Mismatches:\n${lines.join('\n')}` : 'No mismatch: every cable the switch saw is where the inventory says.');
  } catch (err) {
    say(`Wiring check failed: ${err.message}`);
  }
}

export function simpleTable(caption, head, rows) {
  return h('div', { class: 'scroll' }, h('table', { class: 'compact' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', {}, r.map((c, i) => h('td', { 'data-label': head[i] }, c instanceof Node ? c : fmt(c))))) : h('tr', {}, h('td', { colspan: head.length, class: 'muted' }, 'Nothing to show.')))));
}

/** A lease's time left (docs/lifecycle.md): its end as ISO 8601, `passed`, or nothing. */
function leaseLeft(end) {
  if (!end || end === 'passed') return end ? badge('passed') : '';
  const s = Math.floor((Date.parse(end) - Date.now()) / 1000);
  return h('time', { datetime: end, title: end }, s > 0 ? duration(s) : 'passing');
}

function duration(s) {
  const d = Math.floor(s / 86400);
  const hh = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return d ? `${d} d ${hh} h` : hh ? `${hh} h ${m} min` : `${m} min ${s % 60} s`;
}

// ---------------------------------------------------------------- navigation and live updates

function visibleViews() {
  return ['inventory', 'projects', 'networks', 'switches', 'operations', 'headnodes', 'lifecycle', 'health', 'audit', 'tokens'].filter((v) => !VIEWS[v].admin || state.me.isAdmin);
}

function renderNav() {
  const current = state.view && state.view.name;
  $('nav').replaceChildren(h('ul', {}, visibleViews().map((v) => h('li', {}, h('a', { href: `#/${v}`, 'aria-current': v === current ? 'page' : undefined }, VIEWS[v].title)))));
}

/** Renders the view the URL names (`force`: again, when it is the one on screen). */
function route(force) {
  if (!state.me) return;
  if (force !== true && location.hash === state.routed && state.view) return;
  state.routed = location.hash;
  const [path, qs = ''] = (location.hash || '#/inventory').split('?');
  // Each view starts from its URL: filters of another view do not follow (nor of this one, left).
  state.params = new URLSearchParams(qs);
  state.tables = {};
  state.extra = {};
  const [, name = 'inventory', ...rest] = path.split('/');
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : undefined;
  const v = VIEWS[name] && (!VIEWS[name].admin || state.me.isAdmin) ? name : 'inventory';
  const el = $('view');
  const changed = !state.view || state.view.name !== v || state.view.arg !== arg;
  el.replaceChildren(h('h1', { id: 'view-title', tabindex: '-1' }, VIEWS[v].title));
  el.hidden = false;
  const load = VIEWS[v].render(el, arg);
  state.view = { name: v, arg, load, kinds: VIEWS[v].kinds };
  document.title = `${el.querySelector('h1').textContent} · hilt`;
  renderNav();
  // Focus on the new content (its heading), so that a screen reader and the keyboard start there.
  if (changed && force !== 'keep-focus') el.querySelector('h1').focus();
  Promise.resolve(load && load()).catch(() => undefined);
}

export function refresh() {
  if (state.view && state.view.load) Promise.resolve(state.view.load()).catch(() => undefined);
}

/** Refetch the summary, and the view on screen when `view`; changes that come together make one refetch. */
function settle(view) {
  if (state.pending) {
    state.pending.view = state.pending.view || view;
    return;
  }
  state.pending = { view, timer: setTimeout(async () => {
    const p = state.pending;
    state.pending = null;
    try {
      state.summary = await api('summary');
      if (p.view) refresh();
    } catch { /* the stream says when the service cannot be reached */ }
  }, SETTLE_MS) };
}

/** Follow the event stream; `fresh`: the page was just read, so its first opening needs no refetch. */
function connectEvents(fresh = false) {
  closeEvents();
  const after = state.summary && state.summary.after;
  const es = new EventSource(after ? `api/events?after=${encodeURIComponent(after)}` : 'api/events');
  state.events = es;
  let first = fresh;
  es.onopen = () => {
    $('live').textContent = `Live since ${new Date().toLocaleTimeString()}`;
    // What changed while the stream was down (EventSource reopens it by itself): fetch again once.
    if (!first) settle(true);
    first = false;
  };
  es.onmessage = (m) => {
    let e;
    try { e = JSON.parse(m.data); } catch { return; }
    const kinds = state.view && state.view.kinds;
    settle(kinds === null || !kinds || kinds.includes(e.kind));
    $('live').textContent = `Live: updated ${new Date().toLocaleTimeString()}`;
  };
  es.onerror = () => {
    if (state.events !== es) return;
    $('live').textContent = 'Reconnecting to live updates…';
    // A stream the browser gave up on (an answer that was not a stream: the session ended?).
    if (es.readyState === EventSource.CLOSED) {
      setTimeout(() => {
        if (state.events === es && state.me) api('me').then(() => connectEvents(), () => loggedOut('Your session has ended.'));
      }, 2000);
    }
  };
}

function closeEvents() {
  if (state.events) state.events.close();
  state.events = null;
}

async function loggedIn(me) {
  state.me = me;
  $('login').hidden = true;
  $('nav').hidden = false;
  $('who').hidden = false;
  $('user').textContent = `${me.user}${me.isAdmin ? ' (admin)' : ''}`;
  // The summary first: the page on screen shows its cards from it.
  try { state.summary = await api('summary'); } catch { /* the page says what it cannot read */ }
  if (state.me !== me) return;
  $('login-note').textContent = '';
  state.view = null;
  route(true);
  connectEvents(true);
}

function loggedOut(message) {
  state.me = null;
  closeEvents();
  state.tables = {};
  $('view').hidden = true;
  $('view').replaceChildren();
  $('nav').hidden = true;
  $('who').hidden = true;
  $('login').hidden = false;
  state.view = null;
  // A fact, not an error: the note (a live region) says it; errors go to login-error.
  $('login-note').textContent = message || '';
  $('login-error').textContent = '';
  $('login-user').focus();
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const user = $('login-user').value;
  const password = $('login-password').value;
  const token = $('login-token').value.trim();
  $('login-error').textContent = '';
  $('login-note').textContent = '';
  try {
    const me = await api('login', { method: 'POST', body: token && !password ? { token } : { user, password } });
    $('login-password').value = '';
    $('login-token').value = '';
    loggedIn(me);
  } catch (err) {
    $('login-error').textContent = err.status === 401 ? (token && !password ? 'Invalid or expired token.' : 'Wrong user name or password.') : `Could not log in: ${err.message}`;
  }
});

$('logout').addEventListener('click', async () => {
  try {
    await api('logout', { method: 'POST' });
  } catch (err) {
    // Logged out only once the service ended the session (or it had ended): else it stays live.
    if (await sessionLive()) { say(`Could not log out: ${err.message}. Try again.`); return; }
  }
  loggedOut('You are logged out.');
});

window.addEventListener('hashchange', route);
// The back and forward buttons between filters of one view (remember() pushes them).
window.addEventListener('popstate', route);

api('me').then(loggedIn, () => loggedOut(''));
