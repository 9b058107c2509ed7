// Strict JSON parsing and RFC 8785 (JCS) canonicalization, as the protocol
// package does it in Go: duplicate member names, lone surrogates, numbers
// outside IEEE 754 doubles and integers a double cannot hold exactly are
// refused, so that no two texts the Go side tells apart are given one form.
// Objects parse to Maps, so that no member name can touch a prototype.

export class JSONError extends Error {}

export function parseStrict(text) {
  let i = 0;
  const fail = (why) => { throw new JSONError(`${why} at offset ${i}`); };
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const value = (depth) => {
    if (depth > 10000) fail("nested too deeply");
    ws();
    const c = text[i];
    if (c === "{") return object(depth);
    if (c === "[") return array(depth);
    if (c === '"') return string();
    if (c === "-" || (c >= "0" && c <= "9")) return number();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, i)) { i += word.length; return v; }
    }
    fail("unexpected character");
  };
  const object = (depth) => {
    const m = new Map();
    i++; ws();
    if (text[i] === "}") { i++; return m; }
    for (;;) {
      ws();
      if (text[i] !== '"') fail("expected a member name");
      const k = string();
      if (m.has(k)) fail(`duplicate member name ${JSON.stringify(k)}`);
      ws();
      if (text[i] !== ":") fail("expected ':'");
      i++;
      m.set(k, value(depth + 1));
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "}") { i++; return m; }
      fail("expected ',' or '}'");
    }
  };
  const array = (depth) => {
    const a = [];
    i++; ws();
    if (text[i] === "]") { i++; return a; }
    for (;;) {
      a.push(value(depth + 1));
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "]") { i++; return a; }
      fail("expected ',' or ']'");
    }
  };
  const string = () => {
    const start = i;
    i++;
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail("control character in a string");
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail("bad \\u escape");
          i += 6;
        } else if ('"\\/bfnrt'.includes(e)) {
          i += 2;
        } else fail("bad escape");
        continue;
      }
      i++;
    }
    i++;
    const s = JSON.parse(text.slice(start, i));
    if (!s.isWellFormed()) fail("lone surrogate in a string");
    return s;
  };
  const number = () => {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!m) fail("bad number");
    const lit = m[0];
    i += lit.length;
    const n = Number(lit);
    if (!Number.isFinite(n)) fail(`number ${lit} is out of IEEE 754 double range`);
    if (!/[.eE]/.test(lit) && BigInt(lit) !== BigInt(n)) fail(`integer ${lit} cannot be held exactly by a double`);
    return n;
  };
  const v = value(0);
  ws();
  if (i !== text.length) fail("text after the value");
  return v;
}

// canonicalize returns the JCS text of a value made of Maps (or plain
// objects), arrays, strings, finite numbers, booleans and null.
export function canonicalize(v) {
  if (v === null || v === true || v === false) return String(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new JSONError("non-finite number");
    return Object.is(v, -0) ? "0" : JSON.stringify(v);
  }
  if (typeof v === "string") {
    if (!v.isWellFormed()) throw new JSONError("lone surrogate in a string");
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return "[" + v.map(canonicalize).join(",") + "]";
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
  // Member names sort by their UTF-16 code units: JavaScript's own order.
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return "{" + entries.map(([k, x]) => canonicalize(k) + ":" + canonicalize(x)).join(",") + "}";
}

// without returns a copy of an object (Map) without one member.
export function without(m, name) {
  const c = new Map(m);
  c.delete(name);
  return c;
}
