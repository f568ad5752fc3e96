// The webhook receiver of bench/feeds.mjs, run as a child process (fork, with
// IPC) so that it has a core of its own: node:http on 127.0.0.1, port chosen
// by the system, every POST answered 204 No Content once its body has been
// read. It counts the requests and the events in them; while "reporting" is
// on it also tells the parent, per event, when it arrived (epoch ms with
// sub-millisecond digits: performance.timeOrigin + performance.now(), the
// same clock the parent reads) with the event's id, time and data.
//
// Messages from the parent: { op: 'count', id } → { op: 'count', id, requests, events };
// { op: 'report', on } → { op: 'report', on }; { op: 'reset' } → { op: 'reset' }.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

let requests = 0;
let events = 0;
let reporting = false;

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const arrivedAt = performance.timeOrigin + performance.now();
    requests++;
    // A batch is a JSON array; the bench counts events without parsing unless it reports them.
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const batch = req.headers['content-type'] === 'application/cloudevents-batch+json';
    if (reporting || batch) {
      const parsed = JSON.parse(body.toString('utf8'));
      const list = Array.isArray(parsed) ? parsed : [parsed];
      events += list.length;
      if (reporting) {
        for (const event of list) process.send({ op: 'event', arrivedAt, id: event.id, time: event.time, type: event.type, data: event.data });
      }
    } else {
      events++;
    }
    res.writeHead(204);
    res.end();
  });
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;

process.on('message', (message) => {
  if (message.op === 'count') process.send({ op: 'count', id: message.id, requests, events });
  else if (message.op === 'report') {
    reporting = Boolean(message.on);
    process.send({ op: 'report', on: reporting });
  } else if (message.op === 'reset') {
    requests = 0;
    events = 0;
    process.send({ op: 'reset' });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send({ op: 'ready', port: server.address().port }));
