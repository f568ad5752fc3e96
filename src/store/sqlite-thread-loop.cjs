'use strict';
// The message loop of the SQLite worker threads (sqlite-writer.worker.cjs,
// sqlite-reader.worker.cjs), the thread side of SqliteThread (sqlite-thread.ts).
//
// serve(db, handle): for each message { id, ... }, posts { id, ...answer } where
// handle(message) returns { answer, transfer? }, or { id, error: { message, code } }
// when it throws; { close: true } closes `db` and ends the loop (the thread exits).
// statementCache(db, max, setup): prepare(text), the statement prepared once per SQL
// text (setup applied to it then), the oldest dropped beyond `max`.

const { parentPort } = require('node:worker_threads');

function serve(db, handle) {
  parentPort.on('message', (message) => {
    if (message.close) {
      db.close();
      parentPort.close();
      return;
    }
    try {
      const { answer, transfer } = handle(message);
      parentPort.postMessage({ id: message.id, ...answer }, transfer || []);
    } catch (error) {
      parentPort.postMessage({ id: message.id, error: { message: String(error && error.message), code: error && error.code } });
    }
  });
}

function statementCache(db, max, setup = (statement) => statement) {
  const statements = new Map();
  return function prepare(text) {
    let statement = statements.get(text);
    if (!statement) {
      statement = setup(db.prepare(text));
      if (statements.size >= max) statements.delete(statements.keys().next().value);
      statements.set(text, statement);
    }
    return statement;
  };
}

module.exports = { serve, statementCache };
