/** Keeps the last `limit` characters of a text stream. */
export class TailBuffer {
  private text = '';
  constructor(private readonly limit: number) {}

  push(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.limit * 2) this.text = this.text.slice(-this.limit);
  }

  toString(): string {
    return this.text.length > this.limit ? this.text.slice(-this.limit) : this.text;
  }
}

/**
 * Splits a text stream into lines on `\n`, `\r\n` and bare `\r` (git's progress
 * meter rewrites its line with `\r`), calling `onLine` for each non-empty line.
 */
export class LineSplitter {
  private partial = '';
  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r\n|\r|\n/);
    this.partial = parts.pop() ?? '';
    if (this.partial.length > 64 * 1024) {
      parts.push(this.partial);
      this.partial = '';
    }
    for (const line of parts) if (line.length > 0) this.emit(line);
  }

  end(): void {
    if (this.partial.length > 0) this.emit(this.partial);
    this.partial = '';
  }

  private emit(line: string): void {
    try {
      this.onLine(line);
    } catch {
      // a progress display must never break a git command
    }
  }
}
