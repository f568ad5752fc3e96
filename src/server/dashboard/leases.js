// forgesync dashboard: the Leases page (#/leases, GET /api/leases): every live
// holder with its fence and time left, and Force release (POST
// /api/leases/<key>/release with the fence shown, after a confirmation). Its API
// is the server's own (server/routes/leases.ts), so the page lives beside it.

import { act, confirmDialog, flash } from '/dashboard/actions.js';
import { api, enc } from '/dashboard/api.js';
import { $, h, patchRows, table } from '/dashboard/dom.js';
import { holder, span, timeLeft, toDate } from '/dashboard/format.js';

function markup() {
  return h(
    'section',
    { id: 'leases-view', hidden: true },
    h('h1', {}, 'Leases'),
    h('p', { className: 'muted' }, 'Live holders. Force release frees a lease left behind by a dead worker; it only releases the holder with the fence shown.'),
    h('div', { className: 'panel flush' }, table('leases-table', ['Key', 'Holder', 'Fence', 'Held for', 'Time left', ''])),
  );
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

function render(_route, data) {
  const leases = Array.isArray(data) ? data : data.items;
  const rows = leases.map((lease) =>
    h(
      'tr',
      { key: lease.key, 'data-lease': lease.key },
      h('td', {}, h('code', {}, lease.key)),
      h('td', {}, holder(lease.owner)),
      h('td', {}, String(lease.fence)),
      h('td', {}, lease.owner?.acquiredAt ? span(Date.now() - toDate(lease.owner.acquiredAt).getTime()) : '—'),
      h('td', {}, timeLeft(lease)),
      h('td', { className: 'right' }, h('button', { type: 'button', className: 'small danger', onclick: (event) => forceRelease(lease, event.currentTarget) }, 'Force release')),
    ),
  );
  patchRows($('leases-table'), rows, 6, 'No lease is held right now.');
}

export default {
  name: 'leases',
  label: 'Leases',
  href: '#/leases',
  route: (path) => (path === '/leases' ? { view: 'leases' } : null),
  views: {
    leases: { markup, load: () => api('GET', '/api/leases'), render },
  },
};
