// The --user credentials of a run, settled before its first step: the password asked
// (once) when it was not given, then checked at once. A recovery's cluster is down,
// so the password is checked against the source's own auth store (the users and
// bcrypt hashes the recovered cluster will have); any other run authenticates to its
// cluster. A wrong one is said to be wrong now, not as a step's timeout later.
import { clientFor } from '../client/etcdClient.js';
import { InputError } from '../common/errors.js';
import { checkSourcePassword } from '../recovery/sourceAuth.js';
import type { StepContext } from './stepTypes.js';

type Connection = StepContext['connection'];

export interface CredentialCheck {
  /** the recovery source (a data dir or snapshot file), checked first */
  source?: string;
  /** the cluster's endpoints, authenticated to when there is no source */
  endpoints?: string | string[];
}

/** Credentials already checked against a source (by `lifeboat recover`, before its run): not read and hashed again. */
const checkedAgainst = new WeakMap<object, string>();

/**
 * `connection` with its password known (asked now if it was to be asked) and checked; a wrong one is an InputError.
 * With no source and no endpoints it is only asked.
 */
export async function settleCredentials(connection: Connection, where: CredentialCheck): Promise<Connection> {
  const creds = connection.credentials;
  if (!creds) return connection;
  if (where.source !== undefined && checkedAgainst.get(creds) === where.source) return connection;
  const password = typeof creds.password === 'string' ? creds.password : await creds.password();
  const settled = { ...connection, credentials: { user: creds.user, password } };
  if (where.source !== undefined) {
    const check = await checkSourcePassword(where.source, creds.user, password);
    if (check === 'wrong') throw new InputError(`wrong password for user ${creds.user} (checked against the auth store of ${where.source}); nothing was run`);
    if (check === 'no-such-user')
      throw new InputError(
        `user ${creds.user} is not in the auth store of ${where.source}: give a user the recovered cluster will have (root); nothing was run`,
      );
    if (check === 'ok') checkedAgainst.set(settled.credentials, where.source);
    return settled;
  }
  const endpoints = Array.isArray(where.endpoints) ? where.endpoints.map(String) : where.endpoints;
  if (endpoints === undefined || endpoints.length === 0) return settled;
  const client = clientFor(endpoints, settled);
  try {
    await client.status();
  } catch (err) {
    // Only a refused password is the operator's to fix now; an unreachable cluster is the steps' to report.
    if (/authentication failed|user name not found|invalid user ID or password/.test((err as Error).message))
      throw new InputError(`wrong password for user ${creds.user} (the cluster at ${[endpoints].flat().join(',')} refused it); nothing was run`);
  } finally {
    client.close();
  }
  return settled;
}
