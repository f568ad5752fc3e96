// forgesync dashboard, shared base: what a page's buttons use to act and to say
// how it went. Messages go to the shell's #flash box, questions to its #confirm
// dialog; after an action the shell refreshes at once and polls fast for a while
// (the hooks the shell sets with connectShell).

import { ApiError } from './api.js';
import { $ } from './dom.js';

const shell = {
  /** Refreshes the active page now (after a navigation within a page, e.g. a filter). */
  refresh() {},
  /** An action succeeded: refresh now and poll fast for a while. */
  acted() {},
};

/** Called once by the shell at start. */
export function connectShell(hooks) {
  Object.assign(shell, hooks);
}

export function refresh() {
  shell.refresh();
}

let flashTimer;
export function flash(message, kind = 'ok') {
  const box = $('flash');
  box.className = kind;
  box.textContent = message;
  box.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => (box.hidden = true), kind === 'error' ? 12_000 : 6_000);
}

export function flashError(error) {
  if (error instanceof ApiError && error.status === 401) return; // the token form says it
  flash(error instanceof ApiError ? `${error.message} (${error.code})` : String(error?.message ?? error), 'error');
}

/** Asks in a modal; resolves true when confirmed. */
export function confirmDialog(title, text, okLabel) {
  const dialog = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = okLabel;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}

/** Runs an action with its button disabled, reports errors, and speeds up polling afterwards. */
export async function act(button, action) {
  if (button) button.disabled = true;
  try {
    await action();
    shell.acted();
  } catch (error) {
    flashError(error);
  } finally {
    if (button) button.disabled = false;
  }
}
