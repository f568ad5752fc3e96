// forgesync dashboard: the Feeds page. The list (#/feeds, GET /api/feeds: lag,
// acked/head, last run, holder, dead letters, full sync, with Pause/Resume, Sync
// and Resync on each row) and one feed (#/feeds/<name>: its status and its dead
// letters, GET /api/feeds/<name>[/dead-letters]) with Retry dead letters
// (POST /api/feeds/<name>/pause|resume|sync|resync|dead-letters/retry). A feed
// whose lease is held or whose full sync runs makes the page poll fast.

import { act, flash } from '/dashboard/actions.js';
import { api, enc, notFound } from '/dashboard/api.js';
import { listAndItem } from '/dashboard/route.js';
import { $, facts, h, patch, patchRows, setText, table } from '/dashboard/dom.js';
import { badge, plural, shorten, span, when } from '/dashboard/format.js';

/** The outcomes of a feed's run (feeds/store.ts FeedRun) and the badge colour of each. */
const OUTCOME_KINDS = { delivered: 'synced', running: 'started', retrying: 'missing', failed: 'failed', lost: 'failed', disabled: 'failed', paused: 'paused' };

/** A number with what it counts, the number alone in a span tests and users can find by `data-field`. */
const count = (field, n, text) => [h('span', { 'data-field': field }, String(n)), ` ${text}`];

// ---------------------------------------------------------------- what a status says

/**
 * Badges of a feed's state: paused and/or disabled (with its reason, cut short:
 * the whole of it is the tooltip and on the feed's page), running (with the
 * holder of its lease), else idle.
 */
function stateOf(status, details = true) {
  const parts = [];
  if (status.paused) parts.push(badge('paused'));
  if (status.disabled !== null) {
    parts.push(badge('disabled'));
    if (details) parts.push(h('div', { className: 'error-text small', title: status.disabled, 'data-field': 'disabled' }, shorten(status.disabled, 60)));
  }
  if (status.holder !== null) {
    parts.push(badge('running'));
    if (details) parts.push(h('div', { className: 'muted small' }, 'by ', h('span', { className: 'nowrap', 'data-field': 'holder' }, status.holder)));
  }
  if (parts.length === 0) parts.push(badge('idle'));
  return parts;
}

function lagOf(status) {
  const { changes, oldestAgeS } = status.lag;
  return [
    h('div', { className: 'nowrap' }, count('lag', changes, changes === 1 ? 'change' : 'changes')),
    changes === 0 ? h('div', { className: 'muted small' }, 'caught up') : h('div', { className: 'muted small nowrap' }, 'oldest ', h('span', { 'data-field': 'oldest' }, span(oldestAgeS * 1000)), ' old'),
  ];
}

function ackedOf(status) {
  return h('span', { className: 'nowrap', title: 'acknowledged / last change' }, h('span', { 'data-field': 'acked' }, String(status.ackedSeq)), ' / ', h('span', { 'data-field': 'head' }, String(status.headSeq)));
}

function lastRunOf(run) {
  if (!run) return h('span', { className: 'muted', 'data-field': 'lastRun' }, 'never');
  return [
    h('div', { className: 'nowrap', 'data-field': 'lastRun' }, run.operation, ' ', badge(run.outcome, OUTCOME_KINDS[run.outcome] ?? run.outcome)),
    h('div', { className: 'muted small nowrap' }, count('delivered', run.delivered, 'delivered'), ' · ', when(run.finishedAt)),
  ];
}

function heldOf(status, link) {
  const dead = h('span', { className: status.deadLetters > 0 ? 'error-text' : null }, count('deadLetters', status.deadLetters, status.deadLetters === 1 ? 'dead letter' : 'dead letters'));
  return [
    h('div', { className: 'nowrap' }, link && status.deadLetters > 0 ? h('a', { href: `#/feeds/${enc(status.name)}` }, dead) : dead),
    h('div', { className: 'muted small nowrap' }, count('retrying', status.retrying, 'retrying'), ' · ', count('skips', status.skips, status.skips === 1 ? 'skip' : 'skips')),
  ];
}

/** Running (begun, not finished: its progress), else requested, else a dash. */
function fullSyncOf({ fullSync }) {
  const { exported, head } = fullSync.progress;
  // `requested` stays true while the requested sync runs, so a running one says only that.
  if (fullSync.running) {
    return h(
      'div',
      { 'data-field': 'fullSync' },
      badge('running'),
      h('div', { className: 'muted small nowrap', 'data-field': 'progress' }, head === null ? `${exported} exported` : `${exported} exported, up to #${head}`),
    );
  }
  return h('div', { 'data-field': 'fullSync' }, fullSync.requested ? badge('requested') : h('span', { className: 'muted' }, '—'));
}

/** A working feed makes the page poll fast: someone holds its lease, or its full sync goes on (not held up by a pause or a disabled sink). */
function feedWorking(status) {
  return status.holder !== null || (status.fullSync.running && !status.paused && status.disabled === null);
}

// ---------------------------------------------------------------- actions

/** Resume for a paused or disabled feed (it re-enables the sink), Pause otherwise. */
const canResume = (status) => status.paused || status.disabled !== null;

async function pause(name, button) {
  await act(button, async () => {
    const status = await api('POST', `/api/feeds/${enc(name)}/pause`);
    flash(status.paused ? `Paused ${name}.` : `${name} is not paused.`, status.paused ? 'ok' : 'error');
  });
}

async function resume(name, button) {
  await act(button, async () => {
    await api('POST', `/api/feeds/${enc(name)}/resume`);
    flash(`Resumed ${name}.`);
  });
}

async function sync(name, button) {
  await act(button, async () => {
    await api('POST', `/api/feeds/${enc(name)}/sync`);
    flash(`Sync of ${name} requested.`);
  });
}

async function resync(name, button) {
  await act(button, async () => {
    await api('POST', `/api/feeds/${enc(name)}/resync`);
    flash(`Full sync of ${name} requested.`);
  });
}

async function retryDeadLetters(name, button) {
  await act(button, async () => {
    const { retried } = await api('POST', `/api/feeds/${enc(name)}/dead-letters/retry`);
    flash(retried > 0 ? `Sending ${plural(retried, 'dead letter')} of ${name} again.` : `${name} has no dead letters.`);
  });
}

function rowButtons(status) {
  const button = (label, action, className = 'small secondary') => h('button', { type: 'button', className, 'data-action': label.toLowerCase(), onclick: (event) => action(status.name, event.currentTarget) }, label);
  return h(
    'div',
    { className: 'actions stack' },
    canResume(status) ? button('Resume', resume, 'small') : button('Pause', pause),
    button('Sync', sync),
    button('Resync', resync),
  );
}

// ---------------------------------------------------------------- the list

function listMarkup() {
  return h(
    'section',
    { id: 'feeds-view', hidden: true },
    h('h1', {}, 'Feeds'),
    h('p', { className: 'muted' }, 'The change log exported to webhooks, NATS JetStream and files, each feed under its own lease. Lag counts the changes in scope not yet acknowledged, dead letters included.'),
    h('div', { className: 'panel flush' }, table('feeds-table', ['Name', 'State', 'Lag', 'Acked / head', 'Last run', 'Held back', 'Full sync', ''])),
  );
}

function renderList(_route, list) {
  const rows = list.map((status) =>
    h(
      'tr',
      { key: status.name, 'data-feed': status.name },
      h('td', {}, h('a', { href: `#/feeds/${enc(status.name)}`, className: 'strong' }, status.name), h('div', { className: 'muted small break', 'data-field': 'sink' }, status.sink)),
      h('td', { 'data-field': 'state' }, stateOf(status)),
      h('td', {}, lagOf(status)),
      h('td', {}, ackedOf(status)),
      h('td', {}, lastRunOf(status.lastRun)),
      h('td', {}, heldOf(status, true)),
      h('td', {}, fullSyncOf(status)),
      h('td', { className: 'right' }, rowButtons(status)),
    ),
  );
  patchRows($('feeds-table'), rows, 8, 'No feeds yet: add one with forgesync feed add <name> --sink <url>.');
}

// ---------------------------------------------------------------- one feed

const DETAIL_BUTTONS = ['feed-pause', 'feed-resume', 'feed-sync', 'feed-resync', 'feed-retry'];

function detailMarkup() {
  /** A button of the feed's page: it carries the feed's name in data-name (set by renderFeed). */
  const button = (id, label, action, className) => h('button', { type: 'button', id, className, onclick: (event) => action(event.currentTarget.dataset.name, event.currentTarget) }, label);
  const panel = (title, id) => h('div', { className: 'panel' }, h('h2', {}, title), h('dl', { id, className: 'facts' }));
  return h(
    'section',
    { id: 'feed-view', hidden: true },
    h('p', {}, h('a', { href: '#/feeds' }, '‹ Feeds')),
    h(
      'div',
      { className: 'title-row' },
      h('h1', { id: 'feed-title' }),
      h('span', { id: 'feed-state' }),
      h('span', { className: 'spacer' }),
      button('feed-pause', 'Pause', pause, 'secondary'),
      button('feed-resume', 'Resume', resume),
      button('feed-sync', 'Sync', sync),
      button('feed-resync', 'Resync', resync, 'secondary'),
    ),
    h(
      'div',
      { className: 'panel', id: 'feed-error-panel' },
      h('h2', {}, 'Last error ', h('span', { id: 'feed-retry-at', className: 'muted' })),
      h('pre', { id: 'feed-disabled' }),
      h('pre', { id: 'feed-error' }),
    ),
    h('div', { className: 'cards' }, panel('Feed', 'feed-facts'), panel('Progress', 'feed-progress'), panel('Last run', 'feed-run')),
    h(
      'div',
      { className: 'panel flush' },
      h('div', { className: 'title-row pad' }, h('h2', {}, 'Dead letters ', h('span', { id: 'feed-dead-count' })), h('span', { className: 'spacer' }), button('feed-retry', 'Retry dead letters', retryDeadLetters, 'small')),
      table('feed-dead-letters', ['Seq', 'Type', 'Subject', 'Attempts', 'Last error']),
    ),
  );
}

function renderFeed({ name }, data) {
  setText($('feed-title'), name);
  for (const id of DETAIL_BUTTONS) $(id).dataset.name = name;
  const status = data?.status;
  if (!status) {
    patch($('feed-state'), badge('not found', 'failed'));
    for (const id of DETAIL_BUTTONS) $(id).hidden = true;
    facts($('feed-facts'), [['', 'There is no feed with this name.']]);
    for (const id of ['feed-progress', 'feed-run']) facts($(id), []);
    $('feed-error-panel').hidden = true;
    setText($('feed-dead-count'), '');
    patch($('feed-dead-letters').tBodies[0]);
    return;
  }
  patch($('feed-state'), stateOf(status, false));
  $('feed-pause').hidden = canResume(status);
  $('feed-resume').hidden = !canResume(status);
  $('feed-sync').hidden = false;
  $('feed-resync').hidden = false;

  $('feed-error-panel').hidden = status.disabled === null && status.lastError === null;
  $('feed-disabled').hidden = status.disabled === null;
  setText($('feed-disabled'), status.disabled ?? '');
  setText($('feed-error'), status.lastError ?? '');
  patch($('feed-retry-at'), status.retryAt ? ['next try ', when(status.retryAt)] : []);

  facts($('feed-facts'), [
    ['Sink', h('code', {}, status.sink)],
    ['Types', status.types ? status.types.join(', ') : h('span', { className: 'muted' }, 'all')],
    ['Sources', status.sources ?? h('span', { className: 'muted' }, 'all')],
    ['Batch', String(status.batch)],
    ['Secret', status.secret ? h('code', {}, status.secret) : h('span', { className: 'muted' }, 'none')],
    ['Delivered', h('span', { 'data-field': 'delivered' }, String(status.delivered))],
  ]);
  facts($('feed-progress'), [
    ['Acked / head', ackedOf(status)],
    ['Lag', lagOf(status)],
    ['Holder', h('span', { 'data-field': 'holder' }, status.holder ?? '—')],
    ['Held back', heldOf(status, false)],
    ['Full sync', fullSyncOf(status)],
  ]);
  const run = status.lastRun;
  facts(
    $('feed-run'),
    run
      ? [
          ['Operation', run.operation],
          ['Outcome', badge(run.outcome, OUTCOME_KINDS[run.outcome] ?? run.outcome)],
          ['Delivered', String(run.delivered)],
          ['Started', when(run.startedAt)],
          ['Finished', when(run.finishedAt)],
        ]
      : [['', h('span', { className: 'muted' }, 'No run yet.')]],
  );

  const letters = data.deadLetters;
  setText($('feed-dead-count'), letters.length ? `(${letters.length})` : '');
  $('feed-retry').hidden = letters.length === 0;
  const rows = letters.map((letter) =>
    h(
      'tr',
      { key: letter.seq, 'data-seq': letter.seq },
      h('td', {}, String(letter.seq)),
      h('td', {}, letter.type ?? h('span', { className: 'muted' }, 'pruned')),
      h('td', { className: 'break' }, letter.subject ?? h('span', { className: 'muted', title: 'the change key' }, letter.key)),
      h('td', {}, String(letter.attempts)),
      h('td', { className: 'error-text', title: letter.lastError ?? '' }, shorten(letter.lastError, 200)),
    ),
  );
  patchRows($('feed-dead-letters'), rows, 5, 'No dead letters.');
}

/** One feed's status and dead letters (status null: no such feed). */
async function loadFeed({ name }) {
  const path = `/api/feeds/${enc(name)}`;
  const [status, deadLetters] = await Promise.all([api('GET', path).catch(notFound(null)), api('GET', `${path}/dead-letters`).catch(notFound([]))]);
  return { status, deadLetters };
}

export default {
  name: 'feeds',
  label: 'Feeds',
  href: '#/feeds',
  route: listAndItem('feeds', 'feeds', 'feed'),
  views: {
    feeds: { markup: listMarkup, load: () => api('GET', '/api/feeds'), working: (_route, list) => list.some(feedWorking), render: renderList },
    feed: { markup: detailMarkup, load: loadFeed, working: (_route, data) => Boolean(data.status && feedWorking(data.status)), render: renderFeed },
  },
};

