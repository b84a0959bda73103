// The shape of a playbook once its YAML is read: names, variables and a tree of
// steps, each piece remembering where it came from (line, column and a field
// path such as `steps[3].with.peer-url`) so every error can point at it.
import type { ParamType } from './stepTypes.js';

export const PARAM_TYPES: readonly ParamType[] = ['string', 'int', 'url', 'list', 'member', 'bool', 'duration', 'path', 'secret'];

export const PLAYBOOK_KEYS = ['name', 'description', 'variables', 'steps'] as const;
export const VARIABLE_KEYS = ['type', 'items', 'default', 'prompt', 'description', 'validation'] as const;
export const VALIDATION_KEYS = ['pattern', 'min', 'max', 'choices'] as const;
export const STEP_KEYS = ['id', 'type', 'name', 'with', 'for-each', 'as', 'steps'] as const;
export const MEMBER_KEYS = ['name', 'peerUrl', 'clientUrl', 'dataDir'] as const;

/** Playbook, variable and step ids: lowercase words joined by hyphens (they appear in stable step ids like `readd[2].add-learner`). */
export const NAME_PATTERN = /^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$/;

/** Where something is in the playbook file. */
export interface Origin {
  /** 1-based */
  line: number;
  /** 1-based */
  col: number;
  /** e.g. `steps[3].with.peer-url` (list positions from 1) */
  field: string;
}

export interface Validation {
  pattern?: RegExp;
  min?: number;
  max?: number;
  choices?: unknown[];
}

export interface VariableDef {
  name: string;
  type: ParamType;
  /** for lists: the type of each item (default string) */
  items?: ParamType;
  hasDefault: boolean;
  /** already converted to the variable's type */
  default?: unknown;
  prompt?: string;
  description?: string;
  validation: Validation;
  origin: Origin;
  /** its definition is broken (already reported): references to it are not checked further */
  invalid?: boolean;
}

/** A parameter as written under `with:`: plain YAML data whose strings may hold `${…}` references. */
export interface ParamNode {
  value: unknown;
  origin: Origin;
}

export interface StepNode {
  kind: 'step';
  /** unique in the file: given, or the step type (numbered -2, -3 … when repeated) */
  id: string;
  type: string;
  /** a title; may hold references */
  name?: string;
  with: Record<string, ParamNode>;
  origin: Origin;
  /** where the `type:` value is (an unknown type points there) */
  typeOrigin: Origin;
  /** the step had a misspelt key (already reported): missing parameters are not reported on top */
  hasUnknownKeys?: boolean;
}

export interface ForEachNode {
  kind: 'for-each';
  id: string;
  name?: string;
  /** a `${…}` reference to a list, or a YAML list */
  forEach: ParamNode;
  /** the name each item goes by in the nested steps (default `item`) */
  as: string;
  steps: PlanNode[];
  origin: Origin;
}

export type PlanNode = StepNode | ForEachNode;

export interface Playbook {
  /** the file as the operator named it (or its absolute path for a shipped playbook) */
  file: string;
  absPath: string;
  text: string;
  /** sha256 of the file's bytes, hex */
  sha256: string;
  name: string;
  description: string;
  variables: VariableDef[];
  steps: PlanNode[];
}
