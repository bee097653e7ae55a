/**
 * Where a JSON text first breaks the grammar, as a line and a column, and what was expected there. JSON.parse
 * says neither the same way twice: on Node 20 "Unexpected token '}', "{…" is not valid JSON" gives no position
 * at all, and the others an offset into the file. Run only once JSON.parse has refused the text, so it need
 * not build anything.
 */
export interface JsonSyntaxProblem {
  line: number;
  column: number;
  message: string;
}

class Broken {
  constructor(
    readonly at: number,
    readonly message: string,
  ) {}
}

export function jsonSyntaxProblem(text: string): JsonSyntaxProblem | null {
  const scanner = new Scanner(text);
  try {
    scanner.document();
    return null;
  } catch (error) {
    if (!(error instanceof Broken)) return null;
    const before = text.slice(0, error.at);
    const line = before.split('\n').length;
    return { line, column: error.at - before.lastIndexOf('\n'), message: error.message };
  }
}

class Scanner {
  private i = 0;

  constructor(private readonly text: string) {}

  document(): void {
    if (this.text.startsWith('\uFEFF')) this.fail('the file starts with a byte order mark: save it as UTF-8 without one');
    this.value();
    this.space();
    if (this.i < this.text.length) this.fail('more text after the end of the JSON value');
  }

  private value(): void {
    this.space();
    const c = this.text[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    const word = /^[a-z]+/.exec(this.text.slice(this.i, this.i + 6))?.[0];
    if (word === 'true' || word === 'false' || word === 'null') {
      this.i += word.length;
      return;
    }
    if (c === "'") this.fail('strings take double quotes, not single');
    this.fail(`expected a value, found ${this.found()}`);
  }

  private object(): void {
    this.i++;
    this.space();
    if (this.text[this.i] === '}') {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      const c = this.text[this.i];
      if (c === '}') this.fail('a comma before "}": JSON allows none after the last property');
      if (c === "'") this.fail('property names take double quotes, not single');
      if (c !== '"') this.fail(`expected a property name in double quotes, found ${this.found()}`);
      this.string();
      this.space();
      if (this.text[this.i] !== ':') this.fail(`expected ":" after the property name, found ${this.found()}`);
      this.i++;
      this.value();
      this.space();
      const next = this.text[this.i];
      if (next === '}') {
        this.i++;
        return;
      }
      if (next !== ',') this.fail(`expected "," or "}" after a property's value, found ${this.found()}${next === '"' ? ': a missing comma?' : ''}`);
      this.i++;
    }
  }

  private array(): void {
    this.i++;
    this.space();
    if (this.text[this.i] === ']') {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] === ']') this.fail('a comma before "]": JSON allows none after the last item');
      this.value();
      this.space();
      const next = this.text[this.i];
      if (next === ']') {
        this.i++;
        return;
      }
      if (next !== ',') this.fail(`expected "," or "]" after an item, found ${this.found()}${next === '"' ? ': a missing comma?' : ''}`);
      this.i++;
    }
  }

  private string(): void {
    this.i++;
    for (;;) {
      const c = this.text[this.i];
      if (c === undefined) this.fail('a string that never ends: its closing double quote is missing');
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === '\n' || c === '\r') this.fail('a line break inside a string: write it as \\n');
      if (c < ' ') this.fail('a control character inside a string: write it escaped (\\t, \\u0000)');
      if (c === '\\') {
        const escape = /^\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})/.exec(this.text.slice(this.i, this.i + 6))?.[0];
        if (escape === undefined) this.fail('an escape JSON does not have: \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits');
        this.i += escape.length;
      } else this.i++;
    }
  }

  private number(): void {
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.i, this.i + 400))?.[0];
    if (number === undefined) this.fail(`expected a number, found ${this.found()}`);
    this.i += number.length;
    if (/^[\d.eE]/.test(this.text[this.i] ?? '')) this.fail('a number JSON does not have: no leading zeros, digits on both sides of a point');
  }

  private space(): void {
    for (;;) {
      const c = this.text[this.i];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.i++;
      else if (c === '/' && (this.text[this.i + 1] === '/' || this.text[this.i + 1] === '*')) this.fail('JSON has no comments');
      else return;
    }
  }

  /** One character only: the text around it may be a secret written into the file. */
  private found(): string {
    if (this.i >= this.text.length) return 'the end of the file';
    return this.text[this.i] === '"' ? 'a string' : JSON.stringify(this.text[this.i]);
  }

  private fail(message: string): never {
    throw new Broken(this.i, message);
  }
}
