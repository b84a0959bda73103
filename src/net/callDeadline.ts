// A call's deadline, from its grpc-timeout header (the gRPC spec's TimeoutValue:
// one to eight digits, then a unit H, M, S, m, u or n), as grpc-go and grpc-js
// honour it: when it passes the call ends with DEADLINE_EXCEEDED.

/** What a call whose deadline passed is told: Go's context.DeadlineExceeded, as etcd answers (rpctypes.ErrGRPCDeadlineExceeded). */
export const DEADLINE_EXCEEDED_DETAILS = 'context deadline exceeded';

/** No deadline: later than any time (so `Date.now() >= deadline` is never true). */
export const NO_DEADLINE = Infinity;

const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

const TIMEOUT = /^(\d{1,8})([HMSmun])$/;

/** A grpc-timeout value in milliseconds, or undefined when it is not one (e.g. nine digits, no unit). */
export function parseGrpcTimeout(value: string): number | undefined {
  const m = TIMEOUT.exec(value);
  return m ? Number(m[1]) * UNIT_MS[m[2]] : undefined;
}
