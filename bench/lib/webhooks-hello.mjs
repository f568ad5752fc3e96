// The ceiling of bench/webhooks.mjs: bare Fastify (the same version forgesync
// serves with) with one route that answers 'ok'. It receives the same signed
// push deliveries as forgesync, so Fastify's default JSON parser reads the
// same bytes; nothing else happens. Prints its address as one JSON line.
import Fastify from 'fastify';

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
app.post('/hooks/github', async () => 'ok');
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ address })}\n`);
const stop = () => app.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
