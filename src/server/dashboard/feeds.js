// forgesync dashboard: the Feeds pages (#/feeds, #/feeds/<name>). Plain browser
// JavaScript like app.js, which imports this file and hands it its helpers.
// As there, every value from the API reaches the DOM through textContent or
// attributes set on elements made with createElement; never through innerHTML.

/** The outcomes of a feed's run (feeds/store.ts FeedRun) and the badge colour of each. */
const OUTCOME_KINDS = { delivered: 'synced', running: 'started', retrying: 'missing', failed: 'failed', lost: 'failed', disabled: 'failed', paused: 'paused' };

/**
 * The feeds list and one feed's page, over app.js's helpers:
 * `{ h, $, api, ApiError, enc, act, flash, badge, when, span, shorten, plural, facts }`.
 * Returns what app.js's refresh loop and wiring call.
 */
export function feedPages({ h, $, api, ApiError, enc, act, flash, badge, when, span, shorten, plural, facts }) {
  const notFound = (fallback) => (error) => {
    if (error instanceof ApiError && error.status === 404) return fallback;
    throw error;
  };

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

  function renderList(list) {
    const rows = list.map((status) =>
      h(
        'tr',
        { 'data-feed': status.name },
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
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 8, className: 'empty' }, 'No feeds yet: add one with forgesync feed add <name> --sink <url>.')));
    $('feeds-table').tBodies[0].replaceChildren(...rows);
  }

  // ---------------------------------------------------------------- one feed

  const DETAIL_BUTTONS = ['feed-pause', 'feed-resume', 'feed-sync', 'feed-resync', 'feed-retry'];

  function renderFeed(name, data) {
    $('feed-title').textContent = name;
    for (const id of DETAIL_BUTTONS) $(id).dataset.name = name;
    const status = data?.status;
    if (!status) {
      $('feed-state').replaceChildren(badge('not found', 'failed'));
      for (const id of DETAIL_BUTTONS) $(id).hidden = true;
      facts($('feed-facts'), [['', 'There is no feed with this name.']]);
      for (const id of ['feed-progress', 'feed-run']) facts($(id), []);
      $('feed-error-panel').hidden = true;
      $('feed-dead-count').textContent = '';
      $('feed-dead-letters').tBodies[0].replaceChildren();
      return;
    }
    $('feed-state').replaceChildren(...stateOf(status, false));
    $('feed-pause').hidden = canResume(status);
    $('feed-resume').hidden = !canResume(status);
    $('feed-sync').hidden = false;
    $('feed-resync').hidden = false;

    $('feed-error-panel').hidden = status.disabled === null && status.lastError === null;
    $('feed-disabled').hidden = status.disabled === null;
    $('feed-disabled').textContent = status.disabled ?? '';
    $('feed-error').textContent = status.lastError ?? '';
    $('feed-retry-at').replaceChildren(...(status.retryAt ? ['next try ', when(status.retryAt)] : []));

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
    $('feed-dead-count').textContent = letters.length ? `(${letters.length})` : '';
    $('feed-retry').hidden = letters.length === 0;
    const rows = letters.map((letter) =>
      h(
        'tr',
        { 'data-seq': letter.seq },
        h('td', {}, String(letter.seq)),
        h('td', {}, letter.type ?? h('span', { className: 'muted' }, 'pruned')),
        h('td', { className: 'break' }, letter.subject ?? h('span', { className: 'muted', title: 'the change key' }, letter.key)),
        h('td', {}, String(letter.attempts)),
        h('td', { className: 'error-text', title: letter.lastError ?? '' }, shorten(letter.lastError, 200)),
      ),
    );
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 5, className: 'empty' }, 'No dead letters.')));
    $('feed-dead-letters').tBodies[0].replaceChildren(...rows);
  }

  return {
    /** The data of a feeds route, fetched by the refresh loop: the list, or `{ status, deadLetters }` (status null: no such feed). */
    async load(route) {
      if (route.view === 'feeds') return api('GET', '/api/feeds');
      const path = `/api/feeds/${enc(route.name)}`;
      const [status, deadLetters] = await Promise.all([api('GET', path).catch(notFound(null)), api('GET', `${path}/dead-letters`).catch(notFound([]))]);
      return { status, deadLetters };
    },
    working(route, data) {
      return route.view === 'feeds' ? data.some(feedWorking) : Boolean(data.status && feedWorking(data.status));
    },
    render(route, data) {
      if (route.view === 'feeds') renderList(data);
      else renderFeed(route.name, data);
    },
    /** The buttons of a feed's page (they carry the feed's name in data-name). */
    wire() {
      const actions = { 'feed-pause': pause, 'feed-resume': resume, 'feed-sync': sync, 'feed-resync': resync, 'feed-retry': retryDeadLetters };
      for (const [id, action] of Object.entries(actions)) $(id).addEventListener('click', (event) => action(event.currentTarget.dataset.name, event.currentTarget));
    },
  };
}
