// etcd's answers a replay tells apart (the texts both runtimes send).
import { EtcdClientError } from '../client/errors.js';
import { EtcdText } from '../common/etcdErrorTexts.js';

const serverSaid = (e: unknown, text: string) => e instanceof EtcdClientError && (e.serverMessage === text || e.message.includes(text));

/** LeaseGrant of an ID the member already has. */
export const isAlreadyGranted = (e: unknown): boolean => serverSaid(e, EtcdText.leaseExist);
