// Keeping secrets out of what is shown from the audit log. The log records a
// run's variables as given (nothing in a playbook marks a variable secret yet),
// so whatever displays a run masks, by name, every value whose name looks like a
// password, token or key, and then every other place those values appear
// (a step input that interpolated one, an answer, a message).

export const REDACTED = '[redacted]';

/** Names that hold secrets wherever they appear in the name. */
const SECRET_ANYWHERE = /password|passwd|passphrase|secret|token|credential|api[-_]?key|private[-_]?key/i;
/** Names that hold secrets when they end in one of these words: client-key, db_pass; not keyFile or keyCount. */
const SECRET_LAST_WORD = new Set(['key', 'pass', 'pwd']);

/** Whether a variable, parameter or field called `name` looks like it holds a secret. */
export function looksSecret(name: string): boolean {
  if (SECRET_ANYWHERE.test(name)) return true;
  const words = name.split(/[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])/).filter((w) => w !== '');
  return SECRET_LAST_WORD.has(words.at(-1)?.toLowerCase() ?? '');
}

/** Shorter values are not searched for inside other text: too likely to match by chance. */
const MIN_SCRUBBED_LENGTH = 4;

/**
 * Masks secrets in anything read from a run: fields whose names look secret
 * (or are in `secretNames`), and the text of each such value wherever else it
 * appears.
 */
export class Redactor {
  /** the variable names whose values were masked */
  readonly redactedNames: string[] = [];
  private readonly values: string[] = [];
  private readonly secretNames: Set<string>;

  constructor(variables: Record<string, unknown>, secretNames: Iterable<string> = []) {
    this.secretNames = new Set(secretNames);
    for (const [name, value] of Object.entries(variables)) {
      if (!this.isSecret(name)) continue;
      this.redactedNames.push(name);
      this.collect(value);
    }
    // The longest first, so a secret containing another is masked whole.
    this.values.sort((a, b) => b.length - a.length);
  }

  isSecret(name: string): boolean {
    return this.secretNames.has(name) || looksSecret(name);
  }

  /** Text with every secret value replaced. */
  text(s: string): string {
    let out = s;
    for (const v of this.values) out = out.split(v).join(REDACTED);
    return out;
  }

  /** A copy of `value` with secret-named fields masked and secret values replaced in every string. */
  value(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.value(v));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.isSecret(k) && v !== null && v !== '' ? REDACTED : this.value(v)]));
    }
    return value;
  }

  private collect(value: unknown): void {
    if (typeof value === 'string' && value.length >= MIN_SCRUBBED_LENGTH) this.values.push(value);
    else if (typeof value === 'number' && String(value).length >= MIN_SCRUBBED_LENGTH) this.values.push(String(value));
    else if (Array.isArray(value)) value.forEach((v) => this.collect(v));
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach((v) => this.collect(v));
  }
}
