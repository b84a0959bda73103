// gRPC's status codes, here beside the calls that send and read them: the member's
// services (src/api), its peers (src/transport) and the client all use them.

/** gRPC status codes (google.golang.org/grpc/codes), numbered as on the wire. */
export enum GrpcCode {
  OK = 0,
  Canceled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
}
