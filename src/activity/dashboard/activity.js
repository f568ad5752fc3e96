// forgesync dashboard: the Activity page (#/activity?range=hour|day|month):
// charts of what the processes' metrics counted over time (GET
// /api/activity/series, from the rollup in the database; uPlot, served from
// node_modules by the dashboard's route under the same CSP), and the failing
// sources grouped by error (GET /api/activity/failures) with one button
// that requests a sync of every source of a group.

import { act, confirmDialog, flash } from '/dashboard/actions.js';
import { api, enc } from '/dashboard/api.js';
import { $, h, patch, patchRows, table } from '/dashboard/dom.js';
import { plural, shorten, when } from '/dashboard/format.js';

const RANGES = ['hour', 'day', 'month'];
const RANGE_LABELS = { hour: 'Last hour', day: 'Last day', month: 'Last month' };
const COLOURS = ['#2f5bd3', '#d64545', '#2e9d5b', '#d38a1f', '#8a4fd3', '#1fa3b3', '#8a94a6', '#c2458f'];
const CHART_HEIGHT = 200;

/** uPlot's module, loaded with its stylesheet on the page's first load. */
let uPlotModule;
/** The uPlot instance of each chart, by chart id, with the series labels it was made for. */
const plots = new Map();

async function loadUPlot() {
  if (uPlotModule) return uPlotModule;
  for (const href of ['/dashboard/vendor/uPlot.min.css', '/dashboard/activity/activity.css']) {
    document.head.append(h('link', { rel: 'stylesheet', href }));
  }
  uPlotModule = (await import('/dashboard/vendor/uPlot.esm.js')).default;
  return uPlotModule;
}

function markup() {
  return h(
    'section',
    { id: 'activity-view', hidden: true },
    h('div', { className: 'title-row' }, h('h1', {}, 'Activity'), h('nav', { id: 'activity-ranges', className: 'activity-ranges', 'aria-label': 'range' })),
    h('div', { id: 'activity-charts', className: 'activity-charts' }),
    h(
      'div',
      { className: 'panel flush' },
      h('div', { className: 'pad' }, h('h2', {}, 'Failures by error')),
      table('activity-failures', ['Error', 'Sources', 'First seen', 'Last seen', 'Affected', '']),
    ),
  );
}

async function load(route) {
  const [uPlot, series, failures] = await Promise.all([loadUPlot(), api('GET', `/api/activity/series?range=${enc(route.range)}`), api('GET', '/api/activity/failures')]);
  return { uPlot, series, failures };
}

function render(route, { uPlot, series, failures }) {
  patch(
    $('activity-ranges'),
    RANGES.map((range) => h('a', { key: range, href: `#/activity?range=${range}`, 'data-range': range, 'aria-current': range === route.range ? 'true' : 'false' }, RANGE_LABELS[range])),
  );
  const container = $('activity-charts');
  // The panels are made once per set of charts: patching them would take uPlot's canvas out of its element.
  const ids = series.charts.map((chart) => chart.id).join(' ');
  if (container.dataset.charts !== ids) {
    for (const { plot } of plots.values()) plot.destroy();
    plots.clear();
    container.replaceChildren(...series.charts.map(chartPanel));
    container.dataset.charts = ids;
  }
  for (const chart of series.charts) {
    patch($(`activity-legend-${chart.id}`), legend(chart));
    drawChart(uPlot, chart, series);
  }
  renderFailures(failures);
}

/** A chart's panel: its title, the element uPlot draws in, and where its legend of totals goes. */
function chartPanel(chart) {
  return h(
    'div',
    { className: 'panel', 'data-chart': chart.id },
    h('h2', {}, chart.title, ' ', h('span', { className: 'muted' }, chart.unit)),
    h('div', { className: 'activity-chart', id: `activity-chart-${chart.id}` }),
    h('div', { id: `activity-legend-${chart.id}` }),
  );
}

/** Each series' total over the range (counters) or latest value (percentiles, gauges). */
function legend(chart) {
  if (chart.series.length === 0) return h('p', { className: 'muted', 'data-field': 'empty' }, 'Nothing recorded in this range.');
  return h(
    'table',
    { className: 'activity-legend' },
    h(
      'tbody',
      {},
      chart.series.map((series) => h('tr', { key: series.label, 'data-series': series.label }, h('td', {}, series.label), h('td', { 'data-field': 'total' }, legendValue(series)))),
    ),
  );
}

/** A counter's total over the range; the latest value of a percentile or a gauge. */
function legendValue(series) {
  if (series.total !== null) return formatNumber(series.total);
  const latest = [...series.values].reverse().find((value) => value !== null);
  return latest === undefined ? '—' : `latest ${formatNumber(latest)}`;
}

function formatNumber(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(3).replace(/\.?0+$/, '');
}

/** Draws or updates the chart's uPlot (a new one when its series changed; setData otherwise). */
function drawChart(uPlot, chart, series) {
  const target = $(`activity-chart-${chart.id}`);
  const labels = chart.series.map((each) => each.label).join('\u0000');
  const data = [series.times.map((time) => time / 1000), ...chart.series.map((each) => each.values)];
  const existing = plots.get(chart.id);
  if (existing && existing.labels === labels) {
    existing.plot.setData(data);
    return;
  }
  existing?.plot.destroy();
  target.replaceChildren();
  if (chart.series.length === 0) {
    plots.delete(chart.id);
    return;
  }
  const width = Math.max(320, target.clientWidth || 520);
  const options = {
    width,
    height: CHART_HEIGHT,
    // Points on series with gaps (percentiles, gauges): a lone value between gaps has no line to show it.
    series: [{}, ...chart.series.map((each, index) => ({ label: each.label, stroke: COLOURS[index % COLOURS.length], width: 1.5, points: { show: each.total === null, size: 5 } }))],
    axes: [{}, { size: 60 }],
    legend: { show: true },
  };
  plots.set(chart.id, { labels, plot: new uPlot(options, data, target) });
}

function renderFailures(groups) {
  patchRows(
    $('activity-failures'),
    groups.map((group) =>
      h(
        'tr',
        { key: group.id, 'data-group': group.id },
        h('td', { title: group.example }, h('code', { 'data-field': 'message' }, shorten(group.message, 140))),
        h('td', { 'data-field': 'count' }, String(group.count)),
        h('td', { 'data-field': 'firstSeen' }, when(group.firstSeenAt)),
        h('td', { 'data-field': 'lastSeen' }, when(group.lastSeenAt)),
        h('td', { className: 'activity-failure-sources', 'data-field': 'sources' }, shorten(group.sources.join(', '), 200)),
        h('td', {}, h('button', { type: 'button', className: 'small', 'data-action': 'resync', onclick: (event) => resyncGroup(group, event.currentTarget) }, 'Resync group')),
      ),
    ),
    6,
    'No source is failing.',
  );
}

async function resyncGroup(group, button) {
  await act(button, async () => {
    const ok = await confirmDialog('Resync this group?', `This records a sync request for ${plural(group.count, 'source')} failing with “${shorten(group.message, 120)}”.`, `Resync ${plural(group.count, 'source')}`);
    if (!ok) return;
    const result = await api('POST', `/api/activity/failures/${enc(group.id)}/resync`);
    flash(`Sync requested for ${plural(result.requested, 'source')}.`);
  });
}

export default {
  name: 'activity',
  label: 'Activity',
  href: '#/activity',
  route: (path, params) => (path === '/activity' ? { view: 'activity', range: RANGES.includes(params.get('range')) ? params.get('range') : 'hour' } : null),
  views: {
    activity: { markup, load, render },
  },
};
