'use strict';
// The thread behind SqliteWriter (sqlite-writer.ts): its own connection to
// the registry's SQLite file, running guarded write batches one at a time.
// Plain CommonJS so it runs as it is, from src/ (tests) or dist/ (copied).
//
// Receives (through sqlite-thread-loop.cjs): requests { guards: [{ sql, parameters }],
//   steps: [{ sql, parameters }] }; when the pool closes, the connection closes.
// Does: BEGIN IMMEDIATE; runs each guard, stopping at the first that returns
//   no row (rolled back: refused); then each step; COMMIT.
// Answers: { outcome: 'committed' | 'refused' }, or the error (its SQLite code kept).

const { workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');
const { serve, statementCache } = require('./sqlite-thread-loop.cjs');

const db = new Database(workerData.file, { timeout: workerData.busyTimeoutMs });
for (const pragma of workerData.pragmas) db.pragma(pragma);

// A batch repeats a few dozen statement shapes.
const prepare = statementCache(db, 256);

const REFUSED = Symbol('refused');
const runBatch = db.transaction((guards, steps) => {
  for (const guard of guards) {
    const statement = prepare(guard.sql);
    const rows = statement.reader ? statement.all(guard.parameters) : (statement.run(guard.parameters), []);
    if (rows.length === 0) throw REFUSED;
  }
  for (const step of steps) {
    const statement = prepare(step.sql);
    if (statement.reader) statement.all(step.parameters);
    else statement.run(step.parameters);
  }
});

serve(db, (request) => {
  try {
    runBatch.immediate(request.guards, request.steps);
    return { outcome: 'committed' };
  } catch (error) {
    if (error === REFUSED) return { outcome: 'refused' };
    throw error;
  }
});
