// The approver's own Ed25519 key: read from a file or generated here, kept
// in this browser's IndexedDB as a non-extractable CryptoKey (so no script
// can read it back), and never sent anywhere.
import { b64decode, b64encode, seedToPKCS8, importPrivate } from "./crypto.js";

// readKeyFile understands dev.json (approver.seed and approver.key_id), a
// file holding one base64 seed (writ keygen ed25519, .dev/approver.key), and
// a PKCS #8 PEM private key. It returns the PKCS #8 bytes and, when the file
// names it, the key id.
export function readKeyFile(text) {
  const t = text.trim();
  if (t.startsWith("{")) {
    const j = JSON.parse(t);
    const a = j.approver ?? j;
    if (typeof a.seed !== "string") throw new Error("the JSON file has no approver seed");
    return { pkcs8: seedToPKCS8(b64decode(a.seed)), keyID: a.key_id ?? "" };
  }
  const pem = /-----BEGIN PRIVATE KEY-----([\s\S]+?)-----END PRIVATE KEY-----/.exec(t);
  if (pem) return { pkcs8: b64decode(pem[1].replace(/\s+/g, "")), keyID: "" };
  const seed = b64decode(t);
  if (seed.length !== 32) throw new Error("a seed file holds the base64 of 32 bytes");
  return { pkcs8: seedToPKCS8(seed), keyID: "" };
}

// generateKey makes a new key pair here; the PEM of its private half is
// returned once, for the approver to keep.
export async function generateKey() {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const { key, pub } = await importPrivate(pkcs8);
  const lines = b64encode(pkcs8).match(/.{1,64}/g).join("\n");
  return { key, pub, pem: `-----BEGIN PRIVATE KEY-----\n${lines}\n-----END PRIVATE KEY-----\n` };
}

const DB = "writ-approver", STORE = "keys";

function db() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(STORE);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function tx(mode, f) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction(STORE, mode);
    const r = f(t.objectStore(STORE));
    t.oncomplete = () => { d.close(); resolve(r?.result); };
    t.onerror = () => { d.close(); reject(t.error); };
  });
}

// The stored key of an approver identity: { key, pub, keyID }.
export const loadStored = (who) => tx("readonly", (s) => s.get(who));
export const store = (who, v) => tx("readwrite", (s) => s.put(v, who));
export const forget = (who) => tx("readwrite", (s) => s.delete(who));

export const pubB64 = (pub) => b64encode(pub);
