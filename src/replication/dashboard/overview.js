// forgesync dashboard: the Overview page (#/, and any address no page claims):
// sources by state and by verification, the scheduler and its workers, and the
// bulk resyncs. Its data is GET /api/overview, which the shell fetches on every
// refresh anyway (see app.js) and hands over as `context.overview`.

import { act, confirmDialog, flash } from '/dashboard/actions.js';
import { api } from '/dashboard/api.js';
import { $, h, patch, setText } from '/dashboard/dom.js';
import { plural } from '/dashboard/format.js';

function markup() {
  return h(
    'section',
    { id: 'overview-view', hidden: true },
    h('h1', {}, 'Overview'),
    h(
      'div',
      { className: 'cards' },
      h('div', { className: 'panel' }, h('h2', {}, 'Replication'), h('div', { id: 'state-bars', className: 'bars' }), h('p', { id: 'total-text', className: 'muted total' })),
      h('div', { className: 'panel' }, h('h2', {}, 'Verification'), h('div', { id: 'verification-bars', className: 'bars' })),
      h(
        'div',
        { className: 'panel' },
        h('h2', {}, 'Workers'),
        h(
          'dl',
          { className: 'facts' },
          h('dt', {}, 'Scheduler'),
          h('dd', {}, h('span', { id: 'scheduler-state', className: 'badge' })),
          h('dt', {}, 'Running'),
          h('dd', { id: 'capacity-text' }),
          h('dt', {}, 'Queued'),
          h('dd', { id: 'queued-text' }),
        ),
        h('div', { id: 'capacity-bar', className: 'bars' }),
      ),
    ),
    h(
      'div',
      { className: 'panel' },
      h('h2', {}, 'Bulk actions'),
      h('p', { className: 'muted' }, 'Each asks first how many sources it would touch.'),
      h(
        'div',
        { className: 'actions' },
        h('button', { type: 'button', id: 'resync-failed', onclick: (event) => bulkResync('failed', event.currentTarget) }, 'Resync failed…'),
        h('button', { type: 'button', id: 'resync-all', className: 'secondary', onclick: (event) => bulkResync('all', event.currentTarget) }, 'Resync all…'),
      ),
    ),
  );
}

/** Rows of bars, keyed by label: `{ label, value, kind, href? }` each, against `total`. */
function bars(container, rows, total) {
  patch(
    container,
    rows.map(({ label, value, kind, href }) => {
      const fill = h('span', { className: `fill ${kind}` });
      fill.style.width = `${total > 0 ? Math.min(100, (value / total) * 100) : 0}%`; // CSSOM: allowed by the CSP
      return h(
        'div',
        { className: 'bar-row', key: label },
        href ? h('a', { className: 'bar-label', href }, label) : h('span', { className: 'bar-label' }, label),
        h('span', { className: 'bar-track', role: 'img', 'aria-label': `${label}: ${value} of ${total}` }, fill),
        h('span', { className: 'bar-value', 'data-count': kind }, String(value)),
      );
    }),
  );
}

function render(_route, { counts, scheduler, capacity }) {
  const total = counts.total;
  bars(
    $('state-bars'),
    ['synced', 'pending', 'started', 'failed'].map((state) => ({ label: state, value: counts[state], kind: state, href: `#/sources?state=${state}` })),
    total,
  );
  setText($('total-text'), `${plural(total, 'source')} in total`);
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
  setText(schedulerBadge, scheduler.state);
  setText($('capacity-text'), `${capacity.running} of ${capacity.capacity} workers`);
  setText($('queued-text'), plural(capacity.queued, 'job'));
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

export default {
  name: 'overview',
  label: 'Overview',
  href: '#/',
  route: (path) => (path === '/' || path === '' ? { view: 'overview' } : null),
  views: {
    overview: { markup, load: async (_route, context) => context.overview, render },
  },
};
