// forgesync dashboard, shared base: making elements and updating the page in place.
//
// A page renders by building a fresh element tree with h() (cheap: a table of 50
// rows) and handing it to patch(), which carries the differences into the live
// DOM: rows with a `key` are matched by key (updated in place, added, removed),
// other children by position and tag. Elements that stay are the same objects, so
// focus, text selection, an open <details> and scroll positions stay where the
// user left them, with no page having to save and restore them.
//
// Every value from the API reaches the DOM as text (text nodes, textContent) or as
// attributes of elements made with createElement; never through innerHTML.

export const $ = (id) => document.getElementById(id);

/** Where h() keeps an element's key (rows: a source's name, a feed's name, …). */
const KEY = Symbol('key');
/** Where h() keeps the names of the `on…` handler properties it set, so patch() can carry them over. */
const HANDLERS = Symbol('handlers');

/**
 * Makes an element: h('a', { href, className, title, key, onclick }, ...children).
 * Strings and numbers become text nodes; null, undefined and false are skipped;
 * arrays are flattened. `key` names a row among its siblings for patch(); `on…`
 * props are set as handler properties (el.onclick = fn), which the CSP allows.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'key') element[KEY] = String(value);
    else if (name === 'className') element.className = value;
    else if (name.startsWith('on')) {
      element[name] = value;
      (element[HANDLERS] ??= []).push(name);
    } else element.setAttribute(name, value === true ? '' : String(value));
  }
  element.append(...nodesOf(children));
  return element;
}

function nodesOf(children) {
  const nodes = [];
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    nodes.push(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return nodes;
}

/**
 * Makes `parent`'s children look like `children` (what h() built), keeping every
 * live node that matches: the keyed update the refresh loop relies on. Accepts
 * what h() accepts as children.
 */
export function patch(parent, ...children) {
  const fresh = nodesOf(children);
  const wanted = new Map();
  for (const node of fresh) if (node[KEY] !== undefined) wanted.set(node[KEY], node);
  // Rows that leave go first, so that the rows after them need not move.
  for (const live of [...parent.childNodes]) {
    if (live[KEY] === undefined) continue;
    const next = wanted.get(live[KEY]);
    if (!next || !sameKind(live, next)) live.remove();
  }
  const liveByKey = new Map();
  for (const live of parent.childNodes) if (live[KEY] !== undefined) liveByKey.set(live[KEY], live);

  fresh.forEach((next, index) => {
    const here = parent.childNodes[index] ?? null;
    let match = null;
    if (next[KEY] !== undefined) {
      match = liveByKey.get(next[KEY]) ?? null;
      liveByKey.delete(next[KEY]); // a key given twice: the second one is a new row
    } else if (here && here[KEY] === undefined && sameKind(here, next)) match = here;
    const node = match ? update(match, next) : next;
    if (node !== here) move(parent, node, here);
  });
  while (parent.childNodes.length > fresh.length) parent.lastChild.remove();
}

function sameKind(a, b) {
  return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
}

/** Moves a row that changed places; moveBefore (where the browser has it) keeps its focus too. */
function move(parent, node, before) {
  if (typeof parent.moveBefore === 'function' && node.isConnected && parent.isConnected) parent.moveBefore(node, before);
  else parent.insertBefore(node, before);
}

/** Carries `next`'s text, attributes, style, handlers and children into `live`; returns `live`. */
function update(live, next) {
  if (live.nodeType !== Node.ELEMENT_NODE) {
    if (live.data !== next.data) live.data = next.data;
    return live;
  }
  for (const { name } of [...live.attributes]) if (name !== 'style' && !next.hasAttribute(name)) live.removeAttribute(name);
  for (const { name, value } of next.attributes) if (name !== 'style' && live.getAttribute(name) !== value) live.setAttribute(name, value);
  updateStyle(live.style, next.style);
  for (const name of live[HANDLERS] ?? []) if (!next[HANDLERS]?.includes(name)) live[name] = null;
  for (const name of next[HANDLERS] ?? []) live[name] = next[name];
  live[HANDLERS] = next[HANDLERS];
  patch(live, [...next.childNodes]);
  return live;
}

/** Inline styles through the CSSOM (bar widths): the CSP refuses style attributes set as text. */
function updateStyle(live, next) {
  for (let index = live.length - 1; index >= 0; index--) {
    const property = live[index];
    if (!next.getPropertyValue(property)) live.removeProperty(property);
  }
  for (let index = 0; index < next.length; index++) {
    const property = next[index];
    const value = next.getPropertyValue(property);
    if (live.getPropertyValue(property) !== value) live.setProperty(property, value);
  }
}

/** Sets an element's text only when it changed (rewriting equal text would drop a selection in it). */
export function setText(element, text) {
  const value = String(text ?? '');
  if (element.textContent !== value) element.textContent = value;
}

/** Fills a <dl> with term/value pairs. */
export function facts(list, pairs) {
  patch(list, pairs.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]));
}

/** A bar whose fill is value/total. */
export function fillTrack(label, value, total, kind) {
  const fill = h('span', { className: `fill ${kind}` });
  fill.style.width = `${total > 0 ? Math.min(100, (value / total) * 100) : 0}%`; // CSSOM: allowed by the CSP
  return h('span', { className: 'bar-track', role: 'img', 'aria-label': `${label}: ${value} of ${total}` }, fill);
}

/** An empty table with its headings: `<table id><thead>…</thead><tbody></tbody></table>`. */
export function table(id, headings) {
  return h('table', { id }, h('thead', {}, h('tr', {}, headings.map((text) => h('th', {}, text)))), h('tbody'));
}

/** A table body's rows, or one row saying why there are none. */
export function patchRows(table, rows, columns, emptyText) {
  patch(table.tBodies[0], rows.length ? rows : h('tr', {}, h('td', { colspan: columns, className: 'empty' }, emptyText)));
}
