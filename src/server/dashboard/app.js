// forgesync dashboard: plain browser JavaScript, no build step, no framework.
// Every value from the API reaches the DOM through textContent or attributes
// set on elements made with createElement; never through innerHTML.

import { feedPages } from './feeds.js';

const TOKEN_KEY = 'forgesync.token';
const FAST_MS = 2_000; // while work runs, or just after an action
const SLOW_MS = 10_000; // when everything is idle
const AFTER_ACTION_MS = 15_000;
const PAGE_SIZE = 50;

const $ = (id) => document.getElementById(id);

/** Makes an element: h('a', { href, className, title, onclick }, ...children); strings become text nodes. */
function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'className') element.className = value;
    else if (key.startsWith('on')) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  const bearer = token();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  // The server takes state changes only as JSON (no form or text/plain request from another page can be one).
  if (method !== 'GET') headers['content-type'] = 'application/json';
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, 'network', `the server did not answer (${error.message})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401) {
    askForToken(bearer ? 'The server refused this token. Enter another one.' : 'This server needs an API token.');
    throw new ApiError(401, 'unauthorized', data?.message ?? 'a valid token is required');
  }
  if (!response.ok) {
    throw new ApiError(response.status, data?.error ?? `http_${response.status}`, data?.message ?? `${response.status} ${response.statusText}`);
  }
  return data;
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------- formatting

function toDate(value) {
  if (value === null || value === undefined || value === '') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60 ? `${s % 60} s` : ''}`.trim();
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** A relative time in a <time> element, with the exact time as its tooltip. */
function when(value, fallback = '—') {
  const date = toDate(value);
  if (!date) return h('span', { className: 'muted' }, fallback);
  const delta = date.getTime() - Date.now();
  const text = Math.abs(delta) < 1500 ? 'just now' : delta < 0 ? `${span(delta)} ago` : `in ${span(delta)}`;
  return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, text);
}

function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  return ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : span(ms);
}

function shorten(text, max = 90) {
  if (!text) return '';
  const line = String(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function badge(text, kind = text) {
  return h('span', { className: `badge ${kind}` }, text);
}

function holder(owner) {
  if (!owner) return '—';
  return `${owner.name}(${owner.pid})@${owner.host}`;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

// ---------------------------------------------------------------- feedback

let flashTimer;
function flash(message, kind = 'ok') {
  const box = $('flash');
  box.className = kind;
  box.textContent = message;
  box.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => (box.hidden = true), kind === 'error' ? 12_000 : 6_000);
}

function flashError(error) {
  if (error instanceof ApiError && error.status === 401) return; // the token form says it
  flash(error instanceof ApiError ? `${error.message} (${error.code})` : String(error?.message ?? error), 'error');
}

/** Asks in a modal; resolves true when confirmed. */
function confirmDialog(title, text, okLabel) {
  const dialog = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = okLabel;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}

/** Runs an action with its button disabled, reports errors, and speeds up polling afterwards. */
async function act(button, action) {
  if (button) button.disabled = true;
  try {
    await action();
    busyUntil = Date.now() + AFTER_ACTION_MS;
    refresh();
  } catch (error) {
    flashError(error);
  } finally {
    if (button) button.disabled = false;
  }
}

// ---------------------------------------------------------------- routing

function currentRoute() {
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  const detail = /^\/sources\/(.+)$/.exec(path);
  if (detail) {
    try {
      return { view: 'source', name: decodeURIComponent(detail[1]) };
    } catch {
      return { view: 'sources', params };
    }
  }
  if (path === '/sources') return { view: 'sources', params };
  const importDetail = /^\/imports\/(.+)$/.exec(path);
  if (importDetail) {
    try {
      return { view: 'import', name: decodeURIComponent(importDetail[1]) };
    } catch {
      return { view: 'imports' };
    }
  }
  if (path === '/imports') return { view: 'imports' };
  const feedDetail = /^\/feeds\/(.+)$/.exec(path);
  if (feedDetail) {
    try {
      return { view: 'feed', name: decodeURIComponent(feedDetail[1]) };
    } catch {
      return { view: 'feeds' };
    }
  }
  if (path === '/feeds') return { view: 'feeds' };
  if (path === '/leases') return { view: 'leases' };
  return { view: 'overview' };
}

const VIEWS = ['token', 'overview', 'sources', 'source', 'imports', 'import', 'feeds', 'feed', 'leases'];
const SECTIONS = { source: 'sources', import: 'imports', feed: 'feeds' };

function show(view) {
  for (const name of VIEWS) $(`${name}-view`).hidden = name !== view;
  const section = SECTIONS[view] ?? view;
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  $('sign-out').hidden = !token();
}

function sourcesQuery(params) {
  return {
    state: params?.get('state') ?? '',
    search: params?.get('search') ?? '',
    offset: Math.max(0, Number.parseInt(params?.get('offset') ?? '0', 10) || 0),
  };
}

function goToSources(query) {
  const params = new URLSearchParams();
  if (query.state) params.set('state', query.state);
  if (query.search) params.set('search', query.search);
  if (query.offset) params.set('offset', String(query.offset));
  const text = params.toString();
  history.replaceState(null, '', `#/sources${text ? `?${text}` : ''}`);
  refresh();
}

// ---------------------------------------------------------------- refresh loop

let timer;
let generation = 0;
let busyUntil = 0;
let waitingForToken = false;

function askForToken(reason) {
  waitingForToken = true;
  clearTimeout(timer);
  $('token-reason').textContent = reason;
  show('token');
  $('refresh-status').textContent = '';
  $('token-input').focus();
}

async function refresh() {
  clearTimeout(timer);
  const mine = ++generation;
  const route = currentRoute();
  let working = false;
  try {
    const overview = await api('GET', '/api/overview');
    const { counts, capacity } = overview;
    working = counts.pending + counts.started > 0 || capacity.running + capacity.queued > 0;
    let data;
    if (route.view === 'sources') {
      const query = sourcesQuery(route.params);
      const params = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(query.offset) });
      if (query.state) params.set('state', query.state);
      if (query.search) params.set('search', query.search);
      data = await api('GET', `/api/sources?${params}`);
    } else if (route.view === 'source') {
      data = await api('GET', `/api/sources/${enc(route.name)}`).catch((error) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      });
    } else if (route.view === 'imports') {
      data = await api('GET', '/api/imports');
      working ||= data.some(importRunning);
    } else if (route.view === 'import') {
      data = await api('GET', `/api/imports/${enc(route.name)}`).catch((error) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      });
      working ||= Boolean(data && importRunning(data));
    } else if (route.view === 'feeds' || route.view === 'feed') {
      data = await feeds.load(route);
      working ||= feeds.working(route, data);
    } else if (route.view === 'leases') {
      data = await api('GET', '/api/leases');
    }
    if (mine !== generation) return; // a newer refresh (navigation, action) took over
    waitingForToken = false;
    show(route.view);
    renderOverview(overview);
    if (route.view === 'sources') renderSources(data, sourcesQuery(route.params));
    else if (route.view === 'source') renderSource(route.name, data);
    else if (route.view === 'imports') renderImports(data);
    else if (route.view === 'import') renderImport(route.name, data);
    else if (route.view === 'feeds' || route.view === 'feed') feeds.render(route, data);
    else if (route.view === 'leases') renderLeases(data);
    const status = $('refresh-status');
    status.className = working ? 'live' : 'muted';
    status.textContent = `${working ? 'work running · ' : ''}updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    if (mine !== generation || waitingForToken) return;
    const status = $('refresh-status');
    status.className = 'error';
    status.textContent = `update failed: ${error.message}`;
  }
  const fast = working || Date.now() < busyUntil;
  timer = setTimeout(refresh, document.hidden ? SLOW_MS : fast ? FAST_MS : SLOW_MS);
}

// ---------------------------------------------------------------- overview

function bars(container, rows, total) {
  container.replaceChildren(
    ...rows.map(({ label, value, kind, href }) => {
      const fill = h('span', { className: `fill ${kind}` });
      fill.style.width = `${total > 0 ? Math.min(100, (value / total) * 100) : 0}%`; // CSSOM: allowed by the CSP
      return h(
        'div',
        { className: 'bar-row' },
        href ? h('a', { className: 'bar-label', href }, label) : h('span', { className: 'bar-label' }, label),
        h('span', { className: 'bar-track', role: 'img', 'aria-label': `${label}: ${value} of ${total}` }, fill),
        h('span', { className: 'bar-value', 'data-count': kind }, String(value)),
      );
    }),
  );
}

function renderOverview({ counts, scheduler, capacity }) {
  const total = counts.total;
  bars(
    $('state-bars'),
    ['synced', 'pending', 'started', 'failed'].map((state) => ({ label: state, value: counts[state], kind: state, href: `#/sources?state=${state}` })),
    total,
  );
  $('total-text').textContent = `${plural(total, 'source')} in total`;
  const unverified = Math.max(0, total - counts.verified - counts.mismatch);
  bars(
    $('verification-bars'),
    [
      { label: 'verified', value: counts.verified, kind: 'verified' },
      { label: 'mismatch', value: counts.mismatch, kind: 'mismatch' },
      { label: 'unverified', value: unverified, kind: 'unverified' },
      { label: 'missing upstream', value: counts.missing, kind: 'missing' },
    ],
    total,
  );
  const schedulerBadge = $('scheduler-state');
  schedulerBadge.className = `badge ${scheduler.state}`;
  schedulerBadge.textContent = scheduler.state;
  $('capacity-text').textContent = `${capacity.running} of ${capacity.capacity} workers`;
  $('queued-text').textContent = plural(capacity.queued, 'job');
  bars($('capacity-bar'), [{ label: 'in use', value: capacity.running, kind: 'started' }], capacity.capacity);
}

async function bulkResync(filter, button) {
  await act(button, async () => {
    const { affected } = await api('POST', '/api/resync', { filter, dryRun: true });
    const what = filter === 'failed' ? 'failed source' : 'source';
    if (affected === 0) {
      flash(`There is no ${what} to resync.`);
      return;
    }
    const ok = await confirmDialog(
      filter === 'failed' ? 'Resync failed sources?' : 'Resync all sources?',
      `This records a resync request for ${plural(affected, what)}; the scheduler then works through them at its usual capacity.`,
      `Resync ${plural(affected, 'source')}`,
    );
    if (!ok) return;
    const result = await api('POST', '/api/resync', { filter });
    flash(`Resync requested for ${plural(result.affected, 'source')}.`);
  });
}

// ---------------------------------------------------------------- sources

async function resyncOne(name, button) {
  await act(button, async () => {
    await api('POST', `/api/sources/${enc(name)}/resync`);
    flash(`Resync of ${name} requested.`);
  });
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

function renderSources(page, query) {
  const filter = $('state-filter');
  if (filter.value !== query.state) filter.value = query.state;
  const search = $('search');
  if (document.activeElement !== search && search.value !== query.search) search.value = query.search;

  const rows = page.items.map((source) =>
    h(
      'tr',
      { 'data-source': source.name },
      h('td', {}, h('a', { href: `#/sources/${enc(source.name)}`, className: 'strong' }, source.name), h('div', { className: 'muted small' }, source.url)),
      stateCell(source),
      h('td', {}, badge(source.verificationState)),
      h('td', {}, when(source.lastSyncedAt, 'never')),
      h('td', {}, String(source.retryCount), source.nextRetryAt && source.state === 'failed' ? h('div', { className: 'muted small nowrap' }, 'next ', when(source.nextRetryAt)) : null),
      h('td', { className: 'error-text', title: source.lastFailure ?? '' }, shorten(source.lastFailure)),
      h('td', { className: 'right' }, h('button', { type: 'button', className: 'small', onclick: (event) => resyncOne(source.name, event.currentTarget) }, 'Resync')),
    ),
  );
  if (rows.length === 0) {
    const filtered = query.state || query.search;
    rows.push(h('tr', {}, h('td', { colspan: 7, className: 'empty' }, filtered ? 'No source matches this filter.' : 'No sources yet: add one above.')));
  }
  $('sources-table').tBodies[0].replaceChildren(...rows);

  const first = page.total === 0 ? 0 : page.offset + 1;
  const last = Math.min(page.offset + page.items.length, page.total);
  $('page-info').textContent = `${first}–${last} of ${page.total}`;
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

// ---------------------------------------------------------------- one source

function facts(list, pairs) {
  list.replaceChildren(...pairs.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]));
}

function renderSource(name, source) {
  $('source-title').textContent = name;
  const stateBadge = $('source-state');
  $('source-resync').dataset.name = name;
  if (!source) {
    stateBadge.className = 'badge failed';
    stateBadge.textContent = 'not found';
    facts($('source-facts'), [['', 'There is no source with this name.']]);
    facts($('source-lease'), []);
    $('source-error-panel').hidden = true;
    $('attempts-table').tBodies[0].replaceChildren();
    return;
  }
  stateBadge.className = `badge ${source.state}`;
  stateBadge.textContent = source.state;
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
  $('source-error').textContent = source.lastFailure ?? '';

  const attempts = (source.attempts ?? []).map((attempt) =>
    h(
      'tr',
      {},
      h('td', {}, when(attempt.startedAt)),
      h('td', {}, attempt.trigger),
      h('td', {}, attempt.result ? badge(attempt.result) : badge('running', 'started')),
      h('td', {}, duration(attempt.durationMs)),
      h('td', {}, attempt.refsChanged === null || attempt.refsChanged === undefined ? '—' : String(attempt.refsChanged)),
      h('td', { className: 'error-text', title: attempt.error ?? '' }, shorten(attempt.error)),
    ),
  );
  if (attempts.length === 0) attempts.push(h('tr', {}, h('td', { colspan: 6, className: 'empty' }, 'No attempts yet.')));
  $('attempts-table').tBodies[0].replaceChildren(...attempts);
}

// ---------------------------------------------------------------- imports

/** The stages of an import, in order (importer/types.ts STAGES). */
const STAGES = ['repository', 'base_data', 'pull_requests', 'collaborators', 'issues', 'events', 'notes', 'reviews', 'attachments', 'protected_branches', 'finish'];

function importRunning(status) {
  return status.state === 'pending' || status.state === 'started';
}

/** `issues (5 of 11)`; a stage this page does not know is shown as it is. */
function stageText(stage) {
  const index = STAGES.indexOf(stage);
  return index < 0 ? stage : `${stage} (${index + 1} of ${STAGES.length})`;
}

/** What the server takes (importer/store/imports.ts): a sync of a finished or running import, or of a failed or cancelled sync. */
function canSync(status) {
  return status.state !== 'failed' && status.state !== 'cancelled' ? true : status.mode === 'sync';
}

function canResume(status) {
  return status.state === 'failed' || status.state === 'cancelled';
}

function sum(counts) {
  return Object.values(counts ?? {}).reduce((total, n) => total + n, 0);
}

/** A bar whose fill is value/total, with its own total per row. */
function fillTrack(label, value, total, kind) {
  const fill = h('span', { className: `fill ${kind}` });
  fill.style.width = `${total > 0 ? Math.min(100, (value / total) * 100) : 0}%`; // CSSOM: allowed by the CSP
  return h('span', { className: 'bar-track', role: 'img', 'aria-label': `${label}: ${value} of ${total}` }, fill);
}

/** A coarse distance to a time: `45 s`, `12 min`, then as span() says. */
function roughly(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return span(ms);
}

function resetsText(value) {
  const date = toDate(value);
  if (!date) return h('span', { className: 'muted' }, 'no reset time');
  const delta = date.getTime() - Date.now();
  return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, delta > 0 ? `resets in ${roughly(delta)}` : `reset ${roughly(delta)} ago`);
}

function renderImports(list) {
  const rows = list.map((status) =>
    h(
      'tr',
      { 'data-import': status.name },
      h('td', {}, h('a', { href: `#/imports/${enc(status.name)}`, className: 'strong' }, status.name), h('div', { className: 'muted small' }, `${status.owner}/${status.repo}`)),
      h('td', {}, badge(status.state), status.mode === 'sync' ? badge('sync', 'muted') : null),
      h('td', {}, stageText(status.stage), h('div', { className: 'muted small' }, `run ${status.run}`)),
      h(
        'td',
        { className: 'nowrap' },
        `${sum(status.counts.imported)} imported`,
        status.failures.length ? h('div', { className: 'error-text small' }, `${status.failures.length} failed`) : null,
      ),
      h('td', {}, when(status.startedAt, 'not yet')),
      h('td', {}, status.durationS === null ? '—' : duration(status.durationS * 1000)),
      h('td', { className: 'error-text', title: status.failure ?? '' }, shorten(status.failure)),
    ),
  );
  if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 7, className: 'empty' }, 'No imports yet: start one with forgesync import github <owner>/<repo>.')));
  $('imports-table').tBodies[0].replaceChildren(...rows);
}

function sourceFact(source) {
  if (!source) return h('span', { className: 'muted' }, 'none');
  return [h('a', { href: `#/sources/${enc(source.name)}` }, source.name), ' ', badge(source.state), h('div', { className: 'muted small' }, 'last synced ', when(source.lastSyncedAt, 'never'))];
}

function renderImport(name, status) {
  $('import-title').textContent = name;
  const stateBadge = $('import-state');
  for (const id of ['import-sync', 'import-resume', 'import-cancel']) $(id).dataset.name = name;
  if (!status) {
    stateBadge.className = 'badge failed';
    stateBadge.textContent = 'not found';
    for (const id of ['import-sync', 'import-resume', 'import-cancel']) $(id).hidden = true;
    facts($('import-facts'), [['', 'There is no import with this name.']]);
    for (const id of ['import-requests', 'import-sources']) facts($(id), []);
    for (const id of ['import-counts', 'import-rate']) $(id).replaceChildren();
    $('import-failure-panel').hidden = true;
    $('import-failures-count').textContent = '';
    $('import-failures').tBodies[0].replaceChildren();
    return;
  }
  stateBadge.className = `badge ${status.state}`;
  stateBadge.textContent = status.state;
  $('import-sync').hidden = !canSync(status);
  $('import-resume').hidden = !canResume(status);
  $('import-cancel').hidden = status.state === 'cancelled';
  $('import-cancel').dataset.project = `${status.owner}/${status.repo}`;

  const index = STAGES.indexOf(status.stage);
  facts($('import-facts'), [
    ['Project', `${status.owner}/${status.repo}`],
    ['API URL', h('code', {}, status.apiUrl)],
    ['Stage', [h('span', { id: 'import-stage' }, stageText(status.stage)), index < 0 ? null : fillTrack('stage', index + 1, STAGES.length, status.state)]],
    ['Mode', `${status.mode} · run ${status.run}`],
    ['Started', when(status.startedAt, 'not yet')],
    ['Finished', when(status.finishedAt, importRunning(status) ? 'not yet' : '—')],
    ['Duration', status.durationS === null ? '—' : duration(status.durationS * 1000)],
    ['Next sync', when(status.nextSyncAt, 'none scheduled')],
    ['Credentials', status.credentials.length ? status.credentials.join(', ') : h('span', { className: 'muted' }, 'none (anonymous)')],
    ['Concurrency', String(status.concurrency)],
  ]);
  const requests = status.requests;
  facts($('import-requests'), [
    ['Total', h('span', { 'data-request': 'total' }, String(requests.total))],
    ['Counted', h('span', { 'data-request': 'counted' }, String(requests.counted))],
    ['Not modified', h('span', { 'data-request': 'notModified' }, String(requests.notModified))],
    ['Retried', h('span', { 'data-request': 'retried' }, String(requests.retried))],
    ['Rate-limit waits', [h('span', { 'data-request': 'rateLimitWaits' }, String(requests.rateLimitWaits)), status.rateLimitWaitS > 0 ? ` (${duration(status.rateLimitWaitS * 1000)})` : null]],
  ]);

  const rate = status.rate.map((budget) => {
    const label = budget.credential ?? 'anonymous';
    const known = budget.limit !== null && budget.remaining !== null;
    const share = known && budget.limit > 0 ? budget.remaining / budget.limit : 1;
    return h(
      'div',
      { className: 'bar-row rate', 'data-credential': label },
      h('span', { className: 'bar-label' }, label),
      known ? fillTrack(`${label} budget`, budget.remaining, budget.limit, share < 0.05 ? 'failed' : share < 0.2 ? 'missing' : 'synced') : h('span', { className: 'muted small' }, 'no rate limit reported'),
      h('span', { className: 'bar-value' }, known ? `${budget.remaining} / ${budget.limit}` : '—'),
      h('span', { className: 'bar-note muted small' }, resetsText(budget.resetAt)),
    );
  });
  $('import-rate').replaceChildren(...(rate.length ? rate : [h('p', { className: 'muted' }, 'No answer from the API yet.')]));

  facts($('import-sources'), [
    ['Repository', sourceFact(status.sources.repository)],
    ['Wiki', sourceFact(status.sources.wiki)],
  ]);

  $('import-failure-panel').hidden = !status.failure;
  $('import-failure').textContent = status.failure ?? '';

  // Fetched is imported plus what failed: a short bar is a type with failures.
  const { fetched, imported } = status.counts;
  const types = Object.keys(fetched).filter((type) => fetched[type] > 0);
  const counts = types.map((type) => {
    const done = imported[type] ?? 0;
    return h(
      'div',
      { className: 'bar-row wide', 'data-type': type },
      h('span', { className: 'bar-label' }, type),
      fillTrack(type, done, fetched[type], done >= fetched[type] ? 'synced' : done > 0 ? 'missing' : 'failed'),
      h('span', { className: 'bar-value', title: 'imported / fetched' }, `${done} / ${fetched[type]}`),
    );
  });
  $('import-counts').replaceChildren(...(counts.length ? counts : [h('p', { className: 'muted' }, 'Nothing fetched yet.')]));

  $('import-failures-count').textContent = status.failures.length ? `(${status.failures.length})` : '';
  const failures = status.failures.map((failure) =>
    h(
      'tr',
      { 'data-failure-type': failure.type },
      h('td', {}, failure.type),
      h('td', { className: 'break' }, /^https?:\/\//i.test(failure.id) ? h('a', { href: failure.id, rel: 'noopener noreferrer', target: '_blank' }, failure.id) : failure.id),
      h('td', { className: 'error-text' }, failure.error),
    ),
  );
  if (failures.length === 0) failures.push(h('tr', {}, h('td', { colspan: 3, className: 'empty' }, 'No object failed.')));
  $('import-failures').tBodies[0].replaceChildren(...failures);
}

async function syncImport(name, button) {
  await act(button, async () => {
    await api('POST', `/api/imports/${enc(name)}/sync`);
    flash(`Sync of ${name} requested.`);
  });
}

async function resumeImport(name, button) {
  await act(button, async () => {
    await api('POST', `/api/imports/${enc(name)}/resume`);
    flash(`Resume of ${name} requested.`);
  });
}

async function cancelImport(name, button) {
  const ok = await confirmDialog(
    'Cancel this import?',
    `${name} (${button.dataset.project}) stops at its next write and no scheduled sync starts; Resume continues it where it stopped.`,
    'Cancel import',
  );
  if (!ok) return;
  await act(button, async () => {
    const status = await api('POST', `/api/imports/${enc(name)}/cancel`);
    flash(status.state === 'cancelled' ? `Cancelled ${name}.` : `${name} is ${status.state}.`, status.state === 'cancelled' ? 'ok' : 'error');
  });
}

// ---------------------------------------------------------------- feeds (feeds.js)

const feeds = feedPages({ h, $, api, ApiError, enc, act, flash, badge, when, span, shorten, plural, facts });

// ---------------------------------------------------------------- leases

/** Time left on a lease: by the server's clock (expiresInMs) when it says, else by ours. */
function timeLeft(lease) {
  const date = toDate(lease.expiresAt);
  const left = typeof lease.expiresInMs === 'number' ? lease.expiresInMs : date ? date.getTime() - Date.now() : null;
  if (left === null) return '—';
  if (left <= 0) return h('span', { className: 'error-text' }, 'lapsing');
  return h('time', { datetime: date?.toISOString(), title: date?.toLocaleString() }, span(left));
}

async function forceRelease(lease, button) {
  const ok = await confirmDialog(
    'Force release this lease?',
    `${lease.key} is held by ${holder(lease.owner)} with fence ${lease.fence}. Only that holder is released; if it is still alive it loses the lease and stops its work.`,
    'Force release',
  );
  if (!ok) return;
  await act(button, async () => {
    const { released } = await api('POST', `/api/leases/${enc(lease.key)}/release`, { fence: lease.fence });
    flash(released ? `Released ${lease.key}.` : `${lease.key} was not released: it has another holder (or none) by now.`, released ? 'ok' : 'error');
  });
}

function renderLeases(data) {
  const leases = Array.isArray(data) ? data : data.items;
  const rows = leases.map((lease) =>
    h(
      'tr',
      { 'data-lease': lease.key },
      h('td', {}, h('code', {}, lease.key)),
      h('td', {}, holder(lease.owner)),
      h('td', {}, String(lease.fence)),
      h('td', {}, lease.owner?.acquiredAt ? span(Date.now() - toDate(lease.owner.acquiredAt).getTime()) : '—'),
      h('td', {}, timeLeft(lease)),
      h('td', { className: 'right' }, h('button', { type: 'button', className: 'small danger', onclick: (event) => forceRelease(lease, event.currentTarget) }, 'Force release')),
    ),
  );
  if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 6, className: 'empty' }, 'No lease is held right now.')));
  $('leases-table').tBodies[0].replaceChildren(...rows);
}

// ---------------------------------------------------------------- wiring

/**
 * `forgesync serve` prints the dashboard's address with its token in the fragment
 * (`/#token=…`), which never reaches the server: kept for this tab, then removed
 * from the address bar and the history.
 */
function takeTokenFromAddress() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  history.replaceState(null, '', location.pathname + location.search);
}

function start() {
  takeTokenFromAddress();
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const value = $('token-input').value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $('token-input').value = '';
    waitingForToken = false;
    refresh();
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    refresh();
  });
  $('add-form').addEventListener('submit', addSource);
  $('resync-failed').addEventListener('click', (event) => bulkResync('failed', event.currentTarget));
  $('resync-all').addEventListener('click', (event) => bulkResync('all', event.currentTarget));
  $('source-resync').addEventListener('click', (event) => resyncOne(event.currentTarget.dataset.name, event.currentTarget));
  $('import-sync').addEventListener('click', (event) => syncImport(event.currentTarget.dataset.name, event.currentTarget));
  $('import-resume').addEventListener('click', (event) => resumeImport(event.currentTarget.dataset.name, event.currentTarget));
  $('import-cancel').addEventListener('click', (event) => cancelImport(event.currentTarget.dataset.name, event.currentTarget));
  feeds.wire();

  const query = () => sourcesQuery(currentRoute().params);
  $('filter-form').addEventListener('submit', (event) => event.preventDefault());
  $('state-filter').addEventListener('change', (event) => goToSources({ ...query(), state: event.currentTarget.value, offset: 0 }));
  let searchTimer;
  $('search').addEventListener('input', (event) => {
    clearTimeout(searchTimer);
    const value = event.currentTarget.value.trim();
    searchTimer = setTimeout(() => goToSources({ ...query(), search: value, offset: 0 }), 250);
  });
  $('prev-page').addEventListener('click', () => goToSources({ ...query(), offset: Math.max(0, query().offset - PAGE_SIZE) }));
  $('next-page').addEventListener('click', () => goToSources({ ...query(), offset: query().offset + PAGE_SIZE }));

  window.addEventListener('hashchange', () => {
    if (!waitingForToken) refresh();
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && !waitingForToken) refresh();
  });
  refresh();
}

start();
