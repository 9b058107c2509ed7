// Live updates for every page, and each page's own behaviour. Pages work
// without this script (plain reloads); with it, regions marked data-region
// are refreshed from the server when an event they show arrives.
const body = document.body.dataset;
const status = document.getElementById("live-status");
let epoch = body.epoch, since = Number(body.seq || 0);
let backoff = 1000, timer = null;

function setStatus(state, text) {
  if (!status) return;
  status.dataset.state = state;
  status.textContent = text;
}

// refresh fetches this page again and swaps its live regions, keeping the
// focus where it was.
async function refresh() {
  timer = null;
  const r = await fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (r.redirected || !r.ok) { location.reload(); return; }
  const doc = new DOMParser().parseFromString(await r.text(), "text/html");
  const focused = document.activeElement?.id;
  for (const el of document.querySelectorAll("[data-region]")) {
    const fresh = doc.getElementById(el.id);
    if (fresh) el.replaceChildren(...fresh.childNodes);
  }
  if (focused && document.activeElement?.id !== focused) document.getElementById(focused)?.focus();
  document.dispatchEvent(new CustomEvent("writ:refreshed"));
}

function connect() {
  const live = (body.live || "").split(" ").filter(Boolean);
  if (live.length === 0) return;
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}/v1/events?epoch=${encodeURIComponent(epoch)}&since=${since}`);
  ws.onopen = () => { backoff = 1000; setStatus("live", "Live updates: on"); };
  ws.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    if (ev.type === "reset") { location.reload(); return; }
    epoch = ev.epoch;
    since = ev.seq;
    status && (status.dataset.seq = String(since));
    if (live.includes(ev.type) && !timer) timer = setTimeout(refresh, 150);
  };
  ws.onclose = () => {
    setStatus("off", "Live updates: reconnecting…");
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 15000);
  };
}

document.addEventListener("submit", (e) => {
  const msg = e.target.dataset.confirm;
  if (msg && !confirm(msg)) e.preventDefault();
});

connect();
if (body.page === "approvals") import("./approvals.js").then((m) => m.init());
if (body.page === "ledger") import("./verify.js").then((m) => m.init());
