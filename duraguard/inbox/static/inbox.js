// duraguard inbox: lists what waits for a person, signs decisions in this browser.
//
// The private key never leaves the page: it is read from the person's PEM file (or kept,
// not extractable, in IndexedDB) and used through WebCrypto Ed25519. The server hands over the
// exact statement of an unsigned decision; the page checks that statement says what the person
// chose, signs its bytes, and posts the signature back. Every value is put in the page as text.
"use strict";

const state = {
  me: null,
  csrf: null,
  key: null, // {name, key: CryptoKey, publicKey: base64, stored: bool}
  asks: [],
  closed: [],
  version: -1,
  skew: 0, // server clock minus ours, in seconds
  selected: null, // {workflow_id, call_id}
  detail: null,
  preview: null, // {edits: json text, ok, ...}
};

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
  return node;
}

function show(id, visible) { $(id).hidden = !visible; }

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    if (state.csrf) headers["X-CSRF-Token"] = state.csrf;
  }
  const r = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = new Error((data && data.error) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return data;
}

const q = (params) => new URLSearchParams(params).toString();

function short(value, limit = 80) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length <= limit ? text : text.slice(0, limit - 1) + "…";
}

function duration(seconds) {
  if (seconds <= 0) return "expired";
  const s = Math.floor(seconds);
  if (s >= 86400) return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, "0")}h`;
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

const serverNow = () => Date.now() / 1000 + state.skew;

// -- the key ---------------------------------------------------------------------------------

const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)));
const b64urlToB64 = (s) => s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4);

async function keyFromPem(text) {
  if (/PUBLIC KEY/.test(text)) throw new Error("this is a public key; load your private key (NAME.pem, not NAME.pub.pem)");
  const m = text.match(/-----BEGIN PRIVATE KEY-----([\s\S]+?)-----END PRIVATE KEY-----/);
  if (!m) throw new Error("not a PKCS#8 PEM private key; use the NAME.pem that `duraguard keygen NAME` wrote");
  const der = Uint8Array.from(atob(m[1].replace(/\s+/g, "")), (c) => c.charCodeAt(0));
  let jwk;
  try {
    const once = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
    jwk = await crypto.subtle.exportKey("jwk", once);
  } catch (e) {
    throw new Error(`not an Ed25519 private key (${e.message || e.name})`);
  }
  // Keep only a copy that cannot be exported again.
  const key = await crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]);
  return { key, publicKey: b64urlToB64(jwk.x) };
}

function keyStore(mode, fn) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("duraguard-inbox", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("keys");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("keys", mode);
      const req = fn(tx.objectStore("keys"));
      tx.oncomplete = () => resolve(req && req.result);
      tx.onerror = () => reject(tx.error);
    };
  });
}

async function loadKeyFile(file) {
  $("key-error").textContent = "";
  try {
    const { key, publicKey } = await keyFromPem(await file.text());
    const name = state.me.name || file.name.replace(/\.pem$/, "");
    state.key = { name, key, publicKey, stored: $("key-remember").checked };
    if (state.key.stored) {
      await keyStore("readwrite", (s) => s.put({ name, key, publicKey }, "approver"));
    }
  } catch (e) {
    state.key = null;
    $("key-error").textContent = `cannot use this key: ${e.message}`;
  }
  $("key-file").value = "";
  renderKey();
  renderDecide();
}

async function restoreKey() {
  try {
    const stored = await keyStore("readonly", (s) => s.get("approver"));
    if (stored && stored.key) state.key = { ...stored, name: state.me.name || stored.name, stored: true };
  } catch (e) { /* no storage in this browser: load the file each time */ }
}

async function forgetKey() {
  state.key = null;
  try { await keyStore("readwrite", (s) => s.delete("approver")); } catch (e) { /* nothing kept */ }
  renderKey();
  renderDecide();
}

function renderKey() {
  const can = state.me && state.me.right === "decide";
  show("key", can);
  show("key-none", !state.key);
  show("key-loaded", !!state.key);
  if (state.key) {
    $("key-name").textContent = `signing as ${state.key.name}` + (state.key.stored ? " (kept in this browser)" : "");
    $("key-public").textContent = `public key ${state.key.publicKey}`;
  }
}

// -- the list --------------------------------------------------------------------------------

const askKey = (a) => `${a.workflow_id}\u0000${a.call_id}`;

async function loadAsks() {
  const data = await api("GET", "/api/asks");
  state.skew = data.now - Date.now() / 1000;
  state.version = data.version;
  state.asks = data.asks;
  state.closed = data.closed;
  renderList(data.problems);
  renderClosedBanner();
}

function renderList(problems) {
  const body = $("asks").tBodies[0];
  body.replaceChildren();
  for (const a of state.asks) {
    const args = a.values ? el("td", { class: "args" }, short(a.args)) : el("td", { class: "args hidden-value" }, "hidden");
    const why = a.values ? el("td", { class: "why" }, a.reason || "-") : el("td", { class: "why hidden-value" }, "hidden");
    const row = el("tr", { "data-call": a.call_id, "data-workflow": a.workflow_id },
      el("td", {}, new Date(a.asked_at * 1000).toLocaleTimeString()),
      el("td", {}, a.workflow_id), el("td", {}, a.call_id),
      el("td", {}, a.tool || `check ${a.label || "-"}`), args,
      el("td", {}, a.role || "any"), el("td", {}, a.decided_by), why,
      el("td", { "data-expires": a.expires_at }, duration(a.expires_at - serverNow())));
    if (state.selected && askKey(state.selected) === askKey(a)) row.classList.add("selected");
    row.addEventListener("click", () => select(a));
    body.append(row);
  }
  show("empty", state.asks.length === 0);
  $("count").textContent = state.asks.length ? `(${state.asks.length})` : "";
  $("problems").textContent = Array.isArray(problems) && problems.length
    ? `some runs could not be read: ${problems.join("; ")}` : "";
  const list = $("closed");
  list.replaceChildren();
  for (const c of state.closed) {
    list.append(el("li", { "data-call": c.call_id, "data-outcome": c.outcome },
      el("span", { class: c.outcome === "approved" ? "accepted" : "refused" }, c.outcome), " ",
      `${c.tool || "-"} ${c.call_id} on ${c.workflow_id}: ${c.why}`, c.said ? ` (“${c.said}”)` : ""));
  }
}

function tick() {
  for (const cell of document.querySelectorAll("[data-expires]")) {
    cell.textContent = duration(Number(cell.getAttribute("data-expires")) - serverNow());
  }
}

// -- one ask ---------------------------------------------------------------------------------

async function select(a) {
  state.selected = { workflow_id: a.workflow_id, call_id: a.call_id };
  state.preview = null;
  $("result").hidden = true;
  $("reason").value = "";
  for (const row of $("asks").tBodies[0].rows) {
    row.classList.toggle("selected", row.getAttribute("data-call") === a.call_id && row.getAttribute("data-workflow") === a.workflow_id);
  }
  try {
    state.detail = await api("GET", "/api/ask?" + q(state.selected));
  } catch (e) {
    state.detail = null;
    $("detail-title").textContent = `${a.call_id} on ${a.workflow_id}`;
    showResult(false, e.message);
  }
  renderDetail();
}

function renderDetail() {
  const d = state.detail;
  show("detail", !!state.selected);
  show("detail-closed", false);
  if (!d) return;
  $("detail-title").textContent = `${d.tool || "check " + (d.label || "-")} · ${d.call_id} on ${d.workflow_id}`;
  const facts = $("detail-facts");
  facts.replaceChildren();
  const fact = (k, v, cls) => facts.append(el("dt", {}, k), el("dd", cls ? { class: cls } : {}, v));
  fact("asked by", d.decided_by);
  fact("role asked for", d.role || "any approver");
  fact("why", d.values ? d.reason || "-" : "hidden", d.values ? "" : "hidden-value");
  fact("turn", d.turn);
  fact("time left", duration(d.expires_at - serverNow()));
  facts.lastChild.setAttribute("data-expires", d.expires_at);
  fact("run", d.run_id || "-");
  const link = $("detail-link");
  link.hidden = !d.ui_link;
  if (d.ui_link) link.href = d.ui_link;

  const args = $("detail-args").tBodies[0];
  args.replaceChildren();
  const editable = d.values && d.editable && state.me.right === "decide";
  if (!d.values) {
    args.append(el("tr", {}, el("td", { class: "hidden-value", colSpan: 2 }, "hidden: you may not read values")));
  } else if (d.args && typeof d.args === "object" && !Array.isArray(d.args)) {
    for (const [k, v] of Object.entries(d.args)) {
      const input = el("input", { value: JSON.stringify(v), "data-arg": k, "data-original": JSON.stringify(v) });
      input.readOnly = !editable;
      input.addEventListener("input", onEdit);
      args.append(el("tr", {}, el("td", {}, k), el("td", {}, input)));
    }
  } else {
    args.append(el("tr", {}, el("td", { colSpan: 2, class: "mono" }, JSON.stringify(d.args))));
  }

  const rows = $("verdicts").tBodies[0];
  rows.replaceChildren();
  for (const r of d.verdicts || []) {
    rows.append(el("tr", {},
      el("td", {}, r.turn), el("td", {}, r.call_id || "-"), el("td", {}, r.tool || "-"),
      el("td", {}, r.placement), el("td", { class: `action-${r.action}` }, r.action),
      el("td", {}, r.decided_by), el("td", {}, r.approver || "-"),
      "reason" in r ? el("td", {}, r.reason || "-") : el("td", { class: "hidden-value" }, "hidden")));
  }
  renderDecide();
}

function edits() {
  const out = {};
  for (const input of document.querySelectorAll("#detail-args input[data-arg]")) {
    if (input.value === input.getAttribute("data-original")) continue;
    let value;
    try { value = JSON.parse(input.value); } catch (e) { value = input.value; }
    out[input.getAttribute("data-arg")] = value;
  }
  return Object.keys(out).length ? out : null;
}

function onEdit(event) {
  event.target.classList.toggle("changed", event.target.value !== event.target.getAttribute("data-original"));
  state.preview = null;
  show("preview", false);
  renderDecide();
}

function renderDecide() {
  const d = state.detail;
  const can = !!d && state.me && state.me.right === "decide";
  show("decide", can);
  if (!can) return;
  const changed = edits();
  const previewed = state.preview && state.preview.edits === JSON.stringify(changed);
  show("check-edits", !!changed);
  $("approve").disabled = !state.key || (!!changed && !(previewed && state.preview.ok));
  $("deny").disabled = !state.key;
  $("approve").textContent = changed ? "Approve with edits" : "Approve";
  show("need-key", !state.key);
}

async function checkEdits() {
  const changed = edits();
  if (!changed) return;
  const box = $("preview");
  box.hidden = false;
  box.className = "";
  box.textContent = "checking the edits with the guardrails…";
  try {
    const p = await api("POST", "/api/preview", { ...state.selected, edits: changed });
    state.preview = { ...p, edits: JSON.stringify(changed) };
    box.className = p.ok ? "accepted" : "refused";
    box.textContent = p.ok
      ? `edits accepted by the guardrails (${p.action})`
      : `edits refused by ${p.by || "the guardrails"}${p.check && p.check !== p.by ? ` (${p.check})` : ""}: ${p.reason || p.action}`;
  } catch (e) {
    state.preview = null;
    box.className = "refused";
    box.textContent = `edits not checked: ${e.message}`;
  }
  renderDecide();
}

function canonical(v) {
  // The worker's canonical JSON (sorted keys, no spaces); a number it would write otherwise
  // (150.0) gives another digest, and the page then refuses to sign rather than guess.
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
}

async function sha256hex(text) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const MAX_TTL = 3600 + 600; // what the page asks for (an hour), and ten minutes of clock skew

async function checkStatement(text, want) {
  // The server built it; sign it only if it says what the person chose, worked out here.
  const s = JSON.parse(text);
  const same = (a, b) => (a ?? null) === (b ?? null);
  const fields = ["workflow_id", "run_id", "call_id", "decision", "approver", "reason"];
  for (const k of fields) {
    if (!same(s[k], want[k])) throw new Error(`the statement to sign names ${k} ${JSON.stringify(s[k])}, not ${JSON.stringify(want[k])}`);
  }
  const digest = want.edits === null ? null : await sha256hex(canonical(want.edits));
  if (!same(s.edits_digest, digest)) throw new Error("the statement to sign does not match your edits");
  const now = Date.now() / 1000;
  if (typeof s.expires_at !== "number" || !(s.expires_at > now - 600) || !(s.expires_at < now + MAX_TTL)) {
    throw new Error(`the statement to sign expires at ${s.expires_at}, not within the hour asked for`);
  }
  if (s.v !== 2) throw new Error(`unknown statement version ${s.v}`);
}

async function decide(kind) {
  const d = state.detail;
  if (!d || !state.key) return;
  const changed = kind === "approve" ? edits() : null;
  const reason = $("reason").value.trim() || null;
  for (const b of ["approve", "deny"]) $(b).disabled = true;
  try {
    const prepared = await api("POST", "/api/statement", {
      ...state.selected, decision: kind, approver: state.key.name, reason, edits: changed,
    });
    await checkStatement(prepared.statement, {
      workflow_id: d.workflow_id, run_id: d.run_id, call_id: d.call_id, decision: kind,
      approver: state.key.name, reason, edits: changed,
    });
    const sig = await crypto.subtle.sign({ name: "Ed25519" }, state.key.key, new TextEncoder().encode(prepared.statement));
    const answer = await api("POST", "/api/decide", {
      decision: { ...prepared.decision, signature: b64(sig) }, statement: prepared.statement,
    });
    showResult(answer.accepted, answer.accepted
      ? `${kind === "approve" ? "approved" : "denied"} as ${answer.approver}: accepted by the workflow`
      : `not accepted: ${answer.reason}`);
  } catch (e) {
    showResult(false, e.message);
  }
  renderDecide();
  refresh();
}

function showResult(ok, text) {
  const box = $("result");
  box.hidden = false;
  box.className = ok ? "accepted" : "refused";
  box.textContent = text;
}

function renderClosedBanner() {
  if (!state.selected) return;
  const k = askKey(state.selected);
  if (state.asks.some((a) => askKey(a) === k)) return;
  const closed = state.closed.find((c) => askKey(c) === k);
  const banner = $("detail-closed");
  banner.hidden = false;
  banner.textContent = closed ? `This ask is closed: ${closed.why}` : "This ask is no longer waiting.";
  show("decide", false);
}

// -- live --------------------------------------------------------------------------------------

// One read of the list at a time. A change announced while a read is on its way may be newer
// than what that read brings back (the server answered before the change): read once more
// after it, or the change would show only with the next one.
let refreshing = null;
let again = false;
function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = loadAsks()
    .catch((e) => { $("problems").textContent = e.message; })
    .finally(() => {
      refreshing = null;
      if (again) {
        again = false;
        refresh();
      }
    });
  return refreshing;
}

function live() {
  const source = new EventSource("/api/events");
  source.addEventListener("version", (event) => {
    $("live").textContent = "live";
    const v = JSON.parse(event.data).version;
    if (v !== state.version) refresh();
  });
  source.onerror = () => { $("live").textContent = "reconnecting…"; };
  setInterval(() => { if (source.readyState !== EventSource.OPEN) refresh(); }, 5000);
}

// -- start -------------------------------------------------------------------------------------

async function signIn() {
  $("login-error").textContent = "";
  try {
    await api("POST", "/api/login", { token: $("token").value.trim() });
    $("token").value = "";
    await start();
  } catch (e) {
    $("login-error").textContent = e.message;
  }
}

async function start() {
  try {
    state.me = await api("GET", "/api/me");
  } catch (e) {
    if (e.status === 401) { show("login", true); return; }
    $("who").textContent = `cannot reach the inbox: ${e.message}`;
    return;
  }
  state.csrf = state.me.csrf;
  show("login", false);
  show("inbox", true);
  $("who").textContent = state.me.name
    ? `${state.me.name} · may ${state.me.right}` : `open inbox on this machine · may ${state.me.right}`;
  show("sign-out", state.me.auth === "session");
  if (state.me.right === "decide") await restoreKey();
  renderKey();
  await refresh();
  live();
  setInterval(tick, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in").addEventListener("click", signIn);
  $("token").addEventListener("keydown", (e) => { if (e.key === "Enter") signIn(); });
  $("key-file").addEventListener("change", (e) => { if (e.target.files[0]) loadKeyFile(e.target.files[0]); });
  $("key-forget").addEventListener("click", forgetKey);
  $("sign-out").addEventListener("click", async () => {
    await api("POST", "/api/logout", {}).catch(() => null);
    location.reload();
  });
  $("check-edits").addEventListener("click", checkEdits);
  $("approve").addEventListener("click", () => decide("approve"));
  $("deny").addEventListener("click", () => decide("deny"));
  start();
});
