// hydra-proxy console: signing in and out, and the admin's changes to members, teams and
// alerts, each through the admin API (/admin/keys) with the session cookie and its
// anti-forgery header. A secret is shown once in a dialog and removed from the page when
// the dialog closes.
"use strict";

const $ = id => document.getElementById(id);
const state = { who: null, csrf: null, keys: { keys: [], teams: [] }, timer: null };
const ADMIN_SECTIONS = ["totals", "members-section", "teams-section", "usage-section", "latest-section", "audit-section"];
const MEMBER_SECTIONS = ["member-page", "totals", "usage-section", "latest-section"];
const USAGE_SECTIONS = ["totals", "usage-section", "latest-section"];
const ALL_SECTIONS = ["sign-in", "member-page", ...ADMIN_SECTIONS];

async function api(method, path, body) {
  const headers = { "x-hydra-csrf": state.csrf || "" };
  const init = { method, credentials: "same-origin", headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const reply = await fetch(location.origin + path, init);
  let doc = {};
  try { doc = await reply.json(); } catch (e) { doc = {}; }
  if (!reply.ok) {
    const err = new Error((doc.error && doc.error.message) || "HTTP " + reply.status);
    err.status = reply.status;
    throw err;
  }
  return doc;
}

function say(text, bad) {
  const status = $("status");
  status.className = bad ? "error" : "";
  status.textContent = text;
}

function show(ids) {
  for (const id of ALL_SECTIONS) $(id).hidden = !ids.includes(id);
}

// -- signing in and out ---------------------------------------------------------------

function showSignIn(message) {
  state.who = null;
  state.csrf = null;
  clearInterval(state.timer);
  show(["sign-in"]);
  for (const id of ["since-label", "sign-out"]) $(id).hidden = true;
  $("who").textContent = "";
  for (const table of document.querySelectorAll("table tbody")) table.textContent = "";
  $("sign-in-error").textContent = message || "";
  say("signed out");
  $("sign-in-key").focus();
}

async function signIn(event) {
  event.preventDefault();
  const input = $("sign-in-key");
  const key = input.value.trim();
  input.value = ""; // the key leaves the page at once: the cookie stands for it
  try {
    const who = await api("POST", "/dashboard/session", { key });
    await enter(who);
  } catch (err) {
    $("sign-in-error").textContent = err.message;
  }
}

async function signOut() {
  try { await api("DELETE", "/dashboard/session"); } catch (e) { /* signed out anyway */ }
  document.body.dataset.loaded = "";
  showSignIn();
}

function whoText(who) {
  if (who.role === "admin") return "Signed in as the admin";
  if (who.role === "member") {
    const m = who.member || {};
    return "Signed in as " + who.name + (m.team ? " (team " + m.team + ")" : "");
  }
  if (who.role === "viewer") return "Signed in with a proxy key (read only)";
  return "Open proxy (no keys): read only";
}

async function enter(who) {
  state.who = who;
  state.csrf = who.csrf;
  $("who").textContent = whoText(who);
  $("sign-out").hidden = who.role === "open";
  let sections = who.role === "admin" && who.admin_api ? ADMIN_SECTIONS
    : who.role === "member" ? MEMBER_SECTIONS : USAGE_SECTIONS;
  if (!who.ledger) sections = sections.filter(id => !USAGE_SECTIONS.includes(id));
  show(sections);
  $("since-label").hidden = !who.ledger;
  if (who.role === "member") renderMember(who);
  $("cap-agent").textContent = who.role === "member" ? "Your cost per agent (USD)" : "Cost per member, by agent (USD)";
  $("filter-member").disabled = who.role === "member";
  await refresh();
  clearInterval(state.timer);
  state.timer = setInterval(() => { if (!document.querySelector("dialog[open]")) refresh(); }, 30000);
}

async function start() {
  try {
    const who = await api("GET", "/dashboard/session");
    await enter(who);
  } catch (err) {
    if (err.status === 401) showSignIn();
    else say("could not load the console: " + err.message, true);
  }
}

// -- a member's own page --------------------------------------------------------------

function fact(list, term, value) {
  const dt = document.createElement("dt");
  dt.textContent = term;
  const dd = document.createElement("dd");
  if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
  list.append(dt, dd);
}

function spendMeter(spent, budget, label) {
  const wrap = document.createElement("span");
  wrap.className = "spend";
  if (budget !== null && budget !== undefined) {
    const meter = document.createElement("meter");
    meter.min = 0; meter.max = budget; meter.value = Math.min(spent, budget);
    meter.low = budget * 0.5; meter.high = budget * 0.8; meter.optimum = 0;
    meter.setAttribute("aria-label", label);
    wrap.appendChild(meter);
  }
  const text = document.createElement("span");
  text.textContent = budget === null || budget === undefined ? fmtUsd(spent) + " (no budget)" : fmtUsd(spent) + " of " + fmtUsd(budget);
  wrap.appendChild(text);
  return wrap;
}

function renderMember(who) {
  const m = who.member;
  $("member-title").textContent = "Your usage, " + who.name + (m.team ? " (team " + m.team + ")" : "");
  const list = $("member-limits");
  list.textContent = "";
  fact(list, "budget this " + m.period, spendMeter(m.spent_usd, m.budget_usd, "spent of your budget"));
  fact(list, "left this period", m.left_usd === null ? "no budget" : fmtUsd(m.left_usd));
  fact(list, "the period resets", m.period_resets.replace("T", " ").replace("Z", " UTC"));
  fact(list, "requests per minute", m.rpm || "unbounded");
  fact(list, "tokens per minute", m.tpm ? fmtInt(m.tpm) : "unbounded");
  fact(list, "concurrent streams", m.streams || "unbounded");
  fact(list, "models", m.models.length ? m.models.join(", ") : "any");
  fact(list, "key expires", m.expires || "never");
  const t = m.team_limits;
  if (t) {
    fact(list, "team " + t.name + " this " + t.period, spendMeter(t.spent_usd, t.budget_usd, "spent of the team's budget"));
    fact(list, "left to the team", t.left_usd === null ? "no budget" : fmtUsd(t.left_usd));
  }
}

// -- the admin's tables ---------------------------------------------------------------

function limitsText(k) {
  const parts = [];
  if (k.rpm) parts.push("rpm " + k.rpm);
  if (k.tpm) parts.push("tpm " + fmtInt(k.tpm));
  if (k.streams) parts.push(k.streams + " streams");
  if (k.models && k.models.length) parts.push("models " + k.models.join(","));
  if (k.expires) parts.push("expires " + k.expires.slice(0, 10));
  return parts.join(" · ") || "none";
}

// A cell of a main line and a smaller second one (none when `sub` is empty).
function twoLines(main, sub) {
  const span = document.createElement("span");
  span.textContent = main;
  if (sub) {
    const small = document.createElement("small");
    small.className = "sub";
    small.textContent = sub;
    span.appendChild(small);
  }
  return span;
}

function alertCell(a) {
  if (!a) return twoLines("none");
  return twoLines("at " + a.thresholds.join(", ") + " %", "to " + a.webhook.replace(/^https?:\/\//, "").replace(/\/…$/, "") + (a.format === "slack" ? " (Slack)" : ""));
}

function button(text, label, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.addEventListener("click", action);
  return b;
}

function memberCell(k) {
  const span = document.createElement("span");
  const name = document.createElement("strong");
  name.textContent = k.name;
  span.appendChild(name);
  if (k.team) {
    const team = document.createElement("small");
    team.textContent = " " + k.team;
    span.appendChild(team);
  }
  return span;
}

function renderKeys() {
  const used = {};
  for (const r of (usage.data ? usage.data.by_member : [])) used[r.key] = r;
  fillTable("members", state.keys.keys, k => {
    const u = used[k.name];
    const actions = document.createElement("span");
    actions.className = "actions";
    const revoked = k.state === "revoked";
    actions.append(button("Edit", "Edit " + k.name, () => editMember(k)));
    if (!revoked) {
      actions.append(button("Rotate", "Rotate the secret of " + k.name, () => rotate(k)),
        button("Revoke", "Revoke " + k.name, () => revoke(k)));
    }
    const usageText = u ? fmtInt(u.requests) + " req · " + fmtInt(u.errors) + " err · " + fmtInt(u.refused) + " refused" + (u.refused ? " (" + refusalText(u.refusals) + ")" : "") : "no requests";
    return [["member", memberCell(k)],
      ["state", twoLines(k.state, k.old_secret_until && !revoked ? "old secret until " + k.old_secret_until.slice(0, 16).replace("T", " ") : "")],
      ["spent", spendMeter(k.spent_usd, k.budget_usd, "spent of " + k.name + "'s budget"), "per " + k.period + ", resets " + k.period_resets],
      ["limits", limitsText(k)], ["usage", usageText], ["alert", alertCell(k.alert)], ["actions", actions]];
  }, k => ({ key: k.name, state: k.state }), k => k.state !== "active" ? "inactive" : "");
  fillTable("teams", state.keys.teams, t => [
    ["team", t.name],
    ["spent", spendMeter(t.spent_usd, t.budget_usd, "spent of team " + t.name + "'s budget"), "per " + t.period + ", resets " + t.period_resets],
    ["limits", limitsText(t)], ["alert", alertCell(t.alert)],
    ["actions", button("Edit", "Edit team " + t.name, () => editTeam(t))]], t => ({ key: t.name }));
}

async function loadKeys() {
  state.keys = await api("GET", "/admin/keys");
  renderKeys();
}

// What a value held: its set fields (a record created), or itself.
function summary(value) {
  if (!value || typeof value !== "object") return JSON.stringify(value);
  return Object.entries(value)
    .filter(([k, v]) => k !== "name" && k !== "created" && v !== null && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => k + " " + JSON.stringify(v)).join(", ");
}

function changeText(before, after) {
  if (!before && after) return "created" + (summary(after) ? ": " + summary(after) : "");
  if (before && !after) return "removed";
  if (!before || !after || typeof before !== "object" || typeof after !== "object") return String(after);
  const out = [];
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = JSON.stringify(before[k]), b = JSON.stringify(after[k]);
    if (a !== b) out.push(k + ": " + (a === undefined ? "-" : a) + " → " + (b === undefined ? "-" : b));
  }
  return out.join("; ") || "no change";
}

async function loadAudit() {
  try {
    const doc = await api("GET", "/admin/audit?limit=50");
    $("audit-note").textContent = "";
    $("audit").hidden = false;
    fillTable("audit", doc.entries, e => [
      ["time", typeof e.time === "number" ? fmtTime(e.time) : String(e.time).replace("T", " ").replace("Z", "")],
      ["actor", e.actor], ["action", e.action], ["subject", e.subject], ["change", changeText(e.before, e.after)]],
      e => ({ action: e.action }));
  } catch (err) {
    document.querySelector("#audit tbody").textContent = "";
    $("audit").hidden = true;
    $("audit-note").textContent = err.status === 404 ? "This proxy keeps no audit log." : "The audit log could not be read: " + err.message;
  }
}

async function refresh() {
  say("loading…");
  try {
    let text = "usage ledger off: no usage to show";
    if (state.who.ledger) {
      const data = await loadUsage();
      if (data === null) return;
      text = fmtInt(data.total.requests) + " requests, " + fmtInt(data.total.refused) + " refused" + (data.truncated ? " (only the latest " + fmtInt(data.records) + " counted)" : "");
    }
    if (state.who.role === "admin" && state.who.admin_api) {
      await loadKeys();
      await loadAudit();
    }
    say(text + "; updated " + new Date().toISOString().slice(11, 19) + " UTC");
    document.body.dataset.loaded = "true";
  } catch (err) {
    if (err.status === 401) showSignIn("The session ended: sign in again.");
    else say("could not load: " + err.message, true);
  }
}

// -- dialogs ----------------------------------------------------------------------------

function confirmAction(text) {
  return new Promise(resolve => {
    const d = $("confirm-dialog");
    $("confirm-text").textContent = text;
    d.returnValue = "";
    d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
    d.showModal();
    $("confirm-no").focus();
  });
}

function showSecret(title, secret) {
  $("secret-title").textContent = title;
  $("secret-value").value = secret;
  $("secret-dialog").showModal();
  $("secret-value").select();
}

async function copySecret() {
  const input = $("secret-value");
  try {
    await navigator.clipboard.writeText(input.value);
  } catch (e) {
    input.select();
    document.execCommand("copy");
  }
  $("secret-copy").textContent = "Copied";
}

function clearSecret() {
  $("secret-value").value = "";
  $("secret-title").textContent = "";
  $("secret-copy").textContent = "Copy";
}

const FIELDS = ["team", "budget", "period", "rpm", "tpm", "streams", "models", "expires"];
const TEAM_FIELDS = ["budget", "period", "rpm", "tpm"];
const editing = { member: null, team: null };

function fieldValue(k, f) {
  if (f === "budget") return k.budget_usd === null ? "" : String(k.budget_usd);
  if (f === "models") return (k.models || []).join(",");
  if (f === "expires") return k.expires ? k.expires.slice(0, 16).replace(/T00:00$/, "") : "";
  return k[f] === null || k[f] === undefined ? "" : String(k[f]);
}

function fillAlert(prefix, alert) {
  $(prefix + "-thresholds").value = alert ? alert.thresholds.join(",") : "";
  $(prefix + "-webhook").value = "";
  $(prefix + "-webhook").placeholder = alert ? "kept: " + alert.webhook : "the URL alerts are posted to";
  $(prefix + "-format").value = alert ? alert.format : "json";
}

function editMember(k) {
  editing.member = k;
  $("member-dialog-title").textContent = k ? "Edit " + k.name : "Add a member";
  $("m-name").value = k ? k.name : "";
  $("m-name").readOnly = !!k;
  for (const f of FIELDS) $("m-" + f).value = k ? fieldValue(k, f) : (f === "period" ? "month" : "");
  fillAlert("m", k ? k.alert : null);
  $("member-error").textContent = "";
  $("member-dialog").showModal();
  (k ? $("m-budget") : $("m-name")).focus();
}

function editTeam(t) {
  editing.team = t;
  $("t-name").value = t ? t.name : "";
  $("t-name").readOnly = !!t;
  for (const f of TEAM_FIELDS) $("t-" + f).value = t ? fieldValue(t, f) : (f === "period" ? "month" : "");
  fillAlert("t", t ? t.alert : null);
  $("team-error").textContent = "";
  $("team-dialog").showModal();
  (t ? $("t-budget") : $("t-name")).focus();
}

// The form's fields: an emptied one clears its limit ("none") when changing, and is left
// out when creating.
function formFields(prefix, names, creating) {
  const out = {};
  for (const f of names) {
    const v = $(prefix + "-" + f).value.trim();
    if (v) out[f] = v;
    else if (!creating && f !== "period") out[f] = "none";
  }
  return out;
}

async function saveAlert(prefix, path, had) {
  const thresholds = $(prefix + "-thresholds").value.trim();
  const webhook = $(prefix + "-webhook").value.trim();
  if (thresholds) {
    const body = { thresholds: thresholds.split(",").map(t => t.trim()).filter(Boolean), format: $(prefix + "-format").value };
    if (webhook) body.webhook = webhook;
    await api("PUT", path + "/alert", body);
  } else if (had) {
    await api("DELETE", path + "/alert");
  }
}

async function saveMember(event) {
  event.preventDefault();
  const k = editing.member;
  const name = $("m-name").value.trim();
  const path = "/admin/keys/" + encodeURIComponent(name);
  try {
    let secret = null;
    if (k) {
      await api("PATCH", path, formFields("m", FIELDS, false));
    } else {
      const created = await api("POST", "/admin/keys", { name, ...formFields("m", FIELDS, true) });
      secret = created.secret;
    }
    await saveAlert("m", path, k && k.alert);
    $("member-dialog").close();
    if (secret) showSecret("The secret of " + name, secret);
    secret = null;
    await refresh();
  } catch (err) {
    $("member-error").textContent = err.message;
  }
}

async function saveTeam(event) {
  event.preventDefault();
  const t = editing.team;
  const name = $("t-name").value.trim();
  const path = "/admin/keys/_teams/" + encodeURIComponent(name);
  try {
    await api("PUT", path, formFields("t", TEAM_FIELDS, false));
    await saveAlert("t", path, t && t.alert);
    $("team-dialog").close();
    await refresh();
  } catch (err) {
    $("team-error").textContent = err.message;
  }
}

async function rotate(k) {
  if (!await confirmAction("Give " + k.name + " a new secret? The current one keeps working for 24 hours.")) return;
  try {
    const reply = await api("POST", "/admin/keys/" + encodeURIComponent(k.name) + "/rotate", { grace_seconds: 86400 });
    showSecret("The new secret of " + k.name, reply.secret);
    await refresh();
  } catch (err) {
    say(err.message, true);
  }
}

async function revoke(k) {
  if (!await confirmAction("Revoke " + k.name + "? Their next request is refused; this cannot be undone.")) return;
  try {
    await api("DELETE", "/admin/keys/" + encodeURIComponent(k.name));
    await refresh();
  } catch (err) {
    say(err.message, true);
  }
}

// -- wiring -----------------------------------------------------------------------------

// Each dialog's shared fields, from one template, with the form's prefix on every id.
for (const form of document.querySelectorAll("form[data-prefix]")) {
  for (const slot of form.querySelectorAll("template[data-fields]")) {
    const fields = $(slot.dataset.fields + "-fields").content.cloneNode(true);
    const prefix = form.dataset.prefix + "-";
    for (const el of fields.querySelectorAll("[id]")) el.id = prefix + el.id;
    for (const el of fields.querySelectorAll("label[for]")) el.htmlFor = prefix + el.htmlFor;
    slot.replaceWith(fields);
  }
}

$("sign-in-form").addEventListener("submit", signIn);
$("sign-out").addEventListener("click", signOut);
$("since").addEventListener("change", refresh);
for (const f of ["member", "model", "status"]) $("filter-" + f).addEventListener("change", refresh);
$("add-member").addEventListener("click", () => editMember(null));
$("set-team").addEventListener("click", () => editTeam(null));
$("member-form").addEventListener("submit", saveMember);
$("team-form").addEventListener("submit", saveTeam);
$("member-cancel").addEventListener("click", () => $("member-dialog").close());
$("team-cancel").addEventListener("click", () => $("team-dialog").close());
$("secret-copy").addEventListener("click", copySecret);
$("secret-dialog").addEventListener("close", clearSecret);
const wanted = new URLSearchParams(location.search).get("since");
if (wanted) {
  const select = $("since");
  if (![...select.options].some(o => o.value === wanted)) select.add(new Option(wanted, wanted));
  select.value = wanted;
}
start();
