// A child's output shown inside the demo's own, indented: whole lines only. A pipe
// hands over chunks that end anywhere (mid-line, mid-table), and stdout and stderr
// interleave, so indenting each chunk at its line starts put the prefix inside lines
// and left others flush left. Each stream keeps its partial line until its newline.
export class IndentedLines {
  private partial = '';

  constructor(
    private readonly prefix: string,
    private readonly write: (text: string) => void,
  ) {}

  push(chunk: string): void {
    const text = this.partial + chunk;
    const end = text.lastIndexOf('\n');
    if (end < 0) {
      this.partial = text;
      return;
    }
    this.partial = text.slice(end + 1);
    this.write(
      text
        .slice(0, end + 1)
        .split('\n')
        .slice(0, -1)
        .map((line) => (line === '' ? '\n' : `${this.prefix}${line}\n`))
        .join(''),
    );
  }

  /** The last line, when the stream ended without a newline. */
  end(): void {
    if (this.partial !== '') this.write(`${this.prefix}${this.partial}\n`);
    this.partial = '';
  }
}
