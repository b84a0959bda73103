// s3://bucket/prefix: placeholder until the S3 store lands.
import { StoreUnavailable, type ObjectStore, type S3StoreOptions } from './objectStore.js';

export const S3Store = {
  open(url: string, _bucket: string, _prefix: string, _o: S3StoreOptions): Promise<ObjectStore> {
    return Promise.reject(new StoreUnavailable(`${url}: the S3 store is not built yet`));
  },
};
