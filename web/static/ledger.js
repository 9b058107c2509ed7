// Offline verification of a receipt: its RFC 6962 inclusion proof against a
// checkpoint, and the checkpoint's C2SP signed-note Ed25519 signature, by
// this page's own code.
import { sha256, utf8, b64decode, equalBytes, verify } from "./crypto.js";

const leafPrefix = Uint8Array.of(0);
const nodePrefix = Uint8Array.of(1);

const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
};

export const leafHash = (leaf) => sha256(concat(leafPrefix, leaf));
export const nodeHash = (l, r) => sha256(concat(nodePrefix, l, r));

// rootOf computes the RFC 6962 root of a list of leaf hashes.
export async function rootOf(hashes) {
  if (hashes.length === 0) return sha256(new Uint8Array(0));
  if (hashes.length === 1) return hashes[0];
  let k = 1;
  while (k * 2 < hashes.length) k *= 2;
  return nodeHash(await rootOf(hashes.slice(0, k)), await rootOf(hashes.slice(k)));
}

// verifyInclusion checks an inclusion proof (RFC 9162 §2.1.3.2) of the leaf
// hash at index in a tree of size whose root is root.
export async function verifyInclusion(index, size, leafH, proof, root) {
  if (!(index >= 0 && index < size)) return false;
  let fn = index, sn = size - 1, r = leafH;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalBytes(r, root);
}

export class NoteError extends Error {}

// parseVerifierKey reads a C2SP note verifier key "name+hash+base64(0x01 ‖ key)".
export async function parseVerifierKey(vkey) {
  const m = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(vkey.trim());
  if (!m) throw new NoteError("not a note verifier key");
  const [, name, hashHex, b64] = m;
  const k = b64decode(b64);
  if (k.length !== 33 || k[0] !== 1) throw new NoteError("not an Ed25519 verifier key");
  const h = await sha256(concat(utf8(name + "\n"), k));
  const want = [...h.slice(0, 4)].map((x) => x.toString(16).padStart(2, "0")).join("");
  if (want !== hashHex) throw new NoteError("the verifier key's hash does not match its key");
  return { name, hash: h.slice(0, 4), pub: k.slice(1) };
}

// verifyNote checks that a signed note carries a valid signature by key,
// and returns its text (the signed part).
export async function verifyNote(note, key) {
  const cut = note.lastIndexOf("\n\n");
  if (cut < 0 || !note.endsWith("\n")) throw new NoteError("not a signed note");
  const text = note.slice(0, cut + 1);
  for (const line of note.slice(cut + 2, -1).split("\n")) {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m) throw new NoteError("malformed signature line");
    if (m[1] !== key.name) continue;
    const sig = b64decode(m[2]);
    if (sig.length !== 68 || !equalBytes(sig.slice(0, 4), key.hash)) continue;
    if (await verify(key.pub, sig.slice(4), utf8(text))) return text;
    throw new NoteError("the checkpoint's signature does not verify");
  }
  throw new NoteError("the checkpoint is not signed by the trusted key");
}

// parseCheckpoint reads a C2SP tlog checkpoint body: origin, size, root.
export function parseCheckpoint(text) {
  const lines = text.split("\n");
  if (lines.length < 4 || !/^[0-9]+$/.test(lines[1])) throw new NoteError("not a checkpoint");
  const root = b64decode(lines[2]);
  if (root.length !== 32) throw new NoteError("the checkpoint's root is not 32 bytes");
  return { origin: lines[0], size: Number(lines[1]), root };
}
