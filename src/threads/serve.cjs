'use strict';
// The thread side of a worker pool (pool.ts; the contract is in types.ts).
// Plain CommonJS so that a thread script runs it as it is, from src/ (tests)
// or dist/ (copied there by scripts/copy-assets.mjs), from CommonJS
// (the SQLite threads) or compiled ESM (the webhook readers).
//
// serve(handle, onClose?): for each request { id, request } the pool sends,
// calls handle(request, transfer) and posts { id, answer } with what it
// returned, or { id, error: { message, code } } when it threw (that request
// only fails); for a batch [{ id, request }, ...] (a coalescing pool), does
// so for each in order and posts the replies as one message (an answer that
// cannot be cloned then fails its whole batch). handle pushes onto
// `transfer` the buffers of its answer to move rather than copy.
// { close: true } (the pool drains on close) runs onClose, then the
// thread's port closes and the thread exits.

const { parentPort } = require('node:worker_threads');

function serve(handle, onClose) {
  parentPort.on('message', (message) => {
    if (Array.isArray(message)) answerBatch(handle, message);
    else if (message.close) {
      if (onClose) onClose();
      parentPort.close();
    } else answerOne(handle, message);
  });
}

function answerOne(handle, { id, request }) {
  const transfer = [];
  const reply = replyTo(handle, id, request, transfer);
  try {
    parentPort.postMessage(reply, transfer);
  } catch (error) {
    // An answer that cannot be cloned (a function in it, say): the request fails, the thread goes on.
    parentPort.postMessage({ id, error: errorReply(error) });
  }
}

function answerBatch(handle, batch) {
  const transfer = [];
  const replies = batch.map(({ id, request }) => replyTo(handle, id, request, transfer));
  try {
    parentPort.postMessage(replies, transfer);
  } catch (error) {
    const failed = errorReply(error);
    parentPort.postMessage(batch.map(({ id }) => ({ id, error: failed })));
  }
}

function replyTo(handle, id, request, transfer) {
  const transferred = transfer.length;
  try {
    return { id, answer: handle(request, transfer) };
  } catch (error) {
    transfer.length = transferred; // what a failed request pushed is not sent
    return { id, error: errorReply(error) };
  }
}

function errorReply(error) {
  return { message: String(error && error.message), code: error && error.code };
}

module.exports = { serve };
