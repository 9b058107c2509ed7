// Hashes, base64 and Ed25519 with WebCrypto, in the forms the protocol
// writes them.

const enc = new TextEncoder();

export const utf8 = (s) => enc.encode(s);

export async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

export const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

export function b64encode(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

// b64decode reads standard base64 with padding, refusing anything else.
export function b64decode(s) {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) {
    throw new Error("not standard padded base64");
  }
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}

export const equalBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The PKCS #8 wrapping of a 32-byte Ed25519 seed (RFC 8410).
const pkcs8Prefix = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]);

export function seedToPKCS8(seed) {
  if (seed.length !== 32) throw new Error("an Ed25519 seed is 32 bytes");
  const der = new Uint8Array(48);
  der.set(pkcs8Prefix);
  der.set(seed, 16);
  return der;
}

// importPrivate imports a PKCS #8 Ed25519 key and returns it, non-extractable,
// with its raw public key.
export async function importPrivate(pkcs8) {
  const k = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", k);
  const pub = b64urlDecode(jwk.x);
  const key = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  return { key, pub };
}

export function b64urlDecode(s) {
  const t = s.replace(/-/g, "+").replace(/_/g, "/");
  return b64decode(t + "=".repeat((4 - (t.length % 4)) % 4));
}

export async function sign(key, bytes) {
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, key, bytes));
}

export async function verify(pub, sig, bytes) {
  const k = await crypto.subtle.importKey("raw", pub, { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, k, sig, bytes);
}

export function randomBytes(n) {
  return crypto.getRandomValues(new Uint8Array(n));
}
