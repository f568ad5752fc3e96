import { describe, expect, it } from 'vitest';
import { EgressRefusedError } from '../../src/egress/errors.js';
import { GithubAnswerError, GithubAnswerTooLargeError, GithubAuthError, GithubProjectNotFoundError, GithubRequestError, ImportStalledError, isTransientImportError } from '../../src/importer/errors.js';
import { LeaseBackendUnavailableError, LeaseLostError } from '../../src/leases/errors.js';
import { DatabaseUnavailableError, isTransientDatabaseError } from '../../src/store/errors.js';

/*
 * One classifier of what an import tries again (issue 25): database
 * failures that go away by themselves, GitHub failing for a while, a lease
 * store that did not answer — and nothing that would fail the same way again.
 */

const coded = (code: string, message = `failure ${code}`) => Object.assign(new Error(message), { code });

describe('isTransientDatabaseError', () => {
  it.each([
    ['a serialisation failure', coded('40001')],
    ['a deadlock', coded('40P01')],
    ['a lock timeout', coded('55P03')],
    ['an idle-in-transaction timeout', coded('25P03')],
    ['a statement timeout', coded('57014')],
    ['an administrator ending the session (pg_terminate_backend, a shutdown)', coded('57P01')],
    ['a crash shutdown', coded('57P02')],
    ['a server not accepting connections yet', coded('57P03')],
    ['a connection exception', coded('08006')],
    ['a connection refused', coded('ECONNREFUSED')],
    ['a connection reset', coded('ECONNRESET')],
    ["node-postgres's pool out of connections", new Error('timeout exceeded when trying to connect')],
    ['a connection ended under a query', new Error('Connection terminated unexpectedly')],
    ['a client whose connection failed', new Error('Client has encountered a connection error and is not queryable')],
    ["SQLite's write lock held", coded('SQLITE_BUSY', 'database is locked')],
    ["SQLite's snapshot too old", coded('SQLITE_BUSY_SNAPSHOT')],
    ['a database that did not answer at open', new DatabaseUnavailableError('postgres', 'postgres://db', new Error('refused'))],
    ['one of those as a cause', new Error('the batch failed', { cause: coded('40001') })],
  ])('%s is transient', (_, error) => {
    expect(isTransientDatabaseError(error)).toBe(true);
  });

  it.each([
    ['a unique violation', coded('23505')],
    ['a missing table', coded('42P01')],
    ['a syntax error', coded('42601')],
    ['a disk full', coded('53100')],
    ['SQLite constraint', coded('SQLITE_CONSTRAINT_UNIQUE')],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error', 'timeout exceeded when trying to connect'],
  ])('%s is not', (_, error) => {
    expect(isTransientDatabaseError(error)).toBe(false);
  });
});

describe('isTransientImportError', () => {
  it.each([
    ['a transient database failure', coded('57P01')],
    ['GitHub answering 5xx through every retry', new GithubRequestError('/repos/o/r/issues', 502, 'Bad Gateway; gave up after 7 attempts')],
    ['GitHub timing out (408)', new GithubRequestError('/repos/o/r/issues', 408, 'Request Timeout')],
    ['connections to GitHub reset through every retry', new GithubRequestError('/repos/o/r/issues', null, 'socket hang up; gave up after 7 attempts')],
    ['a lease store that did not answer', new LeaseBackendUnavailableError('redis', 'redis://leases', new Error('ECONNREFUSED'))],
  ])('%s is transient', (_, error) => {
    expect(isTransientImportError(error)).toBe(true);
  });

  it.each([
    ['the repository answering 404', new GithubProjectNotFoundError('o/r', 'https://api.github.com')],
    ['a credential refused', new GithubAuthError('GH', 'https://api.github.com')],
    ['an answer that cannot be imported', new GithubAnswerError('/repos/o/r/issues', 'it is a string, not a list')],
    ['an answer too large', new GithubAnswerTooLargeError('/repos/o/r/issues', 8 * 2 ** 20)],
    ['another 4xx', new GithubRequestError('/repos/o/r/issues', 422, 'Validation Failed')],
    ['a redirect the egress policy refuses', new GithubRequestError('/repos/o/r', null, 'refused', { cause: new EgressRefusedError('10.0.0.1', '10.0.0.1', '10.0.0.0/8', 'private') })],
    ['a stall', new ImportStalledError('notes', 'notes: 0 page(s) done', 900_000)],
    ['a lease lost, even through a database failure (no failure at all: the new holder goes on)', Object.assign(new LeaseLostError('import:github:x'), { cause: Object.assign(new Error('x'), { code: '57P01' }) })],
    ['a bug', new TypeError('x is not a function')],
  ])('%s is permanent', (_, error) => {
    expect(isTransientImportError(error)).toBe(false);
  });
});
