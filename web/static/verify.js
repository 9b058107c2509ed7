// The ledger page: the trusted checkpoint key, and a receipt verified here.
import { parseStrict, canonicalize } from "./jcs.js";
import { utf8, b64decode } from "./crypto.js";
import { leafHash, verifyInclusion, parseVerifierKey, verifyNote, parseCheckpoint } from "./ledger.js";

const $ = (id) => document.getElementById(id);
const KEY = "writ.ledger.verifier";

// verifyReceipt checks a GET /v1/receipts/{index} answer (its text) against
// a verifier key; it returns the steps it took, each {what, ok}. A receipt
// of a tenant the session may not view comes as its leaf hash only
// ({"index", "leaf_hash", "proof", "checkpoint"}): its inclusion is proved
// from that hash.
export async function verifyReceipt(text, index, vkey) {
  const steps = [];
  const step = (what, ok) => { steps.push({ what, ok }); return ok; };
  try {
    const key = await parseVerifierKey(vkey);
    step(`trusted key ${key.name} parsed`, true);
    const r = parseStrict(text);
    const note = r.get("checkpoint");
    const body = await verifyNote(note, key);
    step("checkpoint signature verifies with the trusted key", true);
    const cp = parseCheckpoint(body);
    if (!step(`checkpoint origin is the key's name (${cp.origin})`, cp.origin === key.name)) return steps;
    const receipt = r.get("receipt");
    let hash;
    if (receipt === undefined && typeof r.get("leaf_hash") === "string") {
      if (!step(`leaf hash is at index ${index} (another tenant's receipt: its content is not shown)`, r.get("index") === index)) return steps;
      hash = b64decode(r.get("leaf_hash"));
    } else {
      if (!step(`receipt is at index ${index}`, receipt instanceof Map && receipt.get("index") === index && r.get("index") === index)) return steps;
      hash = await leafHash(utf8(canonicalize(receipt)));
    }
    if (!step(`the tree of size ${cp.size} contains index ${index}`, index < cp.size)) return steps;
    const proof = r.get("proof").map((p) => b64decode(p));
    const ok = await verifyInclusion(index, cp.size, hash, proof, cp.root);
    step(`inclusion proof (${proof.length} hashes) leads from the ${receipt === undefined ? "leaf hash" : "receipt"} to the checkpoint's root`, ok);
  } catch (err) {
    step(err.message, false);
  }
  return steps;
}

async function showTrust() {
  const stored = localStorage.getItem(KEY);
  const server = $("server-key")?.textContent ?? "";
  $("trusted-key").value = stored ?? server;
  const st = $("trust-state");
  if (!stored) st.textContent = "No key trusted yet: the field shows the server's; compare it with your operator's before trusting it.";
  else if (server && stored !== server) st.textContent = "Warning: the server now names another key than the one you trust.";
  else st.textContent = "Receipts are verified against the key you trust.";
}

export async function init() {
  if (!$("trusted-key")) return;
  await showTrust();
  $("trust-save").addEventListener("click", async () => {
    const v = $("trusted-key").value.trim();
    try {
      await parseVerifierKey(v);
      localStorage.setItem(KEY, v);
      await showTrust();
    } catch (err) {
      $("trust-state").textContent = "Not a note verifier key: " + err.message;
    }
  });
  const sec = $("receipt");
  if (!sec) return;
  const index = Number(sec.dataset.index);
  const resp = await fetch(`/v1/receipts/${index}`, { credentials: "same-origin" });
  const text = await resp.text();
  if (!resp.ok) {
    $("receipt-json").textContent = text;
    $("verify").disabled = true;
    return;
  }
  try {
    const answer = parseStrict(text);
    $("receipt-json").textContent = answer.has("receipt")
      ? JSON.stringify(JSON.parse(canonicalize(answer.get("receipt"))), null, 2)
      : `A receipt of a tenant this session may not view: only its leaf hash is shown.\nleaf_hash: ${answer.get("leaf_hash")}`;
  } catch (err) {
    $("receipt-json").textContent = "The server's answer is not valid: " + err.message;
  }
  $("verify").addEventListener("click", async () => {
    const vkey = $("trusted-key").value.trim();
    const steps = await verifyReceipt(text, index, vkey);
    const ol = $("verify-steps");
    ol.replaceChildren(...steps.map((s) => {
      const li = document.createElement("li");
      li.textContent = (s.ok ? "✓ " : "✗ ") + s.what;
      li.className = s.ok ? "ok" : "bad";
      return li;
    }));
    const ok = steps.length > 0 && steps.every((s) => s.ok);
    // A key is trusted only when the person saved it: the server's word
    // about its own key is never taken silently.
    const trusted = localStorage.getItem(KEY) === vkey;
    const res = $("verify-result");
    res.textContent = !ok ? "Not verified: see the failing step."
      : trusted ? "Verified in this browser: the receipt is in the log the trusted key signed."
      : "The proof holds for the key in the field, but this browser does not trust that key yet: compare it with the one your operator published, then press Trust this key.";
    res.dataset.verified = String(ok);
    res.dataset.trusted = String(ok && trusted);
  });
}
