// One unary gRPC call over raw HTTP/2, with a grpc-timeout header and no deadline
// or message-size limit of the client's own: only the server can end it or refuse
// it (tests of the member's deadlines and request limits).
import http2 from 'node:http2';
import { serviceDefinition } from '../../src/proto/load.js';

export interface UnaryAnswer {
  /** grpc-status */
  code: number;
  /** grpc-message, decoded */
  details: string;
  /** from the request to the end of the call */
  ms: number;
  /** the response message, decoded (on OK) */
  reply?: Record<string, any>;
}

/**
 * Calls `service`/`method` (e.g. 'etcdserverpb.KV', 'Put') on `client`
 * (host:port) with `request`, as our codec encodes it (64-bit integers as
 * decimal strings, bytes as Buffers); `timeout` is the grpc-timeout value
 * (e.g. '1S'), none when undefined. Resolves with the status the member answers.
 */
export function rawUnary(client: string, service: string, method: string, request: object, timeout?: string): Promise<UnaryAnswer> {
  const def = serviceDefinition(service)[method];
  const body = def.requestSerialize(request);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  const start = Date.now();
  const session = http2.connect(`http://${client}`);
  session.on('error', () => {});
  return new Promise<UnaryAnswer>((resolve, reject) => {
    // Far past every deadline here: a bound on the test, not a client deadline.
    const bound = setTimeout(() => reject(new Error(`no answer to ${method} in 20 s`)), 20_000);
    const req = session.request({
      ':method': 'POST',
      ':path': def.path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(timeout === undefined ? {} : { 'grpc-timeout': timeout }),
    });
    let status: { code: number; details: string } | undefined;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) status = { code: Number(h['grpc-status']), details: decodeURIComponent(String(h['grpc-message'] ?? '')) };
    };
    const chunks: Buffer[] = [];
    req.on('response', take);
    req.on('trailers', take);
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('close', () => {
      clearTimeout(bound);
      if (!status) return reject(new Error(`${method} ended without a status`));
      const data = Buffer.concat(chunks);
      const reply =
        status.code === 0 && data.length >= 5 ? (def.responseDeserialize(data.subarray(5, 5 + data.readUInt32BE(1))) as Record<string, any>) : undefined;
      resolve({ ...status, ms: Date.now() - start, reply });
    });
    req.on('error', () => {});
    req.end(Buffer.concat([prefix, body]));
  }).finally(() => session.close());
}
