// Worker thread body for passwords.ts: bcrypt off the member's event loop.
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import type { PasswordJob, PasswordReply } from './passwords.js';

parentPort?.on('message', (job: PasswordJob) => {
  let reply: PasswordReply;
  try {
    reply =
      job.kind === 'hash'
        ? { id: job.id, hash: bcrypt.hashSync(job.password, bcrypt.genSaltSync(job.cost)) }
        : { id: job.id, match: bcrypt.compareSync(job.password, job.hash) };
  } catch (e) {
    // Never the password: only what went wrong.
    reply = { id: job.id, error: (e as Error).name };
  }
  parentPort?.postMessage(reply);
});
