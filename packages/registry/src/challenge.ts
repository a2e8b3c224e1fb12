/** One challenge of a WWW-Authenticate header (RFC 7235): a scheme with either auth-params or a token68. */
export interface AuthChallenge {
  /** Lowercased: "bearer", "basic", … */
  scheme: string;
  /** Parameter names lowercased; quoted values unescaped. */
  params: Record<string, string>;
  token68?: string;
}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const TOKEN68_CHAR = /[A-Za-z0-9\-._~+/]/;

class Scanner {
  pos = 0;
  constructor(readonly text: string) {}

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  peek(): string {
    return this.text[this.pos] ?? '';
  }

  skipSpaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }

  skipSeparators(): void {
    while (this.peek() === ' ' || this.peek() === '\t' || this.peek() === ',') this.pos++;
  }

  token(): string {
    const start = this.pos;
    while (!this.done && TCHAR.test(this.peek())) this.pos++;
    return this.text.slice(start, this.pos);
  }

  quotedString(): string {
    this.pos++; // opening quote
    let out = '';
    while (!this.done) {
      const c = this.text[this.pos++]!;
      if (c === '"') return out;
      if (c === '\\' && !this.done) out += this.text[this.pos++];
      else out += c;
    }
    throw new Error('unterminated quoted string');
  }

  /** A token68 at the cursor, ending at a comma or the end, or undefined (cursor unchanged). */
  token68(): string | undefined {
    const start = this.pos;
    let end = start;
    while (end < this.text.length && TOKEN68_CHAR.test(this.text[end]!)) end++;
    if (end === start) return undefined;
    while (this.text[end] === '=') end++;
    let after = end;
    while (this.text[after] === ' ' || this.text[after] === '\t') after++;
    if (after < this.text.length && this.text[after] !== ',') return undefined;
    this.pos = end;
    return this.text.slice(start, end);
  }

  /** Reads `name = value` if one is at the cursor; otherwise leaves the cursor where it was. */
  param(): [string, string] | undefined {
    const start = this.pos;
    const name = this.token();
    if (name === '') return undefined;
    this.skipSpaces();
    if (this.peek() !== '=') {
      this.pos = start;
      return undefined;
    }
    this.pos++;
    this.skipSpaces();
    if (this.peek() === '"') return [name.toLowerCase(), this.quotedString()];
    const value = this.token();
    if (value === '') {
      // "name=" with nothing after it is the padding of a token68, not a parameter.
      this.pos = start;
      return undefined;
    }
    return [name.toLowerCase(), value];
  }
}

/**
 * Parses every challenge of a WWW-Authenticate header value, e.g.
 * `Bearer realm="https://auth.example/token",service="registry",scope="repository:a:pull", Basic realm="x"`.
 * Throws an Error on malformed input.
 */
export function parseAuthChallenges(header: string): AuthChallenge[] {
  const s = new Scanner(header);
  const challenges: AuthChallenge[] = [];
  s.skipSeparators();
  while (!s.done) {
    const scheme = s.token();
    if (scheme === '') throw new Error(`unexpected ${JSON.stringify(s.peek())} at offset ${s.pos}`);
    const challenge: AuthChallenge = { scheme: scheme.toLowerCase(), params: {} };
    challenges.push(challenge);
    const hadSpace = s.peek() === ' ' || s.peek() === '\t';
    s.skipSpaces();
    if (hadSpace && !s.done && s.peek() !== ',') {
      const first = s.param();
      if (first) {
        challenge.params[first[0]] = first[1];
        // Further params follow commas; a bare token after a comma starts the next challenge.
        for (;;) {
          s.skipSpaces();
          if (s.peek() !== ',') break;
          const save = s.pos;
          s.skipSeparators();
          const next = s.param();
          if (!next) {
            s.pos = save;
            break;
          }
          challenge.params[next[0]] = next[1];
        }
      } else {
        const t68 = s.token68();
        if (t68 === undefined) throw new Error(`malformed parameters for ${scheme} at offset ${s.pos}`);
        challenge.token68 = t68;
      }
    }
    s.skipSpaces();
    if (!s.done && s.peek() !== ',') throw new Error(`unexpected ${JSON.stringify(s.peek())} at offset ${s.pos}`);
    s.skipSeparators();
  }
  return challenges;
}

/** Headers may repeat; Node gives a repeated WWW-Authenticate as an array or joined. */
export function challengesFromHeader(value: string | string[] | undefined): AuthChallenge[] {
  if (value === undefined) return [];
  const values = Array.isArray(value) ? value : [value];
  return values.flatMap((v) => parseAuthChallenges(v));
}
