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

/**
 * The backend's result record (also what goes into the JSON): per contender
 * the medians, per contender the ratio to raw, forgesync's ratio to each peer
 * (both as ratio of medians and as median of the per-round ratios, which
 * cancels drift between rounds), and whether the goals are met.
 */
export function summarizeBackend(name, opened, samples) {
  const contenders = {};
  for (const c of opened.contenders) {
    contenders[c.name] = {
      role: c.role,
      describe: c.describe,
      sequential: summarizeMode(samples[c.name].sequential),
      contended: summarizeMode(samples[c.name].contended),
    };
  }
  const ratio = (a, b, mode) => contenders[a][mode].pairsPerSec / contenders[b][mode].pairsPerSec;
  const pairedRatio = (a, b, mode) =>
    median(samples[a][mode].map((s, r) => s.pairsPerSec / samples[b][mode][r].pairsPerSec));
  // Headline ratios are medians of the per-round ratios: the two contenders of
  // a round ran seconds apart, so a burst of outside load hits both of them.
  const compare = (other) => ({
    sequential: pairedRatio('forgesync', other, 'sequential'),
    contended: pairedRatio('forgesync', other, 'contended'),
    sequentialOfMedians: ratio('forgesync', other, 'sequential'),
    contendedOfMedians: ratio('forgesync', other, 'contended'),
  });
  for (const c of Object.keys(contenders)) {
    contenders[c].vsRaw = {
      sequential: pairedRatio(c, 'raw', 'sequential'),
      contended: pairedRatio(c, 'raw', 'contended'),
      sequentialOfMedians: ratio(c, 'raw', 'sequential'),
      contendedOfMedians: ratio(c, 'raw', 'contended'),
    };
  }
  const peers = opened.contenders.filter((c) => c.role === 'peer').map((c) => c.name);
  const vsPeers = Object.fromEntries(peers.map((p) => [p, compare(p)]));
  const vsRaw = compare('raw');
  const rawMet = vsRaw.sequential >= GOAL_VS_RAW && vsRaw.contended >= GOAL_VS_RAW;
  const peersMet = peers.every((p) => vsPeers[p].sequential >= GOAL_VS_PEERS && vsPeers[p].contended >= GOAL_VS_PEERS);
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
    int(r.sequential.pairsPerSec),
    pct(r.sequential.spreadPct),
    x(r.vsRaw.sequential),
    int(r.contended.pairsPerSec),
    pct(r.contended.spreadPct),
    x(r.vsRaw.contended),
    int(r.contended.attemptsPerSec),
    `${Math.round(r.contended.wonPct)}%`,
  ]);
  log(
    table(
      ['contender', 'seq pairs/s', 'spread', 'vs raw', `contended pairs/s`, 'spread', 'vs raw', 'attempts/s', 'won'],
      rows,
    ),
  );
  const compared = { raw: result.forgesync.vsRaw, ...result.forgesync.vsPeers };
  for (const [other, v] of Object.entries(compared)) {
    log(
      `forgesync vs ${other}: sequential ${x(v.sequential)}, contended ${x(v.contended)}` +
        `  (ratio of the medians: ${x(v.sequentialOfMedians)}, ${x(v.contendedOfMedians)})`,
    );
  }
  log('  ("vs" = median over rounds of the ratio within the round; spread = (max - min) / median of the rounds)');
  for (const [c, v] of Object.entries(result.contenders)) log(`  ${c}: ${v.describe}`);
  for (const note of result.notes ?? []) log(`  note: ${note}`);
}

/** One line per backend: are the goals met? */
export function verdictLine(name, result) {
  if (result.status !== 'ran') return `${name}: ${result.status} (${result.reason})`;
  const r = result.forgesync.vsRaw;
  const mark = (ok) => (ok ? 'met' : 'NOT met');
  let line =
    `${name}: forgesync vs raw ${x(r.sequential)} sequential, ${x(r.contended)} contended → ` +
    `goal ≥${GOAL_VS_RAW}× raw ${mark(result.goals.vsRaw.met)}`;
  const peers = Object.entries(result.forgesync.vsPeers);
  if (peers.length) {
    line +=
      `; vs peers ${peers.map(([p, v]) => `${p} ${x(v.sequential)}/${x(v.contended)}`).join(', ')} → ` +
      `goal ≥${GOAL_VS_PEERS}× peers ${mark(result.goals.vsPeers.met)}`;
  }
  return line;
}
