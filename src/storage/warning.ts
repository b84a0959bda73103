/** Something an operator should see in the log, as an event with fields (`msg` plus context). */
export interface StorageWarning {
  msg: string;
  [field: string]: string | number;
}
