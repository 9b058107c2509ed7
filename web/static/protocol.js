// The protocol's hashes and signing inputs (PROTOCOL.md §1, §3), computed
// exactly as the Go protocol package computes them.
import { canonicalize, parseStrict, without, JSONError } from "./jcs.js";
import { sha256, hex, utf8, b64encode, sign, randomBytes } from "./crypto.js";

// payloadHash is "sha256:" + hex(SHA-256(JCS({"params": params, "tool": tool}))).
export async function payloadHash(tool, params) {
  if (!(params instanceof Map)) throw new JSONError("params must be a JSON object");
  const text = canonicalize(new Map([["params", params], ["tool", tool]]));
  return "sha256:" + hex(await sha256(utf8(text)));
}

// checkParams parses the params text a page shows, and returns the payload
// hash of exactly that text; the text must already be canonical, so that
// what a person reads is what is hashed.
export async function checkParams(tool, text) {
  const params = parseStrict(text);
  if (canonicalize(params) !== text) throw new JSONError("the parameters shown are not in canonical form");
  return payloadHash(tool, params);
}

// signingInput is "writ/v1/" + kind + "\n" + JCS(object without "sig").
export function signingInput(kind, obj) {
  const m = obj instanceof Map ? obj : new Map(Object.entries(obj));
  return utf8(`writ/v1/${kind}\n` + canonicalize(without(m, "sig")));
}

// rfc3339 writes a time as the protocol does: UTC, Z, milliseconds.
export const rfc3339 = (d) => d.toISOString();

// buildApproval makes an unsigned approval artifact valid for ttl ms.
export function buildApproval({ intentID, payloadHash, tenant, approver, decision, keyID, now = new Date(), ttl = 5 * 60 * 1000 }) {
  return new Map([
    ["type", "writ.approval/v1"],
    ["id", "apr-" + hex(randomBytes(16))],
    ["intent_id", intentID],
    ["payload_hash", payloadHash],
    ["tenant", tenant],
    ["approver", approver],
    ["decision", decision],
    ["nonce", b64encode(randomBytes(16))],
    ["issued_at", rfc3339(now)],
    ["expires_at", rfc3339(new Date(now.getTime() + ttl))],
    ["key_id", keyID],
  ]);
}

// signApproval signs an approval with an Ed25519 CryptoKey and returns its
// canonical JSON text with "sig".
export async function signApproval(approval, key) {
  const sig = await sign(key, signingInput("approval", approval));
  const a = new Map(approval);
  a.set("sig", b64encode(sig));
  return canonicalize(a);
}
