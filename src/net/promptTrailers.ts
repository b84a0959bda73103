// A gRPC call's trailers, sent as soon as its last DATA frame is.
//
// Node's sendTrailers() submits them from a setImmediate: they leave one event-loop
// turn after the response, behind whatever that turn handles first (on a leader, the
// peers' acks and the next commit's appends). A 1-client put waited for it on every
// call. From inside the 'wantTrailers' callback nghttp2 takes trailers at once, and the
// stream's native handle does just that: it is what sendTrailers' deferred step calls.
// That handle is a Node internal, checked here: it is used on the Node lines whose
// header-list format (`name\0value\0flags` per field, and the count) was read (20, 22,
// 24, 26: the same there); on any other, or when the handle is not found, sendTrailers
// does it. test/net/promptTrailers.test.ts sends trailers both ways on the Node it runs
// on and fails if a supported line no longer has the handle.
import type http2 from 'node:http2';

type TrailerHandle = { trailers(list: [string, number]): number };

/** The Node lines whose stream handle was read for its header-list format. */
export const PROMPT_TRAILER_NODE_MAJORS: readonly number[] = [20, 22, 24, 26];
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
/** The handle's symbol, found on the first stream; null once looked for in vain. */
let handleSymbol: symbol | null | undefined = PROMPT_TRAILER_NODE_MAJORS.includes(NODE_MAJOR) ? undefined : null;

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
 * status up to then. `prompt` false takes Node's public sendTrailers() (the tests'
 * check of the fallback).
 */
export function respondWithTrailers(
  stream: http2.ServerHttp2Stream,
  headers: http2.OutgoingHttpHeaders,
  trailers: () => Record<string, string>,
  prompt = true,
): void {
  stream.respond(headers, { waitForTrailers: true });
  stream.once('wantTrailers', () => {
    const handle = prompt ? handleOf(stream) : undefined;
    if (!handle) return stream.sendTrailers(trailers());
    if (handle.trailers(headerList(trailers())) < 0) stream.destroy();
  });
}

/** Whether trailers on `stream` take the prompt path (the handle is there and supported on this Node). */
export function promptTrailersOn(stream: http2.ServerHttp2Stream): boolean {
  return handleOf(stream) !== undefined;
}
