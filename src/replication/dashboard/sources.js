// forgesync dashboard: the Sources page. The list (#/sources?state=&search=&offset=,
// 50 a page, from GET /api/sources) with its add form, filter and search, and one
// source (#/sources/<name>, GET /api/sources/<name>: registry, lease, last error,
// attempts); Resync records a request (POST /api/sources/<name>/resync).

import { act, flash, refresh } from '/dashboard/actions.js';
import { api, enc, notFound } from '/dashboard/api.js';
import { listAndItem } from '/dashboard/route.js';
import { $, facts, h, patch, patchRows, setText, table } from '/dashboard/dom.js';
import { badge, duration, holder, plural, shorten, timeLeft, when } from '/dashboard/format.js';

const PAGE_SIZE = 50;

// ---------------------------------------------------------------- the list

function listMarkup() {
  const input = (label, props) => h('label', {}, `${label} `, h('input', { autocomplete: 'off', ...props }));
  return h(
    'section',
    { id: 'sources-view', hidden: true },
    h('h1', {}, 'Sources'),
    h(
      'details',
      { className: 'panel', id: 'add-panel' },
      h('summary', {}, 'Add a source'),
      h(
        'form',
        { id: 'add-form', className: 'inline-form', onsubmit: addSource },
        input('URL', { name: 'url', id: 'add-url', required: true, placeholder: 'https://github.com/org/repo.git' }),
        input('Name', { name: 'name', id: 'add-name', placeholder: '(from the URL)' }),
        input('Interval', { name: 'interval', id: 'add-interval', placeholder: '1h', size: 6 }),
        h('button', { type: 'submit' }, 'Add source'),
      ),
    ),
    h(
      'form',
      { id: 'filter-form', className: 'toolbar', role: 'search', onsubmit: (event) => event.preventDefault() },
      h(
        'label',
        {},
        'State ',
        h('select', { id: 'state-filter', onchange: (event) => goTo({ ...currentQuery(), state: event.currentTarget.value, offset: 0 }) }, ['', 'pending', 'started', 'synced', 'failed'].map((state) => h('option', { value: state }, state || 'all'))),
      ),
      input('Search', { id: 'search', type: 'search', placeholder: 'name or URL', oninput: searchTyped }),
      h('span', { className: 'spacer' }),
      h('span', { id: 'page-info', className: 'muted' }),
      h('button', { type: 'button', id: 'prev-page', className: 'secondary', onclick: () => goTo({ ...currentQuery(), offset: Math.max(0, currentQuery().offset - PAGE_SIZE) }) }, '‹ Prev'),
      h('button', { type: 'button', id: 'next-page', className: 'secondary', onclick: () => goTo({ ...currentQuery(), offset: currentQuery().offset + PAGE_SIZE }) }, 'Next ›'),
    ),
    h('div', { className: 'panel flush' }, table('sources-table', ['Name', 'State', 'Verification', 'Last synced', 'Retries', 'Last failure', ''])),
  );
}

function queryOf(params) {
  return {
    state: params?.get('state') ?? '',
    search: params?.get('search') ?? '',
    offset: Math.max(0, Number.parseInt(params?.get('offset') ?? '0', 10) || 0),
  };
}

function currentQuery() {
  return queryOf(new URLSearchParams(location.hash.split('?')[1] ?? ''));
}

/** A new filter, search or page: written into the address (replacing it, no history entry), then shown. */
function goTo(query) {
  const params = new URLSearchParams();
  if (query.state) params.set('state', query.state);
  if (query.search) params.set('search', query.search);
  if (query.offset) params.set('offset', String(query.offset));
  const text = params.toString();
  history.replaceState(null, '', `#/sources${text ? `?${text}` : ''}`);
  refresh();
}

let searchTimer;
function searchTyped(event) {
  clearTimeout(searchTimer);
  const value = event.currentTarget.value.trim();
  searchTimer = setTimeout(() => goTo({ ...currentQuery(), search: value, offset: 0 }), 250);
}

async function loadList(route) {
  const query = queryOf(route.params);
  const params = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(query.offset) });
  if (query.state) params.set('state', query.state);
  if (query.search) params.set('search', query.search);
  return api('GET', `/api/sources?${params}`);
}

function stateCell(source) {
  return h(
    'td',
    {},
    badge(source.state),
    source.missingOnPrimary ? badge('missing upstream', 'missing') : null,
    source.enabled === false ? badge('disabled', 'muted') : null,
  );
}

function renderList(route, page) {
  const query = queryOf(route.params);
  const filter = $('state-filter');
  if (filter.value !== query.state) filter.value = query.state;
  const search = $('search');
  if (document.activeElement !== search && search.value !== query.search) search.value = query.search;

  const rows = page.items.map((source) =>
    h(
      'tr',
      { key: source.name, 'data-source': source.name },
      h('td', {}, h('a', { href: `#/sources/${enc(source.name)}`, className: 'strong' }, source.name), h('div', { className: 'muted small' }, source.url)),
      stateCell(source),
      h('td', {}, badge(source.verificationState)),
      h('td', {}, when(source.lastSyncedAt, 'never')),
      h('td', {}, String(source.retryCount), source.nextRetryAt && source.state === 'failed' ? h('div', { className: 'muted small nowrap' }, 'next ', when(source.nextRetryAt)) : null),
      h('td', { className: 'error-text', title: source.lastFailure ?? '' }, shorten(source.lastFailure)),
      h('td', { className: 'right' }, h('button', { type: 'button', className: 'small', onclick: (event) => resyncOne(source.name, event.currentTarget) }, 'Resync')),
    ),
  );
  const filtered = query.state || query.search;
  patchRows($('sources-table'), rows, 7, filtered ? 'No source matches this filter.' : 'No sources yet: add one above.');

  const first = page.total === 0 ? 0 : page.offset + 1;
  const last = Math.min(page.offset + page.items.length, page.total);
  setText($('page-info'), `${first}–${last} of ${page.total}`);
  $('prev-page').disabled = page.offset <= 0;
  $('next-page').disabled = page.offset + page.items.length >= page.total;
}

async function addSource(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const body = { url: $('add-url').value.trim() };
  const name = $('add-name').value.trim();
  const interval = $('add-interval').value.trim();
  if (name) body.name = name;
  if (interval) body.interval = interval;
  await act(form.querySelector('button[type=submit]'), async () => {
    const source = await api('POST', '/api/sources', body);
    flash(`Added ${source.name}; its first sync is on its way.`);
    form.reset();
  });
}

async function resyncOne(name, button) {
  await act(button, async () => {
    await api('POST', `/api/sources/${enc(name)}/resync`);
    flash(`Resync of ${name} requested.`);
  });
}

// ---------------------------------------------------------------- one source

function detailMarkup() {
  return h(
    'section',
    { id: 'source-view', hidden: true },
    h('p', {}, h('a', { href: '#/sources' }, '‹ Sources')),
    h(
      'div',
      { className: 'title-row' },
      h('h1', { id: 'source-title' }),
      h('span', { id: 'source-state', className: 'badge' }),
      h('span', { className: 'spacer' }),
      h('button', { type: 'button', id: 'source-resync', onclick: (event) => resyncOne(event.currentTarget.dataset.name, event.currentTarget) }, 'Resync'),
    ),
    h(
      'div',
      { className: 'cards' },
      h('div', { className: 'panel' }, h('h2', {}, 'Registry'), h('dl', { id: 'source-facts', className: 'facts' })),
      h('div', { className: 'panel' }, h('h2', {}, 'Lease'), h('dl', { id: 'source-lease', className: 'facts' })),
    ),
    h('div', { className: 'panel', id: 'source-error-panel' }, h('h2', {}, 'Last error'), h('pre', { id: 'source-error' })),
    h('div', { className: 'panel flush' }, h('h2', { className: 'pad' }, 'History'), table('attempts-table', ['Started', 'Trigger', 'Result', 'Duration', 'Refs changed', 'Error'])),
  );
}

function renderSource({ name }, source) {
  setText($('source-title'), name);
  const stateBadge = $('source-state');
  $('source-resync').dataset.name = name;
  if (!source) {
    stateBadge.className = 'badge failed';
    setText(stateBadge, 'not found');
    facts($('source-facts'), [['', 'There is no source with this name.']]);
    facts($('source-lease'), []);
    $('source-error-panel').hidden = true;
    patch($('attempts-table').tBodies[0]);
    return;
  }
  stateBadge.className = `badge ${source.state}`;
  setText(stateBadge, source.state);
  const behind = source.requestedSeq - source.completedSeq;
  facts($('source-facts'), [
    ['URL', h('code', {}, source.url)],
    ['Enabled', source.enabled ? 'yes' : 'no'],
    ['Verification', badge(source.verificationState)],
    ['Upstream', source.missingOnPrimary ? badge('missing upstream', 'missing') : 'present'],
    ['Last attempt', when(source.lastAttemptAt, 'never')],
    ['Last synced', when(source.lastSyncedAt, 'never')],
    ['Retries', source.nextRetryAt && source.state === 'failed' ? [String(source.retryCount), ' · next ', when(source.nextRetryAt)] : String(source.retryCount)],
    ['Requests', behind > 0 ? `${plural(behind, 'request')} waiting (#${source.completedSeq} → #${source.requestedSeq})` : `up to date (#${source.completedSeq})`],
    ['Checksum', source.checksum ? h('code', { title: source.checksum }, source.checksum.slice(0, 16)) : '—'],
    ['Mirror', source.mirrorPath ? h('code', {}, source.mirrorPath) : '—'],
  ]);
  const lease = source.lease;
  facts(
    $('source-lease'),
    lease
      ? [
          ['Holder', holder(lease.owner)],
          ['Fence', String(lease.fence)],
          ['Held since', when(lease.owner?.acquiredAt)],
          ['Time left', timeLeft(lease)],
        ]
      : [['Holder', h('span', { className: 'muted' }, 'not held')]],
  );
  $('source-error-panel').hidden = !source.lastFailure;
  setText($('source-error'), source.lastFailure ?? '');

  const attempts = (source.attempts ?? []).map((attempt) =>
    h(
      'tr',
      { key: attempt.id },
      h('td', {}, when(attempt.startedAt)),
      h('td', {}, attempt.trigger),
      h('td', {}, attempt.result ? badge(attempt.result) : badge('running', 'started')),
      h('td', {}, duration(attempt.durationMs)),
      h('td', {}, attempt.refsChanged === null || attempt.refsChanged === undefined ? '—' : String(attempt.refsChanged)),
      h('td', { className: 'error-text', title: attempt.error ?? '' }, shorten(attempt.error)),
    ),
  );
  patchRows($('attempts-table'), attempts, 6, 'No attempts yet.');
}

export default {
  name: 'sources',
  label: 'Sources',
  href: '#/sources',
  route: listAndItem('sources', 'sources', 'source'),
  views: {
    sources: { markup: listMarkup, load: loadList, render: renderList },
    source: { markup: detailMarkup, load: ({ name }) => api('GET', `/api/sources/${enc(name)}`).catch(notFound(null)), render: renderSource },
  },
};
