// The dashboard's actions where the eye is (issue 26): reserve and release, power and boot
// device, connect and detach a network, the registration forms; and the small pieces the views
// share (a state with its age and failure, breadcrumbs). Each action is one API call through
// the dashboard's bridge (POST api/action, src/ui/actions.ts), after a confirmation; each is
// offered only to whom the API allows it (an admin, or a member of the node's project), and the
// API refuses anyone else all the same.

import { $, h, api, say, state, confirmDialog, action, refresh, link } from './app.js';

const BOOT_DEVICES = ['pxe', 'disk', 'none'];
const SCHEMA = 'http://schema.massopencloud.org/haas/v0/';

export const isMember = (project) => !!project && state.me.projects.includes(project);
/** A read-only caller (an auditor, a reader, a read-only token) is offered no change at all. */
const changes = () => !state.me.readOnly;
/** May the caller act on this node (its power, its networks)? A free node is the admin's. */
const mayAct = (project) => changes() && (state.me.isAdmin || isMember(project));
const admin = () => changes() && state.me.isAdmin;

/** How long ago, in words. */
export function ago(iso) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.floor(s / 60)} min ago` : s < 86400 ? `${Math.floor(s / 3600)} h ago` : `${Math.floor(s / 86400)} d ago`;
}

/** A state as rows show it: the badge, its age, and a failure's reason in red under it. */
export function stateCell(main, at, error) {
  return h('span', {}, main, at ? h('span', { class: 'state-detail' }, h('time', { datetime: at, title: at }, ago(at))) : '',
    error ? h('span', { class: 'state-detail error' }, error) : '');
}

/** Breadcrumbs: [[label, href], …, [label]] (the last is this page). */
export function crumbs(trail) {
  return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {}, trail.map(([label, href], i) =>
    h('li', {}, href && i < trail.length - 1 ? link(href, label) : h('span', { 'aria-current': 'page' }, label)))));
}

/**
 * A form in a dialog: `fields` [{ name, label, type?, options?, value?, required? }]; resolves
 * with the values, or null when cancelled. Focus starts on the first field; Escape cancels.
 */
export function formDialog(title, fields, ok = 'OK') {
  const d = $('form');
  $('form-title').textContent = title;
  $('form-ok').textContent = ok;
  $('form-error').textContent = '';
  const inputs = fields.map((f) => {
    const id = `form-${f.name}`;
    const input = f.options
      ? h('select', { id, name: f.name }, f.options.map((o) => (Array.isArray(o) ? h('option', { value: o[0], selected: o[0] === f.value }, o[1]) : h('option', { value: o, selected: o === f.value }, o))))
      : h('input', { id, name: f.name, type: f.type || 'text', value: f.value ?? '', required: f.required !== false, autocomplete: f.type === 'password' ? 'new-password' : 'off' });
    return [h('label', { for: id }, f.label), input];
  });
  $('form-fields').replaceChildren(...inputs.flat());
  d.returnValue = '';
  return new Promise((resolve) => {
    d.addEventListener('close', () => {
      if (d.returnValue !== 'ok') return resolve(null);
      resolve(Object.fromEntries(fields.map((f) => [f.name, $(`form-${f.name}`).value])));
    }, { once: true });
    d.showModal();
    (inputs[0] && inputs[0][1]).focus();
  });
}

/** Runs an action whose details a form gathered (no second confirmation: the form was one). */
async function run(body, verb) {
  try {
    const r = await api('action', { method: 'POST', body });
    if (r && r.status_id) state.following = { id: r.status_id, verb };
    say(r && r.status_id ? `${verb}: queued (status ${r.status_id}).` : `${verb}: done.`);
    refresh();
  } catch (err) {
    say(`${verb} failed: ${err.message}`);
  }
}

/** The projects a node may be reserved into by the caller: all for an admin, its own for a member. */
async function reservable() {
  if (!state.me.isAdmin) return [...state.me.projects].sort();
  const page = await api('table/projects?limit=200&sort=name');
  return page.rows.map((r) => r.name);
}

async function reserve(node) {
  const projects = await reservable();
  if (!projects.length) { say('No project to reserve it into.'); return; }
  const v = await formDialog(`Reserve node ${node}`, [{ name: 'project', label: 'Into project', options: projects }], 'Reserve');
  if (!v) { say('Cancelled.'); return; }
  await run({ action: 'reserve', node, project: v.project }, 'Reserve');
}

const button = (label, onclick, attrs = {}) => h('button', { type: 'button', ...attrs, on: { click: onclick } }, label);

/** The actions of a node's row: reserve a free node, release one of the caller's. */
export function nodeActionsCell(r) {
  const name = r.name ?? r.node;
  if (!changes()) return '';
  if (!r.project && (state.me.isAdmin || state.me.projects.length)) return button('Reserve', () => reserve(name), { 'aria-label': `Reserve node ${name}` });
  if (r.project && mayAct(r.project)) {
    return button('Release', () => action({ action: 'release', node: name, project: r.project }, `Release node ${name} from project ${r.project}? It must be attached to no network.`, 'Release'),
      { 'aria-label': `Release node ${name}` });
  }
  return '';
}

/** The action bar of a node's page. */
export function nodeDetailActions(n) {
  const out = [];
  if (!changes()) return '';
  if (!n.project && (state.me.isAdmin || state.me.projects.length)) out.push(button('Reserve', () => reserve(n.name)));
  if (n.project && mayAct(n.project)) out.push(button('Release', () => action({ action: 'release', node: n.name, project: n.project }, `Release node ${n.name} from project ${n.project}?`, 'Release')));
  // Power: a free node's is the admin's, an assigned one's its project's too (the API's rule).
  if (n.project ? mayAct(n.project) : admin()) {
    out.push(
      button('Power on', () => action({ action: 'power_on', node: n.name }, `Power node ${n.name} on?`, 'Power on')),
      button('Power off', () => action({ action: 'power_off', node: n.name }, `Power node ${n.name} off (a hard power off)?`, 'Power off'), { class: 'danger' }),
      button('Power cycle', () => action({ action: 'power_cycle', node: n.name }, `Power cycle node ${n.name}? It boots from the network next (PXE).`, 'Power cycle'), { class: 'danger' }),
      button('Boot device…', async () => {
        const v = await formDialog(`Next boot device of node ${n.name}`, [{ name: 'bootdev', label: 'Boot from', options: BOOT_DEVICES }], 'Set');
        if (!v) { say('Cancelled.'); return; }
        await run({ action: 'boot_device', node: n.name, bootdev: v.bootdev }, 'Boot device');
      }),
    );
  }
  if (admin()) {
    out.push(button('Add a nic…', async () => {
      const v = await formDialog(`Register a nic of node ${n.name}`, [{ name: 'nic', label: 'Nic name' }, { name: 'macaddr', label: 'MAC address' }], 'Register');
      if (v) await run({ action: 'register_nic', node: n.name, nic: v.nic, macaddr: v.macaddr }, 'Register nic');
      else say('Cancelled.');
    }));
  }
  return out.length ? h('div', { class: 'action-bar', role: 'group', 'aria-label': `Actions on node ${n.name}` }, h('h2', {}, 'Actions'), out) : '';
}

/** Connect and detach on a nic's row, for the node's project (and admins). */
export function nicActionsMore(n, x) {
  if (!n.project || !mayAct(n.project) || x.pending) return '';
  const out = [];
  if (x.wired) out.push(button('Connect…', () => connect(n, x), { 'aria-label': `Connect nic ${x.name} to a network` }));
  for (const w of x.networks) {
    out.push(button(`Detach ${w.network}`, () => action({ action: 'detach', node: n.name, nic: x.name, network: w.network },
      `Detach nic ${x.name} of node ${n.name} from network ${w.network}?`, 'Detach')));
  }
  return out;
}

/** Connect a nic: a picker of the networks its project may use, and the channel chosen for the user. */
async function connect(n, x) {
  const page = await api(`table/networks?f.project=${encodeURIComponent(n.project)}&limit=200&sort=name`);
  const on = new Set(x.networks.map((w) => w.network));
  const usable = page.rows.filter((r) => !on.has(r.name));
  if (!usable.length) { say(`No network ${n.project} may use is left to connect to nic ${x.name}.`); return; }
  const nativeFree = !x.channels.includes('vlan/native');
  const options = usable.map((r) => [r.name, `${r.name} (VLAN ${r.vlan}, ${r.access === 'public' ? 'public' : `owner ${r.owner}`})`]);
  const v = await formDialog(`Connect nic ${x.name} of node ${n.name}`, [
    { name: 'network', label: 'Network', options },
    { name: 'channel', label: 'Channel', options: [...(nativeFree ? [['native', 'untagged (native VLAN)']] : []), ['tagged', 'tagged (the network\'s VLAN id)']], value: nativeFree ? 'native' : 'tagged' },
  ], 'Connect');
  if (!v) { say('Cancelled.'); return; }
  const net = usable.find((r) => r.name === v.network);
  const channel = v.channel === 'native' ? 'vlan/native' : `vlan/${net.vlan}`;
  await run({ action: 'connect', node: n.name, nic: x.name, network: v.network, channel }, `Connect ${x.name} to ${v.network}`);
}

/** Says how a followed operation ended, once the node's page shows it finished. */
export function followOperation(operations) {
  const f = state.following;
  if (!f) return;
  const op = operations.find((o) => o.status_id === f.id);
  if (!op || op.status === 'PENDING') return;
  state.following = null;
  say(op.status === 'ERROR' ? `${f.verb}: failed: ${op.error}` : `${f.verb}: done.`);
}

/** The registration forms of a view, for admins. */
export function registerForms(view) {
  if (!admin()) return '';
  const forms = view === 'inventory'
    ? [button('Register a node…', async () => {
      const v = await formDialog('Register a node', [
        { name: 'node', label: 'Name' }, { name: 'type', label: 'BMC type', options: ['ipmi', 'redfish', 'mock'] },
        { name: 'host', label: 'BMC host (or URL)' }, { name: 'user', label: 'BMC user' }, { name: 'password', label: 'BMC password', type: 'password' },
      ], 'Register');
      if (!v) { say('Cancelled.'); return; }
      await run({ action: 'register_node', node: v.node, obm: { type: `${SCHEMA}obm/${v.type}`, host: v.host, user: v.user, password: v.password } }, `Register node ${v.node}`);
    })]
    : [button('Register a switch…', async () => {
      const v = await formDialog('Register a switch', [
        { name: 'switch', label: 'Name' }, { name: 'type', label: 'Type', options: ['mock', 'powerconnect55xx', 'nexus', 'delln3000', 'arista_eos'] },
        { name: 'hostname', label: 'Host' }, { name: 'username', label: 'User' }, { name: 'password', label: 'Password', type: 'password' },
      ], 'Register');
      if (!v) { say('Cancelled.'); return; }
      await run({ action: 'register_switch', switch: v.switch, type: `${SCHEMA}switches/${v.type}`, fields: { hostname: v.hostname, username: v.username, password: v.password } }, `Register switch ${v.switch}`);
    }), button('Add a port…', async () => {
      const v = await formDialog('Register a port', [{ name: 'switch', label: 'Switch' }, { name: 'port', label: 'Port' }], 'Register');
      if (v) await run({ action: 'register_port', switch: v.switch, port: v.port }, `Register port ${v.port}`);
      else say('Cancelled.');
    }), button('Wire a nic…', async () => {
      const v = await formDialog('Wire a port to a nic', [{ name: 'switch', label: 'Switch' }, { name: 'port', label: 'Port' }, { name: 'node', label: 'Node' }, { name: 'nic', label: 'Nic' }], 'Wire');
      if (v) await run({ action: 'wire', switch: v.switch, port: v.port, node: v.node, nic: v.nic }, `Wire ${v.switch} ${v.port}`);
      else say('Cancelled.');
    })];
  return h('div', { class: 'action-bar', role: 'group', 'aria-label': 'Registration' }, h('h2', {}, 'Register'), forms);
}
