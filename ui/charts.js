// Pictures where people would rather look than read (issue 26), drawn with uPlot (served by the
// service from its npm package: vendor/uplot.js, no CDN): nodes free and in use per project,
// the VLAN pool's use, network operations per switch (failures, latency) over the last hour or
// day, and the service's health over time. Each chart has a title and a text summary for those
// who do not see it; the data are the summary's and api/history's (src/ui/history.ts).

import uPlot from './vendor/uplot.js';
import { h, api, state, remember } from './app.js';

const COLORS = ['#0b5cad', '#b42318', '#1a7f37', '#8a5a00', '#6f42c1', '#0e7490', '#9f1239', '#4d7c0f'];
/** The last data drawn in each chart, so that a refresh that changes nothing redraws nothing. */
const drawn = new WeakMap();

function box(parent, id, title) {
  let el = parent.querySelector(`#${id}`);
  if (!el) {
    el = h('figure', { id, class: 'chart', 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), h('div', { class: 'plot' }), h('figcaption', { class: 'sr-only' }));
    parent.append(el);
  }
  return el;
}

const width = (el) => Math.max(240, Math.min(640, (el.clientWidth || 360) - 16));

/** A bar chart of categories. */
function bars(el, labels, series, summary) {
  const key = JSON.stringify([labels, series.map((s) => s.values)]);
  el.querySelector('figcaption').textContent = summary;
  if (drawn.get(el) === key) return;
  drawn.set(el, key);
  const plot = el.querySelector('.plot');
  plot.replaceChildren();
  const x = labels.map((_, i) => i);
  const opts = {
    width: width(el), height: 180,
    // Bars stand on zero (uPlot's own range would start at the smallest value).
    scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] } },
    axes: [{ values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? labels[t] ?? '' : '')), splits: () => x }, {}],
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i], fill: `${COLORS[i]}99`, width: 1, paths: uPlot.paths.bars({ size: [0.6 / series.length, 60], align: series.length > 1 ? (i === 0 ? -1 : 1) : 0 }), points: { show: false } }))],
    legend: { show: series.length > 1 },
  };
  new uPlot(opts, [x, ...series.map((s) => s.values)], plot);
}

/** Lines over time. */
function lines(el, samples, series, summary) {
  const key = JSON.stringify([samples.length && samples[samples.length - 1].at, series.map((s) => s.label)]);
  el.querySelector('figcaption').textContent = summary;
  if (drawn.get(el) === key) return;
  drawn.set(el, key);
  const plot = el.querySelector('.plot');
  plot.replaceChildren();
  const t = samples.map((s) => s.at / 1000);
  const opts = {
    width: width(el), height: 180,
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false }))],
    axes: [{}, { size: 50 }],
  };
  new uPlot(opts, [t, ...series.map((s) => samples.map(s.value))], plot);
}

export function inventoryCharts(parent) {
  const s = state.summary;
  if (!s) return;
  const per = s.inventory.perProject;
  bars(box(parent, 'chart-nodes', 'Nodes: free, and in use per project'), ['free', ...per.map((p) => p.project)], [{ label: 'nodes', values: [s.inventory.free, ...per.map((p) => p.nodes)] }],
    `${s.inventory.free} free; ${per.map((p) => `${p.nodes} in ${p.project}`).join(', ') || 'none in use'}.`);
  if (s.vlans && s.vlans.size) {
    bars(box(parent, 'chart-vlans', `VLAN pool: ${s.vlans.used} of ${s.vlans.size} in use`), ['in use', 'free'], [{ label: 'VLAN ids', values: [s.vlans.used, s.vlans.size - s.vlans.used] }],
      `${s.vlans.used} of the pool's ${s.vlans.size} VLAN ids are in use.`);
  }
}

/** Which period the time charts show: the last hour or the last day (kept in the URL). */
function period(parent) {
  const current = state.params.get('period') === 'day' ? 'day' : 'hour';
  let toggle = parent.querySelector('.period');
  if (!toggle) {
    toggle = h('p', { class: 'period' }, h('label', { for: `${parent.id}-period` }, 'Period '),
      h('select', { id: `${parent.id}-period`, on: { change: (e) => { state.extra = { ...state.extra, period: e.target.value }; remember(); drawnReset(parent); parent.dispatchEvent(new Event('period')); } } },
        h('option', { value: 'hour', selected: current === 'hour' }, 'last hour'), h('option', { value: 'day', selected: current === 'day' }, 'last day')));
    parent.prepend(toggle);
  }
  return toggle.querySelector('select').value;
}

function drawnReset(parent) {
  for (const f of parent.querySelectorAll('figure')) drawn.delete(f);
}

async function history(parent) {
  const which = period(parent);
  if (!parent.dataset.listening) {
    parent.dataset.listening = '1';
    parent.addEventListener('period', () => (parent.id === 'health-charts' ? healthCharts(parent) : operationsCharts(parent)));
  }
  try {
    return { which, samples: (await api('history'))[which] };
  } catch {
    return { which, samples: [] };
  }
}

export async function operationsCharts(parent) {
  const { which, samples } = await history(parent);
  const switches = [...new Set(samples.flatMap((s) => Object.keys(s.switches)))].sort();
  const total = (sw, k) => samples.reduce((n, s) => n + (s.switches[sw]?.[k] ?? 0), 0);
  lines(box(parent, 'chart-failures', 'Failed network operations per switch'), samples, switches.map((sw) => ({ label: sw, value: (s) => s.switches[sw]?.failed ?? 0 })),
    `In the last ${which}: ${switches.map((sw) => `${sw} ${total(sw, 'failed')} failed of ${total(sw, 'finished')}`).join('; ') || 'no operation'}.`);
  lines(box(parent, 'chart-latency', 'Mean network-operation latency per switch (s)'), samples, switches.map((sw) => ({ label: sw, value: (s) => s.switches[sw]?.meanSeconds ?? null })),
    `Mean seconds from acceptance to outcome per switch, in the last ${which}.`);
}

export async function healthCharts(parent) {
  const { which, samples } = await history(parent);
  const last = samples[samples.length - 1];
  lines(box(parent, 'chart-requests', 'Requests per second, and 5xx'), samples, [{ label: 'requests/s', value: (s) => s.requestsPerSecond }, { label: '5xx/s', value: (s) => s.errorsPerSecond }],
    last ? `In the last ${which}; now ${last.requestsPerSecond.toFixed(1)} requests/s, ${last.errorsPerSecond.toFixed(2)} 5xx/s.` : 'No sample yet.');
  lines(box(parent, 'chart-queues', 'Queued hardware calls and pending operations'), samples, [
    { label: 'switch', value: (s) => s.queues.switch }, { label: 'BMC', value: (s) => s.queues.obm }, { label: 'VM', value: (s) => s.queues.headnode }, { label: 'pending operations', value: (s) => s.pending },
  ], last ? `Now ${last.queues.switch} switch calls, ${last.queues.obm} BMC calls queued, ${last.pending} operations pending.` : 'No sample yet.');
  lines(box(parent, 'chart-memory', 'Memory (MiB)'), samples, [{ label: 'resident MiB', value: (s) => s.memoryMiB }], last ? `Now ${last.memoryMiB} MiB.` : 'No sample yet.');
}
