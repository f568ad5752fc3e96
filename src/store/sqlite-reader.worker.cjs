'use strict';
// The thread behind SqliteReader (sqlite-reader.ts): its own read-only
// connection to the registry's SQLite file, running one query at a time and
// answering with its rows packed into a few transferable buffers (cloning an
// array of arrays costs the receiving thread nearly what reading it would).
// Plain CommonJS so it runs as it is, from src/ (tests) or dist/ (copied).
//
// Receives (through sqlite-thread-loop.cjs): requests { sql, parameters }.
// Does: runs the statement (prepared once per SQL text) in raw mode.
// Answers: { columns, count, kinds, numbers, text, lengths } where, for
//   cell i (row-major): kinds[i] is 0 null, 1 number (numbers[i]) or 2 text (the
//   next lengths[] characters of `text`), the three arrays transferred; or an error.
//   A blob or a big integer is an error: no query sent here reads one.

const { workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');
const { serve, statementCache } = require('./sqlite-thread-loop.cjs');

const db = new Database(workerData.file, { readonly: true, timeout: workerData.busyTimeoutMs });

const prepare = statementCache(db, 64, (statement) => statement.raw(true));

function pack(statement, rows, transfer) {
  const columns = statement.columns().length;
  const cells = rows.length * columns;
  const kinds = new Uint8Array(cells);
  const numbers = new Float64Array(cells);
  const lengths = [];
  const texts = [];
  let cell = 0;
  for (const row of rows) {
    for (let column = 0; column < columns; column++, cell++) {
      const value = row[column];
      if (value === null || value === undefined) continue;
      if (typeof value === 'number') {
        kinds[cell] = 1;
        numbers[cell] = value;
      } else if (typeof value === 'string') {
        kinds[cell] = 2;
        texts.push(value);
        lengths.push(value.length);
      } else {
        throw new Error(`the off-thread reader reads numbers and text only; column ${column + 1} is a ${typeof value}`);
      }
    }
  }
  const lengthArray = Uint32Array.from(lengths);
  transfer.push(kinds.buffer, numbers.buffer, lengthArray.buffer);
  return { columns, count: rows.length, kinds, numbers, text: texts.join(''), lengths: lengthArray };
}

serve(db, (request, transfer) => {
  const statement = prepare(request.sql);
  return pack(statement, statement.all(request.parameters), transfer);
});
