// forgesync dashboard: the Imports page. The list (#/imports, GET /api/imports) and
// one import (#/imports/<name>, GET /api/imports/<name>: stage, counts, requests,
// rate budgets, git sources, failures) with Sync, Resume and Cancel (POST
// /api/imports/<name>/sync|resume|cancel). A pending or started import makes the
// page poll fast.

import { act, confirmDialog, flash } from '/dashboard/actions.js';
import { api, enc, notFound } from '/dashboard/api.js';
import { listAndItem } from '/dashboard/route.js';
import { $, facts, fillTrack, h, patch, patchRows, setText, table } from '/dashboard/dom.js';
import { badge, duration, roughly, shorten, toDate, when } from '/dashboard/format.js';

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

function resetsText(value) {
  const date = toDate(value);
  if (!date) return h('span', { className: 'muted' }, 'no reset time');
  const delta = date.getTime() - Date.now();
  return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, delta > 0 ? `resets in ${roughly(delta)}` : `reset ${roughly(delta)} ago`);
}

// ---------------------------------------------------------------- the list

function listMarkup() {
  return h(
    'section',
    { id: 'imports-view', hidden: true },
    h('h1', {}, 'Imports'),
    h('p', { className: 'muted' }, 'GitHub projects copied into forgesync: issues, pull requests, comments, reviews and files through the API, the repository and wiki as sources.'),
    h('div', { className: 'panel flush' }, table('imports-table', ['Name', 'State', 'Stage', 'Objects', 'Started', 'Duration', 'Failure'])),
  );
}

function renderList(_route, list) {
  const rows = list.map((status) =>
    h(
      'tr',
      { key: status.name, 'data-import': status.name },
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
  patchRows($('imports-table'), rows, 7, 'No imports yet: start one with forgesync import github <owner>/<repo>.');
}

// ---------------------------------------------------------------- one import

const BUTTONS = ['import-sync', 'import-resume', 'import-cancel'];

function detailMarkup() {
  const button = (id, label, action, className) => h('button', { type: 'button', id, className, onclick: (event) => action(event.currentTarget.dataset.name, event.currentTarget) }, label);
  const panel = (title, ...children) => h('div', { className: 'panel' }, h('h2', {}, title), ...children);
  return h(
    'section',
    { id: 'import-view', hidden: true },
    h('p', {}, h('a', { href: '#/imports' }, '‹ Imports')),
    h(
      'div',
      { className: 'title-row' },
      h('h1', { id: 'import-title' }),
      h('span', { id: 'import-state', className: 'badge' }),
      h('span', { className: 'spacer' }),
      button('import-sync', 'Sync', syncImport),
      button('import-resume', 'Resume', resumeImport),
      button('import-cancel', 'Cancel…', cancelImport, 'danger'),
    ),
    h('div', { className: 'panel', id: 'import-failure-panel' }, h('h2', {}, 'Failure'), h('pre', { id: 'import-failure' })),
    h(
      'div',
      { className: 'cards' },
      panel('Import', h('dl', { id: 'import-facts', className: 'facts' })),
      panel('Requests', h('dl', { id: 'import-requests', className: 'facts' }), h('h2', { className: 'gap' }, 'Rate budget'), h('div', { id: 'import-rate', className: 'bars' })),
      panel('Git sources', h('dl', { id: 'import-sources', className: 'facts' })),
    ),
    h('div', { className: 'panel' }, h('h2', {}, 'Objects ', h('span', { className: 'muted' }, 'imported / fetched')), h('div', { id: 'import-counts', className: 'bars' })),
    h('div', { className: 'panel flush' }, h('h2', { className: 'pad' }, 'Failures ', h('span', { id: 'import-failures-count' })), table('import-failures', ['Type', 'Id', 'Error'])),
  );
}

function sourceFact(source) {
  if (!source) return h('span', { className: 'muted' }, 'none');
  return [h('a', { href: `#/sources/${enc(source.name)}` }, source.name), ' ', badge(source.state), h('div', { className: 'muted small' }, 'last synced ', when(source.lastSyncedAt, 'never'))];
}

function renderNotFound() {
  const stateBadge = $('import-state');
  stateBadge.className = 'badge failed';
  setText(stateBadge, 'not found');
  for (const id of BUTTONS) $(id).hidden = true;
  facts($('import-facts'), [['', 'There is no import with this name.']]);
  for (const id of ['import-requests', 'import-sources']) facts($(id), []);
  for (const id of ['import-counts', 'import-rate']) patch($(id));
  $('import-failure-panel').hidden = true;
  setText($('import-failures-count'), '');
  patch($('import-failures').tBodies[0]);
}

function renderImport({ name }, status) {
  setText($('import-title'), name);
  for (const id of BUTTONS) $(id).dataset.name = name;
  if (!status) return renderNotFound();
  const stateBadge = $('import-state');
  stateBadge.className = `badge ${status.state}`;
  setText(stateBadge, status.state);
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
    ['Secondary-limit answers', h('span', { 'data-request': 'secondaryLimited' }, String(requests.secondaryLimited ?? 0))],
    ['Webhook refreshes waiting', [h('span', { 'data-request': 'refreshesWaiting' }, String(status.refreshes?.waiting ?? 0)), status.refreshes?.oldestWaitingS ? ` (oldest ${duration(status.refreshes.oldestWaitingS * 1000)})` : null]],
  ]);
  renderRate(status.rate);
  facts($('import-sources'), [
    ['Repository', sourceFact(status.sources.repository)],
    ['Wiki', sourceFact(status.sources.wiki)],
  ]);
  $('import-failure-panel').hidden = !status.failure;
  setText($('import-failure'), status.failure ?? '');
  renderCounts(status.counts);
  renderFailures(status.failures);
}

function renderRate(rate) {
  const rows = rate.map((budget) => {
    const label = budget.credential ?? 'anonymous';
    const known = budget.limit !== null && budget.remaining !== null;
    const share = known && budget.limit > 0 ? budget.remaining / budget.limit : 1;
    return h(
      'div',
      { className: 'bar-row rate', key: label, 'data-credential': label },
      h('span', { className: 'bar-label' }, label),
      known ? fillTrack(`${label} budget`, budget.remaining, budget.limit, share < 0.05 ? 'failed' : share < 0.2 ? 'missing' : 'synced') : h('span', { className: 'muted small' }, 'no rate limit reported'),
      h('span', { className: 'bar-value' }, known ? `${budget.remaining} / ${budget.limit}` : '—'),
      h('span', { className: 'bar-note muted small' }, resetsText(budget.resetAt)),
    );
  });
  patch($('import-rate'), rows.length ? rows : h('p', { className: 'muted' }, 'No answer from the API yet.'));
}

/** Fetched is imported plus what failed: a short bar is a type with failures. */
function renderCounts({ fetched, imported }) {
  const types = Object.keys(fetched).filter((type) => fetched[type] > 0);
  const rows = types.map((type) => {
    const done = imported[type] ?? 0;
    return h(
      'div',
      { className: 'bar-row wide', key: type, 'data-type': type },
      h('span', { className: 'bar-label' }, type),
      fillTrack(type, done, fetched[type], done >= fetched[type] ? 'synced' : done > 0 ? 'missing' : 'failed'),
      h('span', { className: 'bar-value', title: 'imported / fetched' }, `${done} / ${fetched[type]}`),
    );
  });
  patch($('import-counts'), rows.length ? rows : h('p', { className: 'muted' }, 'Nothing fetched yet.'));
}

function renderFailures(failures) {
  setText($('import-failures-count'), failures.length ? `(${failures.length})` : '');
  const rows = failures.map((failure) =>
    h(
      'tr',
      { key: `${failure.type} ${failure.id}`, 'data-failure-type': failure.type },
      h('td', {}, failure.type),
      h('td', { className: 'break' }, /^https?:\/\//i.test(failure.id) ? h('a', { href: failure.id, rel: 'noopener noreferrer', target: '_blank' }, failure.id) : failure.id),
      h('td', { className: 'error-text' }, failure.error),
    ),
  );
  patchRows($('import-failures'), rows, 3, 'No object failed.');
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

export default {
  name: 'imports',
  label: 'Imports',
  href: '#/imports',
  route: listAndItem('imports', 'imports', 'import'),
  views: {
    imports: { markup: listMarkup, load: () => api('GET', '/api/imports'), working: (_route, list) => list.some(importRunning), render: renderList },
    import: {
      markup: detailMarkup,
      load: ({ name }) => api('GET', `/api/imports/${enc(name)}`).catch(notFound(null)),
      working: (_route, status) => Boolean(status && importRunning(status)),
      render: renderImport,
    },
  },
};
