// forgesync dashboard, shared base: how times, durations, states and holders read.
// Each function returns text, or a small element made with h() (a badge, a <time>
// with the exact time as its tooltip).

import { h } from './dom.js';

export function toDate(value) {
  if (value === null || value === undefined || value === '') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** A distance in time: `45 s`, `3 min 20 s`, `2 h 5 min`, `1 d 4 h`. */
export function span(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60 ? `${s % 60} s` : ''}`.trim();
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** A coarse distance to a time: `45 s`, `12 min`, then as span() says. */
export function roughly(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  return span(ms);
}

/** A relative time in a <time> element, with the exact time as its tooltip. */
export function when(value, fallback = '—') {
  const date = toDate(value);
  if (!date) return h('span', { className: 'muted' }, fallback);
  const delta = date.getTime() - Date.now();
  const text = Math.abs(delta) < 1500 ? 'just now' : delta < 0 ? `${span(delta)} ago` : `in ${span(delta)}`;
  return h('time', { datetime: date.toISOString(), title: date.toLocaleString() }, text);
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  return ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : span(ms);
}

/** One line of at most `max` characters (an error message in a table cell). */
export function shorten(text, max = 90) {
  if (!text) return '';
  const line = String(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A coloured label; `kind` picks the colour (style.css `.badge.<kind>`). */
export function badge(text, kind = text) {
  return h('span', { className: `badge ${kind}` }, text);
}

/** A lease holder as `name(pid)@host`. */
export function holder(owner) {
  if (!owner) return '—';
  return `${owner.name}(${owner.pid})@${owner.host}`;
}

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Time left on a lease: by the server's clock (expiresInMs) when it says, else by ours. */
export function timeLeft(lease) {
  const date = toDate(lease.expiresAt);
  const left = typeof lease.expiresInMs === 'number' ? lease.expiresInMs : date ? date.getTime() - Date.now() : null;
  if (left === null) return '—';
  if (left <= 0) return h('span', { className: 'error-text' }, 'lapsing');
  return h('time', { datetime: date?.toISOString(), title: date?.toLocaleString() }, span(left));
}
