import { createHash } from 'node:crypto';

/** A shard a source may be placed on, with its share of new sources. */
export interface Candidate {
  id: string;
  weight: number;
}

/**
 * The shard for `source` by weighted rendezvous (highest random weight)
 * hashing: every shard scores `-weight / ln(u)`, `u` a uniform number drawn
 * from the hash of the source and the shard, and the best score wins. Each
 * shard gets new sources in proportion to its weight, and adding or
 * removing a shard changes the choice only for the sources that it wins or
 * held (the others keep their order of preference). Null when there is no
 * candidate. The choice is stored once made: adding a shard moves nothing.
 */
export function rendezvousShard(source: string, candidates: readonly Candidate[]): string | null {
  let best: string | null = null;
  let bestScore = -Infinity;
  for (const candidate of candidates) {
    if (!(candidate.weight > 0)) continue;
    const score = -candidate.weight / Math.log(uniform(`${source}\u0000${candidate.id}`));
    // Ties (equal hashes cannot happen in practice) go to the smaller id, so the choice never depends on order.
    if (score > bestScore || (score === bestScore && best !== null && candidate.id < best)) {
      best = candidate.id;
      bestScore = score;
    }
  }
  return best;
}

/** A number in (0, 1) from the first 52 bits of the SHA-256 of `text`. */
function uniform(text: string): number {
  const digest = createHash('sha256').update(text).digest();
  const high = digest.readUInt32BE(0) >>> 12; // 20 bits
  const low = digest.readUInt32BE(4); // 32 bits
  return (high * 2 ** 32 + low + 0.5) / 2 ** 52;
}
