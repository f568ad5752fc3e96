// forgesync dashboard: the shell. Plain browser JavaScript in ES modules, no build
// step, no framework. It loads the pages listed in pages.js (which the server makes
// from the modules' definitions, see server/routes/dashboard.ts), puts their sections
// and navigation links on the page, asks for a token when the API wants one, and
// runs the refresh loop: every 2 s while work runs (or just after an action),
// every 10 s when all is idle or the tab is hidden, at once on navigation.
//
// A page module's default export (see src/replication/dashboard/overview.js, the
// smallest):
//   name    'feeds': its navigation link's data-nav, marked aria-current while
//           one of its views shows
//   label   'Feeds': the link's text; href '#/feeds': where it leads
//   route(path, params) → { view, …anything its views need } or null: whether an
//           address (`#<path>?<params>`) is this page's, and which of its views
//   views   { <view>: View }, each with its own <section id="<view>-view">
// and a View:
//   markup()                    → its <section id="<view>-view" hidden>, built once
//   async load(route, context)  → its data (context.overview: GET /api/overview)
//   working?(route, data)       → true while work it shows runs (poll fast)
//   render(route, data)         → updates its section in place (dom.js patch)
// Pages talk to the API and the user through the shared base: api.js, dom.js,
// format.js and actions.js.

import { connectShell } from './actions.js';
import { api, forgetToken, onUnauthorized, setToken, token } from './api.js';
import { $, h } from './dom.js';
import { PAGE_MODULES } from './pages.js';

const FAST_MS = 2_000; // while work runs, or just after an action
const SLOW_MS = 10_000; // when everything is idle
const AFTER_ACTION_MS = 15_000;

/** The page modules' default exports, in navigation order (set by start). */
let pages = [];
let timer;
let generation = 0;
let busyUntil = 0;
let waitingForToken = false;

// ---------------------------------------------------------------- routing

/** The page and view of the address; the first page's first view when no page claims it. */
function currentRoute() {
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  for (const page of pages) {
    const route = page.route(path, params);
    if (route) return { page, route };
  }
  const home = pages[0];
  return { page: home, route: { view: Object.keys(home.views)[0] } };
}

/** Shows one view's section (or the token form, page null) and marks its page's link. */
function show(view, page) {
  $('token-view').hidden = view !== 'token';
  for (const each of pages) for (const name of Object.keys(each.views)) $(`${name}-view`).hidden = name !== view;
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === page?.name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  $('sign-out').hidden = !token();
}

// ---------------------------------------------------------------- refresh loop

function askForToken(reason) {
  waitingForToken = true;
  clearTimeout(timer);
  $('token-reason').textContent = reason;
  show('token', null);
  $('refresh-status').textContent = '';
  $('token-input').focus();
}

async function refresh() {
  clearTimeout(timer);
  const mine = ++generation;
  const { page, route } = currentRoute();
  const view = page.views[route.view];
  let working = false;
  try {
    // Every refresh starts with the overview: whether work runs anywhere (then the
    // page polls fast, whatever it shows), and the first 401 brings the token form.
    const overview = await api('GET', '/api/overview');
    const { counts, capacity } = overview;
    working = counts.pending + counts.started > 0 || capacity.running + capacity.queued > 0;
    const data = await view.load(route, { overview });
    working ||= Boolean(view.working?.(route, data));
    if (mine !== generation) return; // a newer refresh (navigation, action) took over
    waitingForToken = false;
    show(route.view, page);
    view.render(route, data);
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

// ---------------------------------------------------------------- wiring

/**
 * `forgesync serve` prints the dashboard's address with its token in the fragment
 * (`/#token=…`), which never reaches the server: kept for this tab, then removed
 * from the address bar and the history.
 */
function takeTokenFromAddress() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return;
  setToken(decodeURIComponent(match[1]));
  history.replaceState(null, '', location.pathname + location.search);
}

/** The pages' links and sections, in the order of pages.js. */
function mountPages() {
  document.querySelector('header nav').replaceChildren(...pages.map((page) => h('a', { href: page.href, 'data-nav': page.name }, page.label)));
  document.querySelector('main').append(...pages.flatMap((page) => Object.values(page.views).map((view) => view.markup())));
}

async function start() {
  takeTokenFromAddress();
  pages = (await Promise.all(PAGE_MODULES.map((url) => import(url)))).map((module) => module.default);
  mountPages();
  onUnauthorized(askForToken);
  connectShell({
    refresh,
    acted() {
      busyUntil = Date.now() + AFTER_ACTION_MS;
      refresh();
    },
  });
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const value = $('token-input').value.trim();
    if (!value) return;
    setToken(value);
    $('token-input').value = '';
    waitingForToken = false;
    refresh();
  });
  $('sign-out').addEventListener('click', () => {
    forgetToken();
    refresh();
  });
  window.addEventListener('hashchange', () => {
    if (!waitingForToken) refresh();
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && !waitingForToken) refresh();
  });
  refresh();
}

start().catch((error) => {
  const status = $('refresh-status');
  status.className = 'error';
  status.textContent = `the dashboard did not load: ${error.message}`;
});
