import { integer, setting, text } from '../config/setting.js';

/** Settings of the HTTP service of `forgesync serve`. */
export const serverSettings = {
  port: setting({ key: 'port', env: 'FORGESYNC_PORT', default: '8080', doc: 'HTTP port of forgesync serve.', parse: integer(0, 65535) }),
  host: setting({
    key: 'host',
    env: 'FORGESYNC_HOST',
    defaultDoc: '`0.0.0.0` (`127.0.0.1` when no admin token is set)',
    doc: 'Address forgesync serve binds.',
    parse: text(),
  }),
  adminToken: setting({
    key: 'adminToken',
    env: 'FORGESYNC_ADMIN_TOKEN',
    doc: 'Bearer token of the admin API and the dashboard actions.',
    parse: text({ minLength: 16 }),
  }),
  readToken: setting({ key: 'readToken', env: 'FORGESYNC_READ_TOKEN', doc: 'Optional read-only bearer token.', parse: text({ minLength: 16 }) }),
};
