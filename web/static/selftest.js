// Checks this browser's canonicalization, hashing, signing and ledger
// verification against the protocol's shared test vectors (../shared/vectors),
// which the caller passes in. The end-to-end test runs it in Chromium.
import { parseStrict, canonicalize, without } from "./jcs.js";
import { payloadHash, signingInput, signApproval } from "./protocol.js";
import { utf8, hex, b64decode, b64encode, seedToPKCS8, importPrivate, verify, equalBytes } from "./crypto.js";
import { leafHash, rootOf, verifyInclusion, parseVerifierKey, verifyNote, parseCheckpoint } from "./ledger.js";

const dec = new TextDecoder();

export async function run(v) {
  const results = [];
  const check = (name, ok, detail = "") => results.push({ name, ok: !!ok, detail });
  const attempt = async (name, f) => {
    try { await f(); } catch (err) { check(name, false, String(err)); }
  };

  for (const c of v.payload_hash.cases) {
    await attempt(`payload_hash/${c.name}`, async () => {
      const params = parseStrict(c.params_json);
      const text = canonicalize(new Map([["params", params], ["tool", c.tool]]));
      const h = await payloadHash(c.tool, params);
      check(`payload_hash/${c.name}`, text === c.canonical && h === c.payload_hash, `${h} / ${text}`);
    });
  }

  for (const c of v.intent.cases) {
    await attempt(`intent/${c.name}`, async () => {
      let obj;
      try { obj = parseStrict(c.intent_json); } catch (err) {
        // Only an intent the Go side calls malformed may fail to parse.
        check(`intent/${c.name}`, c.error === "malformed" && !c.signing_input, String(err));
        return;
      }
      if (!c.signing_input) { check(`intent/${c.name} parses`, true); return; }
      const si = dec.decode(signingInput("intent", obj));
      check(`intent/${c.name}`, si === c.signing_input, si);
    });
  }

  const keys = v.approval.approver_keys;
  for (const c of v.approval.cases) {
    await attempt(`approval/${c.name}`, async () => {
      const obj = parseStrict(c.approval_json);
      const si = signingInput("approval", obj);
      if (c.signing_input) check(`approval/${c.name} signing input`, dec.decode(si) === c.signing_input);
      const k = keys[obj.get("key_id")];
      if (!k) return;
      const sig = b64decode(obj.get("sig"));
      const ok = await verify(b64decode(k.public), sig, si);
      // Signatures of the vectors made over this input verify; tampered ones
      // (decision changed, wrong domain) do not.
      const tampered = ["decision changed after signing", "signed with the intent domain prefix", "signed by an unregistered key"].includes(c.name);
      check(`approval/${c.name}: the vector's verdict agrees`, tampered === (c.error === "approval_invalid"));
      check(`approval/${c.name} signature ${tampered ? "fails" : "verifies"}`, ok === !tampered);
      if (!tampered) {
        // Ed25519 is deterministic: signing here gives the vector's signature.
        const { key } = await importPrivate(seedToPKCS8(b64decode(k.seed)));
        const signed = parseStrict(await signApproval(without(obj, "sig"), key));
        check(`approval/${c.name} signed here`, signed.get("sig") === obj.get("sig"));
      }
    });
  }

  const L = v.ledger;
  await attempt("ledger", async () => {
    const hashes = [];
    for (const [i, l] of L.leaves.entries()) {
      const h = await leafHash(utf8(l.leaf));
      hashes.push(h);
      check(`ledger/leaf ${i}`, hex(h) === l.leaf_hash);
    }
    for (const [size, root] of Object.entries(L.roots)) {
      check(`ledger/root ${size}`, b64encode(await rootOf(hashes.slice(0, Number(size)))) === root);
    }
    const inc = L.inclusion;
    const root = b64decode(L.roots[String(inc.tree_size)]);
    const proof = inc.proof.map(b64decode);
    check("ledger/inclusion", await verifyInclusion(inc.index, inc.tree_size, hashes[inc.index], proof, root));
    check("ledger/inclusion of another leaf fails", !(await verifyInclusion(inc.index, inc.tree_size, hashes[inc.index + 1], proof, root)));
    check("ledger/inclusion at another index fails", !(await verifyInclusion(inc.index + 1, inc.tree_size, hashes[inc.index], proof, root)));
    const key = await parseVerifierKey(L.note_verifier_key);
    const body = await verifyNote(L.checkpoint_note, key);
    const cp = parseCheckpoint(body);
    check("ledger/checkpoint", cp.size === inc.tree_size && equalBytes(cp.root, root) && cp.origin === key.name);
    let tamperedOK = true;
    try { await verifyNote(L.tampered_checkpoint, key); } catch { tamperedOK = false; }
    check("ledger/tampered checkpoint fails", !tamperedOK);
  });

  for (const bad of ['{"a":1,"a":2}', '{"n":9007199254740993}', '{"s":"\\ud800"}', '{"n":1e400}', "[1,]", '{"a":1} x']) {
    let refused = false;
    try { parseStrict(bad); } catch { refused = true; }
    check(`jcs/refuses ${bad}`, refused);
  }
  return { passed: results.filter((r) => r.ok).length, failed: results.filter((r) => !r.ok) };
}
