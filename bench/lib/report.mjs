// Turns samples into medians, ratios and goal verdicts, and prints them.
import { median, spreadPct } from './harness.mjs';
import { table } from './util.mjs';

export const GOAL_VS_RAW = 0.8;
export const GOAL_VS_PEERS = 1.0;

/** Medians and spreads of one contender's samples in one mode. */
function summarizeMode(samples) {
  const pairs = samples.map((s) => s.pairsPerSec);
  const attempts = samples.map((s) => s.attemptsPerSec);
  return {
    pairsPerSec: median(pairs),
    attemptsPerSec: median(attempts),
    wonPct: median(samples.map((s) => (s.attempts ? (s.pairs / s.attempts) * 100 : 0))),
    spreadPct: spreadPct(pairs),
    samples,
  };
}

/** The measured modes, in table order, with their column titles. */
const MODE_TITLES = { sequential: 'seq', contended: 'contended', apart: 'apart' };
export const MODES = Object.keys(MODE_TITLES);
const perMode = (f) => Object.fromEntries(MODES.map((m) => [m, f(m)]));

/**
 * The backend's result record (also what goes into the JSON): per contender
 * and mode the medians and the ratio to raw, forgesync's ratio to each peer
 * (both as ratio of medians and as median of the per-round ratios, which
 * cancels drift between rounds), and whether the goals are met in every mode.
 */
export function summarizeBackend(name, opened, samples) {
  const contenders = {};
  for (const c of opened.contenders) {
    contenders[c.name] = { role: c.role, describe: c.describe, ...perMode((m) => summarizeMode(samples[c.name][m])) };
  }
  const ratio = (a, b, mode) => contenders[a][mode].pairsPerSec / contenders[b][mode].pairsPerSec;
  // Headline ratios are medians of the per-round ratios: the two contenders of
  // a round ran seconds apart, so a burst of outside load hits both of them.
  const pairedRatio = (a, b, mode) =>
    median(samples[a][mode].map((s, r) => s.pairsPerSec / samples[b][mode][r].pairsPerSec));
  const compare = (a, b) => ({
    ...perMode((m) => pairedRatio(a, b, m)),
    ofMedians: perMode((m) => ratio(a, b, m)),
  });
  for (const c of Object.keys(contenders)) contenders[c].vsRaw = compare(c, 'raw');
  const peers = opened.contenders.filter((c) => c.role === 'peer').map((c) => c.name);
  const vsPeers = Object.fromEntries(peers.map((p) => [p, compare('forgesync', p)]));
  const vsRaw = compare('forgesync', 'raw');
  const allAtLeast = (v, target) => MODES.every((m) => v[m] >= target);
  const rawMet = allAtLeast(vsRaw, GOAL_VS_RAW);
  const peersMet = peers.every((p) => allAtLeast(vsPeers[p], GOAL_VS_PEERS));
  return {
    status: 'ran',
    url: opened.url,
    notes: opened.notes,
    contenders,
    forgesync: { vsRaw, vsPeers },
    goals: {
      vsRaw: { target: GOAL_VS_RAW, met: rawMet },
      ...(peers.length ? { vsPeers: { target: GOAL_VS_PEERS, met: peersMet } } : {}),
      met: rawMet && peersMet,
    },
  };
}

const int = (n) => Math.round(n).toLocaleString('en-US');
const x = (n) => `${n.toFixed(2)}×`;
const pct = (n) => `±${n < 10 ? n.toFixed(1) : Math.round(n)}%`;

export function printBackend(name, result, cfg, log) {
  const rows = Object.entries(result.contenders).map(([c, r]) => [
    c,
    ...MODES.flatMap((m) => [int(r[m].pairsPerSec), pct(r[m].spreadPct), x(r.vsRaw[m])]),
    ...['contended', 'apart'].map((m) => `${Math.round(r[m].wonPct)}%`),
  ]);
  log(
    table(
      ['contender', ...MODES.flatMap((m) => [`${MODE_TITLES[m]} pairs/s`, 'spread', 'vs raw']), 'won', 'won apart'],
      rows,
    ),
  );
  const compared = { raw: result.forgesync.vsRaw, ...result.forgesync.vsPeers };
  for (const [other, v] of Object.entries(compared)) {
    log(
      `forgesync vs ${other}: ${MODES.map((m) => `${m} ${x(v[m])}`).join(', ')}` +
        `  (ratio of the medians: ${MODES.map((m) => x(v.ofMedians[m])).join(', ')})`,
    );
  }
  log('  ("vs" = median over rounds of the ratio within the round; spread = (max - min) / median of the rounds;');
  log('   contended = all workers share one client; apart = a client per worker, as separate processes)');
  for (const [c, v] of Object.entries(result.contenders)) log(`  ${c}: ${v.describe}`);
  for (const note of result.notes ?? []) log(`  note: ${note}`);
}

/** One line per backend: are the goals met? */
export function verdictLine(name, result) {
  if (result.status !== 'ran') return `${name}: ${result.status} (${result.reason})`;
  const r = result.forgesync.vsRaw;
  const mark = (ok) => (ok ? 'met' : 'NOT met');
  const triple = (v) => MODES.map((m) => x(v[m])).join('/');
  let line = `${name}: forgesync vs raw ${triple(r)} (${MODES.join('/')}) → goal ≥${GOAL_VS_RAW}× raw ${mark(result.goals.vsRaw.met)}`;
  const peers = Object.entries(result.forgesync.vsPeers);
  if (peers.length) {
    line +=
      `; vs peers ${peers.map(([p, v]) => `${p} ${triple(v)}`).join(', ')} → ` +
      `goal ≥${GOAL_VS_PEERS}× peers ${mark(result.goals.vsPeers.met)}`;
  }
  return line;
}
