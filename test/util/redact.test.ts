import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/util/redact.js';

describe('redactUrl', () => {
  it('removes passwords and token-like user names by parsing, whatever characters they hold', () => {
    expect(redactUrl('https://user:p@ss@host/x.git')).toBe('https://user:***@host/x.git');
    expect(redactUrl('https://user:p%40ss:w%2Fx@host/x.git')).toBe('https://user:***@host/x.git');
    expect(redactUrl('https://ghp_abcdefghij@github.com/o/r.git')).toBe('https://***@github.com/o/r.git');
    expect(redactUrl('redis://default:hunter2@127.0.0.1:6379/0')).toBe('redis://default:***@127.0.0.1:6379/0');
    expect(redactUrl('https://x:y@[::1]:8443/a')).toBe('https://x:***@[::1]:8443/a');
  });

  it('blanks the values of secret query parameters and keeps the others', () => {
    expect(redactUrl('postgres://db.example/app?password=hunter2&sslmode=require')).toBe('postgres://db.example/app?password=***&sslmode=require');
    expect(redactUrl('https://h/x?access_token=abc&private_key=k&sig=s&page=2')).toBe('https://h/x?access_token=***&private_key=***&sig=***&page=2');
  });

  it('leaves what is no URL alone, and still cuts the user part of a URL the parser refuses', () => {
    expect(redactUrl('/srv/repos/app.git')).toBe('/srv/repos/app.git');
    expect(redactUrl('git@github.com:o/r.git')).toBe('git@github.com:o/r.git');
    expect(redactUrl('https://host')).toBe('https://host');
    expect(redactUrl('https://us er:pa ss@ho st/x')).toBe('https://***@ho st/x');
  });
});
