// grpc-js client constructors for our services (serviceDefinition in load.ts),
// for the toolkit's etcd client and the tests. A member loads none of grpc-js.
import * as grpc from '#grpc-js';
import { serviceDefinition } from './load.js';

const constructors = new Map<string, grpc.ServiceClientConstructor>();

/** A service's client constructor by its full name, e.g. 'etcdserverpb.KV'. */
export function service(name: string): grpc.ServiceClientConstructor {
  let ctor = constructors.get(name);
  if (!ctor) {
    ctor = grpc.makeClientConstructor(serviceDefinition(name), name);
    constructors.set(name, ctor);
  }
  return ctor;
}
