// A call's trailers leave with its last DATA frame through the stream's native handle
// (a Node internal, src/net/promptTrailers.ts) on the Node lines whose format was read,
// and through Node's public sendTrailers() otherwise. Both paths deliver the same
// trailers, an error status with a percent-encoded message too; and on a supported line
// the handle is there, so a Node release that drops it fails here instead of silently
// taking the slower path.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { PROMPT_TRAILER_NODE_MAJORS, promptTrailersOn, respondWithTrailers } from '../../src/net/promptTrailers.js';

async function call(prompt: boolean, trailers: Record<string, string>): Promise<{ trailers: http2.IncomingHttpHeaders; body: Buffer; promptPath: boolean }> {
  let promptPath = false;
  const server = http2.createServer();
  server.on('stream', (stream) => {
    promptPath = promptTrailersOn(stream);
    respondWithTrailers(stream, { ':status': 200, 'content-type': 'application/grpc' }, () => trailers, prompt);
    stream.end(Buffer.from([0, 0, 0, 0, 2, 8, 1]));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  try {
    const req = client.request({ ':path': '/etcdserverpb.KV/Range', ':method': 'POST', 'content-type': 'application/grpc', te: 'trailers' });
    req.end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    const got = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no trailers within 5 s')), 5000);
      req.once('trailers', (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
    await new Promise((r) => req.once('close', r));
    return { trailers: got, body: Buffer.concat(chunks), promptPath };
  } finally {
    client.close();
    await new Promise((r) => server.close(r));
  }
}

const ERROR = { 'grpc-status': '9', 'grpc-message': 'etcdserver%3A%20mvcc%3A%20required%20revision%20has%20been%20compacted' };

for (const prompt of [true, false]) {
  test(`trailers through ${prompt ? 'the stream handle' : "Node's sendTrailers()"} arrive whole after the body, an OK and an error status`, async () => {
    for (const trailers of [{ 'grpc-status': '0' }, ERROR]) {
      const r = await call(prompt, trailers);
      assert.deepEqual(r.body, Buffer.from([0, 0, 0, 0, 2, 8, 1]));
      for (const [k, v] of Object.entries(trailers)) assert.equal(r.trailers[k], v, JSON.stringify(r.trailers));
    }
  });
}

test('on a supported Node line the stream handle is there (the prompt path is taken)', async () => {
  const major = Number(process.versions.node.split('.')[0]);
  const r = await call(true, { 'grpc-status': '0' });
  assert.equal(r.promptPath, PROMPT_TRAILER_NODE_MAJORS.includes(major), `Node ${process.version}: the handle ${r.promptPath ? 'is' : 'is not'} there`);
});
