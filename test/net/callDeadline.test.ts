// The grpc-timeout header as the gRPC spec writes it (src/net/callDeadline.ts):
// one to eight digits and a unit; anything else is not a timeout.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGrpcTimeout } from '../../src/net/callDeadline.js';

test('grpc-timeout: every unit in milliseconds, at most eight digits, nothing else', () => {
  const ms: Array<[string, number]> = [
    ['1H', 3_600_000],
    ['2M', 120_000],
    ['3S', 3000],
    ['1000m', 1000],
    ['0m', 0],
    ['99999999m', 99_999_999],
    ['00000010S', 10_000],
    ['1500u', 1.5],
    ['2000000n', 2],
  ];
  for (const [value, want] of ms) assert.equal(parseGrpcTimeout(value), want, value);
  for (const value of ['', 'm', '10', '123456789m', '10s', '10 S', ' 10S', '10S ', '-1S', '+1S', '1.5S', '10SS', '１S']) {
    assert.equal(parseGrpcTimeout(value), undefined, JSON.stringify(value));
  }
});
