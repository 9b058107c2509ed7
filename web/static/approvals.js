// The approvals page: the approver's key, and approve or deny signed here.
import { checkParams, buildApproval, signApproval } from "./protocol.js";
import { importPrivate } from "./crypto.js";
import { readKeyFile, generateKey, loadStored, store, forget, pubB64 } from "./keys.js";

let current = null; // { key, pub, keyID }

const $ = (id) => document.getElementById(id);
const who = () => document.body.dataset.tenant + "/" + document.body.dataset.approver;

function registered() {
  const panel = $("key-panel");
  return panel ? JSON.parse(panel.dataset.keys || "null") || {} : {};
}

// use makes k the signing key, finding its key id among the approver's
// registered keys by its public half.
async function use(k, remember) {
  const pub = pubB64(k.pub);
  const match = Object.entries(registered()).find(([, p]) => p === pub);
  const keyID = match ? match[0] : k.keyID || $("key-id").value.trim();
  current = { key: k.key, pub: k.pub, keyID };
  $("key-id").value = keyID;
  if (match) {
    $("key-state").textContent = `Key loaded: ${pub} — registered as ${keyID}.`;
    $("key-state").dataset.state = "ready";
  } else {
    $("key-state").textContent = `Key loaded: ${pub} — not registered for you yet: an admin must register it before the server accepts your approvals.`;
    $("key-state").dataset.state = "unregistered";
  }
  if (remember) await store(who(), current);
}

async function onFile(e) {
  const f = e.target.files[0];
  if (!f) return;
  try {
    const { pkcs8, keyID } = readKeyFile(await f.text());
    const { key, pub } = await importPrivate(pkcs8);
    await use({ key, pub, keyID }, true);
  } catch (err) {
    $("key-state").textContent = "That file holds no usable Ed25519 key: " + err.message;
    $("key-state").dataset.state = "error";
  }
  e.target.value = "";
}

async function onGenerate() {
  const g = await generateKey();
  await use({ key: g.key, pub: g.pub, keyID: "" }, true);
  const b = document.body.dataset;
  const id = $("key-id").value.trim() || b.approver + "-" + pubB64(g.pub).slice(0, 8).replace(/[^A-Za-z0-9]/g, "x");
  $("key-id").value = id;
  current.keyID = id;
  await store(who(), current);
  $("key-command").textContent = `writ key add-approver --tenant ${b.tenant} --id ${id} --public ${pubB64(g.pub)} --approver ${b.approver}`;
  $("key-download").href = URL.createObjectURL(new Blob([g.pem], { type: "application/x-pem-file" }));
  $("key-register").hidden = false;
}

async function onForget() {
  await forget(who());
  current = null;
  $("key-state").textContent = "No key loaded.";
  $("key-state").dataset.state = "none";
}

// decide checks the shown params against the intent's payload hash, then
// builds, signs and sends the approval.
async function decide(button) {
  const card = button.closest("article.approval");
  const out = card.querySelector(".outcome");
  const say = (msg, state) => { out.textContent = msg; out.dataset.state = state; };
  const d = card.dataset;
  if (!current || !current.keyID) return say("Load your signing key first (above).", "nokey");
  let hash;
  try {
    hash = await checkParams(d.tool, card.querySelector("pre.params").textContent);
  } catch (err) {
    return say("Refused to sign: the parameters cannot be checked: " + err.message, "mismatch");
  }
  if (hash !== d.payloadHash) {
    return say(`Refused to sign: the parameters shown hash to ${hash}, not the intent's ${d.payloadHash}.`, "mismatch");
  }
  const b = document.body.dataset;
  const approval = buildApproval({ intentID: d.intent, payloadHash: hash, tenant: d.tenant, approver: b.approver,
    decision: button.dataset.decision, keyID: current.keyID });
  const body = await signApproval(approval, current.key);
  button.disabled = true;
  const r = await fetch("/v1/approvals", { method: "POST", body, credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": b.csrf } });
  const j = await r.json().catch(() => ({}));
  button.disabled = false;
  if (r.ok) {
    say(`${button.dataset.decision === "approve" ? "Approved" : "Denied"}: the intent is now ${j.state}.`, "sent");
    card.dataset.sent = body;
    window.writLastApproval = body; // what was sent, for a second try
  } else {
    say(`Refused: ${j.error?.code ?? r.status} — ${j.error?.message ?? ""}`, "refused");
  }
}

export async function init() {
  if ($("key-panel")) {
    $("key-file").addEventListener("change", onFile);
    $("key-generate").addEventListener("click", onGenerate);
    $("key-forget").addEventListener("click", onForget);
    const k = await loadStored(who()).catch(() => null);
    if (k) await use(k, false);
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-decision]");
    if (b) decide(b).catch((err) => {
      b.disabled = false;
      const out = b.closest("article").querySelector(".outcome");
      out.textContent = "Signing failed: " + err.message;
      out.dataset.state = "error";
    });
  });
}
