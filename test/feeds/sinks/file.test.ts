import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EgressPolicy } from '../../../src/egress/policy.js';
import { outgoing, type CloudEvent } from '../../../src/feeds/events.js';
import { FileSinkOutsideRootError, UnsupportedSinkUrlError } from '../../../src/feeds/sinks/errors.js';
import { openSink } from '../../../src/feeds/sinks/open.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from '../../../src/feeds/sinks/types.js';
import { eventually } from '../../support/harness.js';
import { fileSinkFiles, OPEN_FILE_PREFIX as OPEN } from '../file-events.js';
import { describeSinkConformance, makeEvents, type ReceivedEvent } from './conformance.js';

const root = mkdtempSync(join(tmpdir(), 'forgesync-file-sink-'));
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});
const never = (): AbortSignal => new AbortController().signal;
const policy = new EgressPolicy();
const NAME = /^\d{15}-\d{7}-\d{12}\.ndjson$/;

const opened: FeedSink[] = [];
async function openIn(directory: string, options: Partial<SinkOptions> = {}): Promise<FeedSink> {
  const sink = await openSink(pathToFileURL(directory).href, { batch: 1000, timeoutMs: 5000, policy, fileRoot: root, ...options });
  opened.push(sink);
  return sink;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sink) => sink.close()));
});

/** The delivered files of `directory` in name order, with their text; dot-files left aside. */
async function filesOf(directory: string): Promise<{ name: string; text: string }[]> {
  let names: string[];
  try {
    names = (await readdir(directory)).filter((name) => !name.startsWith('.')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw error;
  }
  return Promise.all(names.map(async (name) => ({ name, text: await readFile(join(directory, name), 'utf8') })));
}

async function linesOf(directory: string): Promise<ReceivedEvent[]> {
  return fileSinkFiles(directory).flatMap(({ text }) =>
    text
      .split('\n')
      .slice(0, -1)
      .map((raw) => ({ event: JSON.parse(raw) as CloudEvent, raw })),
  );
}

const conformanceDir = join(root, 'conformance', 'out');
// Failing: the directory's path taken by a plain file, so nothing can be written there; what was delivered is kept aside.
describeSinkConformance('file', {
  open: (options) => openIn(conformanceDir, options),
  received: () => linesOf(conformanceDir),
  setFailing: async (failing) => {
    const aside = `${conformanceDir}.aside`;
    if (failing) {
      await mkdir(conformanceDir, { recursive: true });
      await rename(conformanceDir, aside);
      await writeFile(conformanceDir, 'not a directory');
    } else if (await readFile(conformanceDir).then(() => true, () => false)) {
      await rm(conformanceDir);
      await rename(aside, conformanceDir);
    }
  },
  batches: [1, 4, 1000],
});

const failure = (outcome: DeliveryOutcome | undefined) => {
  expect(outcome?.ok).toBe(false);
  return outcome as Extract<DeliveryOutcome, { ok: false }>;
};
const fresh = () => join(root, randomUUID(), 'nested', 'dir');
/** An event whose line (its JSON and the newline) is `bytes` long. */
function sized(bytes: number) {
  const [entry] = makeEvents(1);
  const base = outgoing({ ...entry!.event, data: { pad: '' } }, entry!.key);
  const sized = outgoing({ ...base.event, data: { pad: 'x'.repeat(bytes - base.body.length - 1) } }, base.key);
  expect(Buffer.byteLength(`${sized.body}\n`)).toBe(bytes);
  return sized;
}

describe('file sink', () => {
  it('creates the directory, appends to an open dot-file, and rolls it into place when it closes', async () => {
    const directory = fresh();
    const sink = await openIn(directory);
    expect((await sink.deliver(makeEvents(3), never())).every((outcome) => outcome.ok)).toBe(true);
    const open = await readdir(directory);
    expect(open).toHaveLength(1);
    expect(open[0]!.startsWith(OPEN) && NAME.test(open[0]!.slice(OPEN.length))).toBe(true);
    await sink.close();
    expect(await readdir(directory)).toEqual([open[0]!.slice(OPEN.length)]);
    expect((await filesOf(directory))[0]!.text.split('\n')).toHaveLength(4);
  });

  it('appends many deliveries to one file (not a file each), and rolls it into place once it is as old as allowed', async () => {
    const directory = fresh();
    const sink = await openIn(directory, { maxFileAgeMs: 300 });
    const deliveries = Array.from({ length: 20 }, () => makeEvents(1));
    for (const events of deliveries) expect((await sink.deliver(events, never()))[0]!.ok).toBe(true);
    // Rolled by its age with nothing more delivered: the events appear under a final name without a close.
    const files = await eventually('the open file to be rolled into place', async () => {
      const named = await filesOf(directory);
      return named.length > 0 && (await readdir(directory)).every((name) => !name.startsWith('.')) ? named : undefined;
    });
    expect(files.map(({ text }) => text).join('')).toBe(deliveries.flat().map((entry) => `${entry.body}\n`).join(''));
    expect(files.length).toBeLessThan(deliveries.length);
  });

  it('rolls into place, its partial last line cut off, a file a killed sink left open, and names new files after it', async () => {
    const directory = fresh();
    await mkdir(directory, { recursive: true });
    const [kept, cut] = makeEvents(2);
    const leftName = `${String(Date.now()).padStart(15, '0')}-0000001-000000000001.ndjson`;
    const left = join(directory, `${OPEN}${leftName}`);
    await writeFile(left, `${kept!.body}\n${cut!.body.slice(0, 20)}`);
    // Untouched for longer than the longest a live sink keeps a file open, and a minute more.
    const old = new Date(Date.now() - 3 * 60_000);
    await utimes(left, old, old);
    const sink = await openIn(directory, { maxFileAgeMs: 60_000 });
    const next = makeEvents(1);
    expect((await sink.deliver(next, never()))[0]!.ok).toBe(true);
    await sink.close();
    const files = await filesOf(directory);
    expect(files.map(({ name }) => name)[0]).toBe(leftName);
    expect(files.map(({ text }) => text)).toEqual([`${kept!.body}\n`, `${next[0]!.body}\n`]);
  });

  it('splits a delivery across files by size, in order, a longer event alone in its file', async () => {
    const directory = fresh();
    const sink = await openIn(directory, { maxFileBytes: 2000 });
    const events = [...Array.from({ length: 9 }, () => sized(600)), sized(5000), sized(600)];
    expect((await sink.deliver(events, never())).every((outcome) => outcome.ok)).toBe(true);
    await sink.close();
    const files = await filesOf(directory);
    expect(files.map(({ text }) => text.split('\n').length - 1)).toEqual([3, 3, 3, 1, 1]);
    for (const { text } of files.filter(({ text }) => text.length < 5000)) expect(Buffer.byteLength(text)).toBeLessThanOrEqual(2000);
    expect(files.map(({ text }) => text).join('')).toBe(events.map((entry) => `${entry.body}\n`).join(''));
  });

  it('names files so that they sort in delivery order, across sinks on one directory too', async () => {
    const directory = fresh();
    const calls = [makeEvents(2), makeEvents(1), makeEvents(3)];
    const first = await openIn(directory);
    for (const events of calls.slice(0, 2)) await first.deliver(events, never());
    await first.close();
    // A later sink starts after the newest name it finds, even one from the future.
    await writeFile(join(directory, `${String(Date.now() + 3_600_000).padStart(15, '0')}-0000001-000000000001.ndjson`), `${calls[1]![0]!.body}\n`);
    await (await openIn(directory)).deliver(calls[2]!, never());
    const files = fileSinkFiles(directory);
    expect(files.every(({ name }) => NAME.test(name))).toBe(true);
    expect(files.map(({ text }) => text).join('')).toBe([...calls[0]!, ...calls[1]!, calls[1]![0]!, ...calls[2]!].map((entry) => `${entry.body}\n`).join(''));
  });

  it('keeps delivery order when two open sinks take turns on one directory (a feed whose runs move between processes)', async () => {
    const directory = fresh();
    const [here, there] = [await openIn(directory), await openIn(directory)];
    const calls = Array.from({ length: 5 }, () => makeEvents(2));
    // As the feed's lease hands its runs to one process, then the other: here, there, here, there, here.
    for (const [index, events] of calls.entries()) expect((await (index % 2 === 0 ? here : there).deliver(events, never())).every((outcome) => outcome.ok)).toBe(true);
    await here.close();
    await there.close();
    const files = await filesOf(directory);
    expect(files.map(({ text }) => text).join('')).toBe(calls.flat().map((entry) => `${entry.body}\n`).join(''));
  });

  it('makes files appear only whole', async () => {
    const directory = fresh();
    // Files of a few MiB: written in several chunks, which a reader could catch half done if they were written in place.
    const sink = await openIn(directory, { maxFileBytes: 2_000_000 });
    const events = Array.from({ length: 160 }, () => sized(64_000));
    await mkdir(directory, { recursive: true });
    const seen = new Map<string, string>();
    let done = false;
    const watcher = (async () => {
      while (!done) {
        for (const { name, text } of await filesOf(directory)) {
          expect(text.endsWith('\n')).toBe(true);
          for (const line of text.split('\n').slice(0, -1)) JSON.parse(line);
          if (seen.has(name)) expect(text).toBe(seen.get(name));
          seen.set(name, text);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const outcomes = await sink.deliver(events, never());
    done = true;
    await watcher;
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    await sink.close();
    const files = await filesOf(directory);
    expect(files.length).toBeGreaterThan(4);
    expect(seen.size).toBeGreaterThan(0);
    for (const [name, text] of seen) expect(files.find((file) => file.name === name)?.text).toBe(text);
    expect((await readdir(directory)).filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('fails with the write error, leaves no temporary file, and writes once the path is free again', async () => {
    const directory = fresh();
    await mkdir(join(directory, '..'), { recursive: true });
    await writeFile(directory, 'in the way');
    const sink = await openIn(directory);
    const outcome = failure((await sink.deliver(makeEvents(2), never()))[0]);
    expect(outcome.error).toMatch(new RegExp(`^writing to ${directory.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed: (EEXIST|ENOTDIR)`));
    await rm(directory);
    expect((await sink.deliver(makeEvents(2), never())).every((entry) => entry.ok)).toBe(true);
    await sink.close();
    expect((await readdir(directory)).filter((name) => !NAME.test(name))).toEqual([]);
  });

  it('refuses a relative path, another host, or a query', async () => {
    for (const url of ['file:out', 'file://files.example/out', `file://${root}?mode=x`, 'file:///tmp/%2Fx']) {
      await expect(openSink(url, { batch: 1, timeoutMs: 1000, policy, fileRoot: root })).rejects.toBeInstanceOf(UnsupportedSinkUrlError);
    }
  });
});

describe('file sink: only inside the feed file root', () => {
  /** A directory outside the root, which must stay empty. */
  const outside = mkdtempSync(join(tmpdir(), 'forgesync-file-sink-outside-'));
  afterAll(async () => {
    await rm(outside, { recursive: true, force: true });
  });
  const refusedAtDelivery = async (directory: string) => {
    const outcome = failure((await (await openIn(directory)).deliver(makeEvents(2), never()))[0]);
    expect(outcome.error).toMatch(/not inside it \(symbolic links leading out of it are refused too\)/);
    expect(outcome.error).toContain(root);
  };

  it('refuses a directory outside the root when opened, naming the root', async () => {
    for (const directory of [outside, join(root, '..', 'elsewhere'), `${root}-sibling`]) {
      const refusal = openIn(directory);
      await expect(refusal).rejects.toBeInstanceOf(FileSinkOutsideRootError);
      await expect(refusal).rejects.toThrow(`the feed file root ${root} (FORGESYNC_FEED_FILE_ROOT)`);
    }
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses a symbolic link leading out of the root, at any component, and writes nothing there', async () => {
    const base = join(root, randomUUID());
    await mkdir(base, { recursive: true });
    await symlink(outside, join(base, 'out'));
    await symlink(join(outside, 'not-yet'), join(base, 'dangling'));
    // In the middle of the path, as the directory itself, dangling (its target would be made), and a link to a link.
    await refusedAtDelivery(join(base, 'out', 'nested', 'dir'));
    await refusedAtDelivery(join(base, 'out'));
    await refusedAtDelivery(join(base, 'dangling'));
    await symlink(join(base, 'out'), join(base, 'chain'));
    await refusedAtDelivery(join(base, 'chain', 'x'));
    expect(await readdir(outside)).toEqual([]);
  });

  it('checks again at every delivery: a directory replaced by a link leading out is refused', async () => {
    const directory = join(root, randomUUID(), 'out');
    const sink = await openIn(directory);
    expect((await sink.deliver(makeEvents(1), never())).every((outcome) => outcome.ok)).toBe(true);
    await rm(directory, { recursive: true });
    await symlink(outside, directory);
    const outcome = failure((await sink.deliver(makeEvents(1), never()))[0]);
    expect(outcome.error).toMatch(/not inside it/);
    expect(await readdir(outside)).toEqual([]);
  });

  it('follows links that stay inside the root, and a root that is itself a link', async () => {
    const base = join(root, randomUUID());
    await mkdir(join(base, 'real'), { recursive: true });
    await symlink(join(base, 'real'), join(base, 'alias'));
    expect((await (await openIn(join(base, 'alias', 'sub'))).deliver(makeEvents(2), never())).every((outcome) => outcome.ok)).toBe(true);
    expect(fileSinkFiles(join(base, 'real', 'sub')).length).toBe(1);
    const linkedRoot = join(base, 'linked-root');
    await symlink(join(base, 'real'), linkedRoot);
    const sink = await openSink(pathToFileURL(join(linkedRoot, 'feed')).href, { batch: 10, timeoutMs: 5000, policy, fileRoot: linkedRoot });
    opened.push(sink);
    expect((await sink.deliver(makeEvents(1), never())).every((outcome) => outcome.ok)).toBe(true);
    expect(fileSinkFiles(join(base, 'real', 'feed')).length).toBe(1);
  });
});
