import Fastify, { type FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardRoutes } from '../../src/server/routes/dashboard.js';
import { openBrowserPage } from '../support/browser.js';

/*
 * The dashboard's keyed update (src/server/dashboard/dom.js `patch`) in Debian's
 * headless chromium, under the dashboard's CSP: the dashboard's files alone are
 * served (no API, so the shell's own refresh only says it failed), and each case
 * imports dom.js into the page and patches a list the way a page's render does.
 */

describe('dashboard dom.js patch in headless chromium', () => {
  let server: FastifyInstance;
  let browser: Browser;
  let page: Page;
  /** CSP violations in the page: setting a bar's width must not be one. */
  const violations: string[] = [];

  beforeAll(async () => {
    server = Fastify();
    // No module's pages: the shell and dom.js are all this test loads.
    await server.register(dashboardRoutes([]));
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('the server has no TCP address');
    ({ browser, page } = await openBrowserPage());
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.goto(`http://127.0.0.1:${address.port}/`);
    await page.evaluate(`(async () => {
      window.dom = await import('/dashboard/dom.js');
      document.addEventListener('securitypolicyviolation', (event) => console.error('Content Security Policy: ' + event.violatedDirective));
      const list = document.createElement('ul');
      list.id = 'list';
      document.body.append(list);
      /** Renders rows of [key, text] the way a page does: fresh elements, patched into #list. */
      window.renderRows = (rows) => dom.patch(list, rows.map(([key, text]) => dom.h('li', { key, 'data-key': key }, dom.h('button', { type: 'button' }, text))));
      window.rowOf = (key) => list.querySelector('li[data-key="' + key + '"]');
      window.texts = () => [...list.children].map((row) => row.dataset.key + ':' + row.textContent);
    })()`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Runs `body` (a function body over window.dom, renderRows, rowOf, texts) in the page and returns its value. */
  const inPage = <T>(body: string): Promise<T> => page.evaluate(`(() => { ${body} })()`) as Promise<T>;

  it('updates keyed rows in place, adds and removes them, and keeps the focus through a removal before it', async () => {
    const result = await inPage<{ texts: string[]; same: boolean; focused: boolean }>(`
      renderRows([['a', 'A1'], ['b', 'B1'], ['c', 'C1']]);
      const b = rowOf('b');
      b.querySelector('button').focus();
      renderRows([['b', 'B2'], ['c', 'C2'], ['d', 'D1']]);   // a leaves before b, d arrives after
      renderRows([['0', 'Z1'], ['b', 'B3'], ['c', 'C2'], ['d', 'D1']]); // a row arrives before b
      return { texts: texts(), same: rowOf('b') === b, focused: document.activeElement === b.querySelector('button') };
    `);
    expect(result).toEqual({ texts: ['0:Z1', 'b:B3', 'c:C2', 'd:D1'], same: true, focused: true });
  });

  it('keeps row elements when the order changes, and a second row with the same key is a row of its own', async () => {
    const result = await inPage<{ texts: string[]; same: boolean[]; focused: boolean }>(`
      renderRows([['a', 'A'], ['b', 'B'], ['c', 'C']]);
      const rows = ['a', 'b', 'c'].map(rowOf);
      rows[2].querySelector('button').focus();
      renderRows([['c', 'C'], ['b', 'B'], ['a', 'A']]);
      const same = ['a', 'b', 'c'].map((key, index) => rowOf(key) === rows[index]);
      const focused = document.activeElement === rows[2].querySelector('button');
      renderRows([['a', 'A'], ['a', 'A again']]);
      return { texts: texts(), same, focused };
    `);
    expect(result).toEqual({ texts: ['a:A', 'a:A again'], same: [true, true, true], focused: true });
  });

  it('carries attributes, handlers and CSSOM styles over, and replaces an element of another tag', async () => {
    const result = await inPage<Record<string, unknown>>(`
      const box = document.createElement('div');
      document.body.append(box);
      const clicks = [];
      const render = (label, props, width) => {
        const fill = dom.h('span', { className: 'fill' });
        if (width) fill.style.width = width;
        dom.patch(box, dom.h('button', { key: 'x', onclick: () => clicks.push(label), ...props }, label), fill);
      };
      render('one', { title: 'first', 'data-x': '1' }, '10%');
      const button = box.querySelector('button');
      const fill = box.querySelector('span');
      render('two', { title: 'second' }, '');
      button.click();
      const afterTwo = { same: box.querySelector('button') === button, title: button.title, dataX: button.getAttribute('data-x'), width: fill.style.width, sameFill: box.querySelector('span') === fill };
      dom.patch(box, dom.h('a', { key: 'x' }, 'link'));
      return { ...afterTwo, clicks, text: box.textContent, replaced: box.firstChild !== button && box.firstChild.tagName === 'A', count: box.childNodes.length };
    `);
    expect(result).toEqual({ same: true, title: 'second', dataX: null, width: '', sameFill: true, clicks: ['two'], text: 'link', replaced: true, count: 1 });
    const width = await inPage<string>(`
      const box = document.createElement('div');
      document.body.append(box);
      const bar = (width) => { const fill = dom.h('span'); fill.style.width = width; return fill; };
      dom.patch(box, bar('10%'));
      dom.patch(box, bar('55%'));
      return box.firstChild.style.width;
    `);
    expect(width).toBe('55%');
    expect(violations).toEqual([]);
  });

  it('writes text only when it changed, so a selection in it stays', async () => {
    const kept = await inPage<boolean>(`
      const pre = document.createElement('pre');
      document.body.append(pre);
      dom.setText(pre, 'the last error');
      const text = pre.firstChild;
      window.getSelection().selectAllChildren(pre);
      dom.setText(pre, 'the last error');
      return pre.firstChild === text && window.getSelection().toString() === 'the last error';
    `);
    expect(kept).toBe(true);
  });
});
