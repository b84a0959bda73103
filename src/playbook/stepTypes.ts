// The contract between the playbook engine and the step library: every step
// type declares its parameters (validated before anything runs), says what it
// would change (dry-run), and runs idempotently, checking its preconditions.
import type { ConnectionOptions } from '../client/etcdClient.js';

/** Types a playbook variable or step parameter may have. */
export type ParamType = 'string' | 'int' | 'url' | 'list' | 'member' | 'bool' | 'duration' | 'path' | 'secret';

/**
 * Values a step receives, by type: string/url/path/secret → string; int → number;
 * bool → boolean; duration → number of milliseconds ("5s", "500ms", "2m" in YAML);
 * list → string[] (a YAML list, or a comma-separated string); member → MemberSpec
 * (a YAML map, or "name=peerURL,clientURL[,dataDir]").
 */
export interface MemberSpec {
  name: string;
  peerUrl: string;
  clientUrl: string;
  /** Where the member keeps its data when this host starts it. */
  dataDir?: string;
}

/**
 * What a value given for a parameter must be on this host, checked when the
 * variable it comes from is entered (entryChecks.ts): `source` an existing,
 * readable data dir or snapshot; `new-data-dir` not a file; `listen-url` a port
 * free on this host when the URL's host is this host.
 */
export type EntryCheck = 'source' | 'new-data-dir' | 'listen-url';

export interface ParamSpec {
  type: ParamType;
  required?: boolean;
  default?: unknown;
  description: string;
  /** checked when the variable feeding it is entered (a prompt, --set, --vars) */
  check?: EntryCheck;
}

/** What a running step may use; the engine provides it. */
export interface StepContext {
  /** Human progress line (listr2 task output on a TTY, a log line when scripted). */
  progress(text: string): void;
  /** Record a timeline event in the audit log (notes, warnings, overrides). */
  event(kind: string, message: string, data?: Record<string, unknown>): void;
  /**
   * Ask the operator. On a TTY: a prompt. Scripted: true with --yes; otherwise the
   * run stops with exit 3 naming the step. A failed safety check never asks this.
   */
  confirm(question: string): Promise<boolean>;
  /** Where the run keeps files (logs of members it starts, snapshots it takes). */
  runDir: string;
  /** Aborted when the operator interrupts the run. */
  signal: AbortSignal;
  /** The client connection flags the run was started with (endpoints resolved per step). */
  connection: ConnectionOptions;
}

/** Thrown by a step whose safety check fails: the run stops with exit 3, never overridden by --yes. */
export class SafetyCheckError extends Error {
  constructor(
    message: string,
    /** The flag or variable that overrides this check, if any (e.g. 'assume-dead'). */
    readonly override?: string,
  ) {
    super(message);
    this.name = 'SafetyCheckError';
  }
}

export interface StepDefinition {
  type: string;
  description: string;
  params: Record<string, ParamSpec>;
  /**
   * Checked for every step of the run before its first step runs (a run, a resume,
   * --dry-run), with the parameters known then (those waiting for an earlier
   * step's output are absent): why they cannot work on this host, in one line. The
   * run is refused with exit 2 before anything changes.
   */
  preflight?(params: Record<string, unknown>): string | undefined;
  /** One line per change the step would make, for --dry-run (params already resolved). */
  describe(params: Record<string, unknown>): string[];
  /**
   * Does the work and returns its outputs (recorded in the audit log, and usable by
   * later steps as `${steps.<id>.<output>}`). Must be safe to run again after an
   * interruption: check first whether the work is already done.
   */
  run(params: Record<string, unknown>, ctx: StepContext): Promise<Record<string, unknown>>;
  /**
   * A safety check whose answer goes stale (are the old members still down?): a
   * resumed run runs it again instead of reusing the earlier attempt's answer, until
   * the run has attempted a step of one of these types (after a member was started,
   * its own URLs would answer the check).
   */
  recheckOnResume?: { until: readonly string[] };
}
