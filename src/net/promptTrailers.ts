// A gRPC call's trailers, sent as soon as its last DATA frame is.
//
// Node's sendTrailers() submits them from a setImmediate: they leave one event-loop
// turn after the response, behind whatever that turn handles first (on a leader, the
// peers' acks and the next commit's appends). A 1-client put waited for it on every
// call. From inside the 'wantTrailers' callback nghttp2 takes trailers at once, and the
// stream's native handle does just that: it is what sendTrailers' deferred step calls.
// That handle is a Node internal, checked here: it is used on Node 20 only, where its
// header-list format (`name\0value\0flags` per field, and the count) was read; anywhere
// else, or when the handle is not found, sendTrailers does it.
import type http2 from 'node:http2';

type TrailerHandle = { trailers(list: [string, number]): number };

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
/** The handle's symbol, found on the first stream; null once looked for in vain. */
let handleSymbol: symbol | null | undefined = NODE_MAJOR === 20 ? undefined : null;

function handleOf(stream: http2.ServerHttp2Stream): TrailerHandle | undefined {
  if (handleSymbol === undefined) handleSymbol = Object.getOwnPropertySymbols(stream).find((s) => s.description === 'kHandle') ?? null;
  if (handleSymbol === null) return undefined;
  const handle = (stream as unknown as Record<symbol, unknown>)[handleSymbol] as Partial<TrailerHandle> | undefined;
  return typeof handle?.trailers === 'function' ? (handle as TrailerHandle) : undefined;
}

/** Trailers with no NUL in a name or value (gRPC's status and percent-encoded message). */
function headerList(trailers: Record<string, string>): [string, number] {
  let list = '';
  let count = 0;
  for (const [name, value] of Object.entries(trailers)) {
    list += `${name}\0${value}\0\0`;
    count++;
  }
  return [list, count];
}

/**
 * Responds to `stream` with `headers`, then sends `trailers()` right after the last
 * DATA frame (the stream's end). `trailers` is read when they go, so a call may set its
 * status up to then.
 */
export function respondWithTrailers(stream: http2.ServerHttp2Stream, headers: http2.OutgoingHttpHeaders, trailers: () => Record<string, string>): void {
  stream.respond(headers, { waitForTrailers: true });
  stream.once('wantTrailers', () => {
    const handle = handleOf(stream);
    if (!handle) return stream.sendTrailers(trailers());
    if (handle.trailers(headerList(trailers())) < 0) stream.destroy();
  });
}
