import { listConnection, type PageArgs } from '../connection.js';
import type { Json } from '../context.js';

/*
 * `reactionGroups` from REST's reaction summary (`reactions: { "+1": 2, … }`):
 * GitHub's GraphQL lists every reaction content, each with its count; the
 * copy has counts, not who reacted, so `users`/`reactors` answer the count
 * and no nodes.
 */

/** Each GraphQL reaction content, in GitHub's order, and its key in REST's summary. */
const CONTENTS: readonly { content: string; summaryKey: string }[] = [
  { content: 'THUMBS_UP', summaryKey: '+1' },
  { content: 'THUMBS_DOWN', summaryKey: '-1' },
  { content: 'LAUGH', summaryKey: 'laugh' },
  { content: 'HOORAY', summaryKey: 'hooray' },
  { content: 'CONFUSED', summaryKey: 'confused' },
  { content: 'HEART', summaryKey: 'heart' },
  { content: 'ROCKET', summaryKey: 'rocket' },
  { content: 'EYES', summaryKey: 'eyes' },
];

export class ReactionGroupModel {
  constructor(
    readonly content: string,
    private readonly count: number,
  ) {}

  readonly createdAt = null;
  readonly viewerHasReacted = false;

  users(args: PageArgs) {
    return listConnection([], args, () => this.count);
  }

  reactors(args: PageArgs) {
    return listConnection([], args, () => this.count);
  }
}

/** The reaction groups of an object whose REST JSON has `reactions` (none counted when it lacks them). */
export function reactionGroups(json: Json | undefined): ReactionGroupModel[] {
  const summary = (json?.reactions ?? {}) as Json;
  return CONTENTS.map(({ content, summaryKey }) => new ReactionGroupModel(content, typeof summary[summaryKey] === 'number' ? summary[summaryKey] : 0));
}
