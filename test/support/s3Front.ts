// The front of the tests' S3 server (s3ServerMain.ts): where s3rver falls short
// of S3, it answers as S3 does; everything else is passed to s3rver unchanged.
// - SigV4: every request signed in its Authorization header is checked against
//   the secret of its access key (AWS's algorithm, recomputed here from the
//   request as received); a mismatch is S3's 403 SignatureDoesNotMatch. An
//   access key it does not know goes on to s3rver, which answers
//   InvalidAccessKeyId.
// - ListMultipartUploads (GET /BUCKET?uploads) and AbortMultipartUpload
//   (DELETE /BUCKET/KEY?uploadId=ID), read from and done on s3rver's own record
//   of the uploads in progress (DIR/BUCKET/._S3rver_uploads/ID/{key,parts}); an
//   upload's initiation time is the time s3rver wrote its key file.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';

/** s3rver's default account: access key → secret. */
export const S3_TEST_KEYS: Readonly<Record<string, string>> = { S3RVER: 'S3RVER' };

const UPLOADS_DIR = '._S3rver_uploads';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s).digest();
/** RFC 3986 percent-encoding, as SigV4 wants it. */
const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const xml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

function s3Error(res: http.ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xml(message)}</Message></Error>`);
}

/**
 * Why the SigV4 signature of `req` does not match, or undefined when it does (or
 * when it is not ours to check: no header signature, an unknown access key).
 */
export function signatureMismatch(req: http.IncomingMessage, secrets: Readonly<Record<string, string>>): string | undefined {
  const auth = req.headers.authorization;
  if (!auth?.startsWith('AWS4-HMAC-SHA256 ')) return undefined;
  const parts = new Map(
    auth
      .slice('AWS4-HMAC-SHA256 '.length)
      .split(',')
      .map((p) => p.trim().split('=', 2) as [string, string]),
  );
  const [accessKey, ...scopeParts] = (parts.get('Credential') ?? '').split('/');
  const secret = secrets[accessKey];
  if (secret === undefined) return undefined;
  const signedHeaders = (parts.get('SignedHeaders') ?? '').split(';');
  const given = parts.get('Signature') ?? '';
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const [rawPath, rawQuery = ''] = (req.url ?? '/').split('?', 2);
  const query = rawQuery
    .split('&')
    .filter(Boolean)
    .map((kv) => {
      const [k, v = ''] = kv.split('=', 2);
      return [uriEncode(decodeURIComponent(k)), uriEncode(decodeURIComponent(v.replace(/\+/g, '%20')))];
    })
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const header = (name: string) => {
    const v = req.headers[name];
    return (Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ');
  };
  const canonical = [
    req.method ?? 'GET',
    rawPath,
    query,
    ...signedHeaders.map((h) => `${h}:${header(h)}`),
    '',
    signedHeaders.join(';'),
    header('x-amz-content-sha256') || 'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = scopeParts.join('/');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const [date, region, service] = scopeParts;
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  const expected = hmac(key, stringToSign);
  const got = Buffer.from(given, 'hex');
  if (got.length === expected.length && timingSafeEqual(got, expected)) return undefined;
  return 'The request signature we calculated does not match the signature you provided. Check your key and signing method.';
}

interface Upload {
  key: string;
  uploadId: string;
  initiated: Date;
}

async function uploadsOf(directory: string, bucket: string): Promise<Upload[]> {
  const dir = path.join(directory, bucket, UPLOADS_DIR);
  const ids = await fs.readdir(dir).catch(() => [] as string[]);
  const out: Upload[] = [];
  for (const uploadId of ids) {
    const keyFile = path.join(dir, uploadId, 'key');
    try {
      const [key, st] = await Promise.all([fs.readFile(keyFile, 'utf8'), fs.stat(keyFile)]);
      out.push({ key, uploadId, initiated: st.mtime });
    } catch {
      // completed or aborted meanwhile
    }
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.uploadId < b.uploadId ? -1 : 1));
}

async function listUploads(res: http.ServerResponse, directory: string, bucket: string, prefix: string): Promise<void> {
  const uploads = (await uploadsOf(directory, bucket)).filter((u) => u.key.startsWith(prefix));
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.end(
    [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
      `<Bucket>${xml(bucket)}</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><Prefix>${xml(prefix)}</Prefix>`,
      '<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>',
      ...uploads.map(
        (u) =>
          `<Upload><Key>${xml(u.key)}</Key><UploadId>${xml(u.uploadId)}</UploadId><Initiated>${u.initiated.toISOString()}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`,
      ),
      '</ListMultipartUploadsResult>',
    ].join(''),
  );
}

async function abortUpload(res: http.ServerResponse, directory: string, bucket: string, key: string, uploadId: string): Promise<void> {
  const upload = (await uploadsOf(directory, bucket)).find((u) => u.uploadId === uploadId && u.key === key);
  if (!upload || !/^[0-9a-f]+$/.test(uploadId)) return s3Error(res, 404, 'NoSuchUpload', 'The specified upload does not exist.');
  await fs.rm(path.join(directory, bucket, UPLOADS_DIR, uploadId), { recursive: true, force: true });
  res.writeHead(204).end();
}

function proxy(req: http.IncomingMessage, res: http.ServerResponse, innerPort: number): void {
  const out = http.request({ host: '127.0.0.1', port: innerPort, method: req.method, path: req.url, headers: req.headers }, (inner) => {
    res.writeHead(inner.statusCode ?? 502, inner.headers);
    inner.pipe(res);
  });
  out.on('error', () => res.destroy());
  req.on('error', () => out.destroy());
  res.on('close', () => out.destroy());
  req.pipe(out);
}

/** The request handler of the front: s3rver on 127.0.0.1:`innerPort` with its objects in `directory`. */
export function s3Front(o: { innerPort: number; directory: string; secrets: Readonly<Record<string, string>> }): http.RequestListener {
  return (req, res) => {
    void (async () => {
      const mismatch = signatureMismatch(req, o.secrets);
      if (mismatch) {
        req.resume();
        return s3Error(res, 403, 'SignatureDoesNotMatch', mismatch);
      }
      const url = new URL(req.url ?? '/', 'http://front');
      const [bucket, ...rest] = url.pathname.slice(1).split('/');
      const key = decodeURIComponent(rest.join('/'));
      if (req.method === 'GET' && key === '' && url.searchParams.has('uploads'))
        return listUploads(res, o.directory, decodeURIComponent(bucket), url.searchParams.get('prefix') ?? '');
      if (req.method === 'DELETE' && key !== '' && url.searchParams.has('uploadId'))
        return abortUpload(res, o.directory, decodeURIComponent(bucket), key, url.searchParams.get('uploadId') ?? '');
      proxy(req, res, o.innerPort);
    })().catch((e: Error) => s3Error(res, 500, 'InternalError', e.message));
  };
}
