// A ring buffer of the simulator's last events, formatted only when a seed fails:
// recording a message costs three field writes, not a string.
import { MessageType, type Message, type NodeId } from '../../src/raft/index.js';

export const node = (id: NodeId): string => `n${id.toString()}`;

/** "n2 -> n3 App term=4 idx=17 logTerm=3 ents=2 commit=15" */
export function formatMessage(m: Message): string {
  let s = `${node(m.from)} -> ${node(m.to)} ${m.type} term=${m.term}`;
  switch (m.type) {
    case MessageType.App:
      s += ` idx=${m.index} logTerm=${m.logTerm} ents=${m.entries.length}`;
      if (m.entries.length > 0) s += `[${m.entries[0].index}..${m.entries[m.entries.length - 1].index}@${m.entries[m.entries.length - 1].term}]`;
      s += ` commit=${m.commit}`;
      break;
    case MessageType.AppResp:
      s += ` idx=${m.index}`;
      if (m.reject) s += ` REJECT hint=${m.rejectHint} logTerm=${m.logTerm}`;
      break;
    case MessageType.Vote:
    case MessageType.PreVote:
      s += ` last=${m.index}@${m.logTerm}`;
      break;
    case MessageType.VoteResp:
    case MessageType.PreVoteResp:
      s += m.reject ? ' REJECT' : ' GRANT';
      break;
    case MessageType.Heartbeat:
      s += ` commit=${m.commit}`;
      break;
    case MessageType.Snap:
      if (m.snapshot) s += ` snap=${m.snapshot.meta.index}@${m.snapshot.meta.term} bytes=${m.snapshot.data.length}`;
      break;
    case MessageType.Prop:
    case MessageType.PropReject:
      s += ` ents=${m.entries.length}`;
      break;
    case MessageType.ReadIndexResp:
      s += ` idx=${m.index}`;
      break;
    default:
      break;
  }
  return s;
}

interface Slot {
  t: number;
  /** A note's text, or the verb for a message ("->" delivered, "drop", ...). */
  text: string;
  m: Message | undefined;
}

export class Trace {
  private readonly slots: Slot[];
  private next = 0;
  private filled = 0;

  constructor(readonly capacity = 60) {
    this.slots = Array.from({ length: capacity }, () => ({ t: 0, text: '', m: undefined }));
  }

  /** A message event: verb is '' for a delivery, or e.g. 'DROP(partition)'. */
  message(t: number, verb: string, m: Message): void {
    const s = this.slots[this.next];
    s.t = t;
    s.text = verb;
    s.m = m;
    this.advance();
  }

  note(t: number, text: string): void {
    const s = this.slots[this.next];
    s.t = t;
    s.text = text;
    s.m = undefined;
    this.advance();
  }

  private advance(): void {
    this.next = (this.next + 1) % this.capacity;
    if (this.filled < this.capacity) this.filled++;
  }

  /** The last `n` events, oldest first. */
  lines(n = this.capacity): string[] {
    const count = Math.min(n, this.filled);
    const out: string[] = [];
    for (let i = count; i > 0; i--) {
      const s = this.slots[(this.next - i + this.capacity) % this.capacity];
      if (s.m) out.push(`t=${s.t} ${s.text ? `${s.text} ` : ''}${formatMessage(s.m)}`);
      else out.push(`t=${s.t} ${s.text}`);
    }
    return out;
  }
}
