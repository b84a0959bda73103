// The client's parsers and pure helpers: IDs, durations, endpoints, key ranges,
// phase-2 join settings, removal risks, error texts, and output helpers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDuration, formatDuration, formatElapsed } from '../../src/common/durations.js';
import { parseEndpoint, parseEndpoints } from '../../src/client/endpoints.js';
import { callError, connectReason, opensslReason, unreachableError } from '../../src/client/errors.js';
import { InputError } from '../../src/common/errors.js';
import { hexId, paddedHexId, parseLeaseId, parseMemberId, resolveMemberId } from '../../src/client/ids.js';
import { joinInstructions } from '../../src/client/joinInstructions.js';
import { shellQuote } from '../../src/common/memberCommand.js';
import { prefixEnd, selectKeys } from '../../src/client/keyRange.js';
import { assessRemoval } from '../../src/client/removalRisk.js';
import type { Member } from '../../src/client/types.js';
import { parsePeerUrls, parseRevision } from '../../src/cli/args.js';
import { humanBytes } from '../../src/cli/output/humanize.js';
import { renderTable } from '../../src/cli/output/table.js';

test('member IDs: hex in, bigint out; malformed IDs name the value and an example', () => {
  assert.equal(parseMemberId('8e9e05c52164694d'), 0x8e9e05c52164694dn);
  assert.equal(parseMemberId('8E9E05C52164694D'), 0x8e9e05c52164694dn);
  assert.equal(parseMemberId('0x1'), 1n);
  assert.equal(parseMemberId('ffffffffffffffff'), (1n << 64n) - 1n);
  for (const bad of ['xyz', '', '0', '1ffffffffffffffff', '12 34', '-1']) {
    assert.throws(
      () => parseMemberId(bad),
      (e: Error) =>
        e instanceof InputError && e.message === `invalid member ID "${bad}": expected hex, e.g. 8e9e05c52164694d, or the decimal ID -w json prints`,
    );
  }
  assert.equal(hexId(0x0abcn), 'abc');
  assert.equal(paddedHexId(0x0abcn), '0000000000000abc');
  assert.equal(parseLeaseId('694d71ddacfda227'), 0x694d71ddacfda227n);
  assert.throws(() => parseLeaseId('ffffffffffffffff'), InputError);
});

test("IDs in decimal, as etcdctl's -w json prints them: read exactly; 1-16 digits of 0-9 resolved against the member list", async () => {
  // More than 16 digits: decimal (no uint64 has 17 hex digits), exact above 2^53.
  assert.equal(parseMemberId('10276657743932975437'), 0x8e9e05c52164694dn);
  assert.equal(parseMemberId('18446744073709551615'), (1n << 64n) - 1n);
  assert.throws(() => parseMemberId('18446744073709551616'), InputError);
  assert.equal(parseLeaseId('7587869245473525763'), 7587869245473525763n);
  assert.throws(() => parseLeaseId('9223372036854775808'), InputError);
  // 1-16 digits of 0-9 read both ways: hex without a list (etcdctl's reading) ...
  assert.equal(parseMemberId('1234567890123456'), 0x1234567890123456n);
  const client = (ids: bigint[]) => ({ memberList: () => Promise.resolve({ members: ids.map((id) => ({ id })) }) });
  // ... and with one, the reading that names a member.
  assert.equal(await resolveMemberId('1234567890123456', client([1234567890123456n, 2n])), 1234567890123456n);
  assert.equal(await resolveMemberId('1234567890123456', client([0x1234567890123456n])), 0x1234567890123456n);
  assert.equal(await resolveMemberId('1234567890123456', client([7n])), 0x1234567890123456n, 'neither: hex, and the server says not found');
  // Unambiguous texts never read the list.
  const never = { memberList: () => Promise.reject(new Error('listed')) };
  assert.equal(await resolveMemberId('8e9e05c52164694d', never), 0x8e9e05c52164694dn);
  assert.equal(await resolveMemberId('10276657743932975437', never), 0x8e9e05c52164694dn);
});

test('durations: Go-style with a unit; formatted back for messages', () => {
  assert.equal(parseDuration('2s'), 2000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('100us'), 1);
  for (const bad of ['5', '', 's', '2 s', '0s', '-1s', '2x']) assert.throws(() => parseDuration(bad, '--dial-timeout'), /invalid --dial-timeout/);
  assert.equal(formatDuration(2000), '2s');
  assert.equal(formatDuration(500), '500ms');
  assert.equal(formatDuration(1500), '1.5s');
  assert.equal(formatDuration(90_000), '1m30s');
  assert.equal(formatElapsed(2.3456), '2.3456ms');
  assert.equal(formatElapsed(0.5), '500µs');
  assert.equal(formatElapsed(1200), '1.2s');
});

test('endpoints: host:port, http:// and https://, comma lists, clear errors', () => {
  assert.deepEqual(parseEndpoint('127.0.0.1:2379'), { text: '127.0.0.1:2379', address: '127.0.0.1:2379', host: '127.0.0.1', port: 2379, scheme: 'bare' });
  assert.equal(parseEndpoint('http://10.0.0.1:2379').scheme, 'http');
  assert.equal(parseEndpoint('https://etcd.example:443/').address, 'etcd.example:443');
  assert.equal(parseEndpoint('http://[::1]:2379').address, '[::1]:2379');
  assert.equal(parseEndpoint('http://h:80').port, 80);
  assert.deepEqual(
    parseEndpoints('a:1, http://b:2,,a:1').map((e) => e.text),
    ['a:1', 'http://b:2'],
  );
  assert.throws(() => parseEndpoint('unix:///tmp/s'), /invalid endpoint "unix:\/\/\/tmp\/s": scheme unix:\/\/ is not supported/);
  assert.throws(() => parseEndpoint('localhost'), /the port is missing/);
  assert.throws(() => parseEndpoint('http://h:2379/v3'), /path or query/);
  assert.throws(() => parseEndpoints(' , '), /no endpoints given/);
});

test('key ranges follow clientv3: prefix end, empty key with --prefix, --from-key', () => {
  assert.equal(prefixEnd(Buffer.from('/a/')).toString(), '/a0');
  assert.deepEqual(prefixEnd(Buffer.from([0x61, 0xff])), Buffer.from([0x62]));
  assert.deepEqual(prefixEnd(Buffer.from([0xff, 0xff])), Buffer.from([0]));
  assert.deepEqual(selectKeys('', undefined, { prefix: true }), { key: Buffer.from([0]), rangeEnd: Buffer.from([0]) });
  assert.deepEqual(selectKeys('k', undefined, { fromKey: true }), { key: Buffer.from('k'), rangeEnd: Buffer.from([0]) });
  assert.deepEqual(selectKeys('a', 'c', {}), { key: Buffer.from('a'), rangeEnd: Buffer.from('c') });
  assert.deepEqual(selectKeys('a', undefined, {}), { key: Buffer.from('a'), rangeEnd: Buffer.alloc(0) });
  assert.throws(() => selectKeys('a', 'b', { prefix: true }), /END cannot be combined with --prefix/);
  assert.throws(() => selectKeys('a', undefined, { prefix: true, fromKey: true }), /cannot be used together/);
  assert.throws(() => selectKeys('', undefined, {}), /KEY is empty/);
});

const m = (id: bigint, name: string, peer: string, isLearner = false): Member => ({
  id,
  name,
  peerURLs: [peer],
  clientURLs: name ? [peer.replace('2380', '2379')] : [],
  isLearner,
});

test('member add: phase-2 settings list named members plus the new one; unstarted ones are skipped', () => {
  const added = m(0x4n, '', 'http://10.0.0.4:2380', true);
  const members = [m(0x1n, 'infra1', 'http://10.0.0.1:2380'), m(0x2n, '', 'http://10.0.0.2:2380'), m(0x3n, 'infra3', 'http://10.0.0.3:2380'), added];
  const j = joinInstructions('infra4', added, members);
  assert.deepEqual(j.env, [
    ['LIFEBOAT_NAME', 'infra4'],
    ['LIFEBOAT_INITIAL_CLUSTER', 'infra1=http://10.0.0.1:2380,infra3=http://10.0.0.3:2380,infra4=http://10.0.0.4:2380'],
    ['LIFEBOAT_INITIAL_ADVERTISE_PEER_URLS', 'http://10.0.0.4:2380'],
    ['LIFEBOAT_INITIAL_CLUSTER_STATE', 'existing'],
  ]);
  assert.equal(
    j.command,
    'lifeboat server --name infra4 --data-dir infra4.etcd --listen-peer-urls http://10.0.0.4:2380 --initial-advertise-peer-urls http://10.0.0.4:2380' +
      ' --listen-client-urls http://10.0.0.4:2379 --advertise-client-urls http://10.0.0.4:2379' +
      ' --initial-cluster infra1=http://10.0.0.1:2380,infra3=http://10.0.0.3:2380,infra4=http://10.0.0.4:2380 --initial-cluster-state existing',
  );
  const given = joinInstructions('infra4', added, members, { clientURLs: ['https://10.0.0.4:12379'], dataDir: '/var/lib/my dir' });
  assert.match(
    given.command,
    / --data-dir '\/var\/lib\/my dir' .* --listen-client-urls https:\/\/10\.0\.0\.4:12379 --advertise-client-urls https:\/\/10\.0\.0\.4:12379 /,
  );
  assert.equal(shellQuote("it's here"), `'it'\\''s here'`);
  // Against etcd: etcdctl's ETCD_* block and an etcd command line with the same settings.
  const etcd = joinInstructions('infra4', added, members, { runtime: 'etcd' });
  assert.deepEqual(
    etcd.env.map(([k]) => k),
    ['ETCD_NAME', 'ETCD_INITIAL_CLUSTER', 'ETCD_INITIAL_ADVERTISE_PEER_URLS', 'ETCD_INITIAL_CLUSTER_STATE'],
  );
  assert.equal(etcd.command, j.command.replace('lifeboat server ', 'etcd '));
});

test('member remove: the leader and a 2-voter cluster are dangerous; a learner or a follower of 3 is not', () => {
  const three = [m(1n, 'a', 'http://a:2380'), m(2n, 'b', 'http://b:2380'), m(3n, 'c', 'http://c:2380')];
  assert.deepEqual(assessRemoval(three, 1n, 2n).reasons, []);
  assert.match(assessRemoval(three, 1n, 1n).reasons.join(), /it is the leader/);
  const two = [m(1n, 'a', 'http://a:2380'), m(2n, 'b', 'http://b:2380'), m(3n, 'c', 'http://c:2380', true)];
  assert.match(assessRemoval(two, 1n, 2n).reasons.join(), /2 voting members/);
  assert.deepEqual(assessRemoval(two, 1n, 3n).reasons, [], 'removing the learner is routine');
  assert.equal(assessRemoval(two, 2n, 2n).reasons.length, 2);
  assert.deepEqual(assessRemoval(three, 1n, 9n), { reasons: [] }, 'unknown members are left to the server to refuse');
});

test('errors are one line naming the endpoint', () => {
  assert.equal(connectReason('No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: '), 'connection refused');
  assert.equal(
    opensslReason(
      '80FCAC96B87F0000:error:0A000412:SSL routines:ssl3_read_bytes:sslv3 alert bad certificate:../deps/openssl/ssl/rec_layer_s3.c:1601:SSL alert number 42',
    ),
    'sslv3 alert bad certificate',
  );
  assert.equal(
    unreachableError('127.0.0.1:23790', 2000, 'connection refused').message,
    'cannot reach 127.0.0.1:23790 within 2s (connection refused); check --endpoints',
  );
  assert.match(
    unreachableError('https://h:1', 2000, 'unable to verify the first certificate').message,
    /^TLS handshake with https:\/\/h:1 failed \(unable to verify the first certificate\); check --cacert/,
  );
  const notFound = callError({ code: 5, details: 'etcdserver: member not found' }, '127.0.0.1:2379', 5000);
  assert.equal(notFound.message, '127.0.0.1:2379: etcdserver: member not found');
  assert.equal(notFound.serverMessage, 'etcdserver: member not found');
  assert.match(
    callError({ code: 4, details: 'Deadline exceeded' }, 'h:1', 5000).message,
    /^h:1: no answer within 5s \(deadline exceeded\); raise --command-timeout/,
  );
  assert.match(
    callError({ code: 9, details: 'etcdserver: can only promote a learner member which is in sync with leader' }, 'h:1', 5000).message,
    /in sync with leader; wait until the learner has caught up/,
  );
});

test('CLI argument helpers: revisions and peer URLs', () => {
  assert.equal(parseRevision('42'), 42);
  assert.throws(() => parseRevision('0'), /invalid revision "0": expected an integer ≥ 1/);
  assert.throws(() => parseRevision('abc'), InputError);
  assert.equal(parseRevision('0', '--rev', 0), 0);
  assert.deepEqual(parsePeerUrls('http://a:2380, https://b:2380'), ['http://a:2380', 'https://b:2380']);
  assert.throws(() => parsePeerUrls('a:2380'), /invalid URL "a:2380" in --peer-urls/);
  assert.throws(() => parsePeerUrls('http://a'), /invalid URL/);
});

test('output helpers: sizes like go-humanize, tables like etcdctl', () => {
  assert.equal(humanBytes(7), '7 B');
  assert.equal(humanBytes(20480), '20 kB');
  assert.equal(humanBytes(2_500_000), '2.5 MB');
  assert.equal(humanBytes(1000), '1.0 kB');
  assert.equal(humanBytes(21_500), '22 kB');
  assert.equal(
    renderTable(['ID', 'IS LEARNER'], [['8e9e05c52164694d', 'false']], { right: [1] }),
    [
      '+------------------+------------+',
      '|        ID        | IS LEARNER |',
      '+------------------+------------+',
      '| 8e9e05c52164694d |      false |',
      '+------------------+------------+',
    ].join('\n'),
  );
});
