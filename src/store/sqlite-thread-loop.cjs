'use strict';
// What the SQLite worker threads (sqlite-writer.worker.cjs,
// sqlite-reader.worker.cjs) share: their side of the worker pool, and a
// cache of prepared statements.
//
// serve(db, handle): answers the pool's requests (threads/serve.cjs) with
// handle(request, transfer), which returns the answer (pushing onto
// `transfer` the buffers to move rather than copy) or throws (the request
// fails with the error's message and SQLite `code`); when the pool closes,
// closes `db` and the thread exits.
// statementCache(db, max, setup): prepare(text), the statement prepared once per SQL
// text (setup applied to it then), the oldest dropped beyond `max`.

const threads = require('../threads/serve.cjs');

function serve(db, handle) {
  threads.serve(handle, () => db.close());
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
