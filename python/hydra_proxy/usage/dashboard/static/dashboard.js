// hydra-proxy console: the usage (/dashboard/data.json) as tiles, charts and tables, and
// the latest requests with their filters. Plain DOM; charts.js draws the charts.
"use strict";

function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
function fmtUsd(v) { return v === null || v === undefined ? "-" : "$" + Number(v).toFixed(2); }
function fmtSpent(v, unpriced, requests) {
  if (unpriced && unpriced === requests) return "unknown";
  return fmtUsd(v) + (unpriced ? " +" + unpriced + " unpriced" : "");
}
function fmtCost(v, unpriced, requests) {
  if (v === null || (unpriced && unpriced === requests)) return "unknown";
  const text = Number(v).toFixed(4);
  return unpriced ? text + " (+" + unpriced + " unpriced)" : text;
}
function fmtMs(v) { return v === null || v === undefined ? "-" : Math.round(v).toString(); }
function fmtTime(t) { return new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19); }
const money = v => "$" + (v >= 10 ? v.toFixed(0) : v >= 0.01 ? v.toFixed(2) : v.toFixed(v ? 4 : 0));
const count = v => v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(Math.round(v));

function tile(label, value) {
  const div = document.createElement("div");
  div.className = "tile";
  const v = document.createElement("div");
  v.className = "value";
  v.textContent = value;
  const l = document.createElement("div");
  l.className = "label";
  l.textContent = label;
  div.append(v, l);
  return div;
}

// rows -> <tr>s of `cells(row)`: [[class, text], ...]; data-* from `dataset(row)`.
function fillTable(id, rows, cells, dataset, rowClass) {
  const body = document.querySelector("#" + id + " tbody");
  body.textContent = "";
  for (const row of rows) {
    const tr = document.createElement("tr");
    const cls = rowClass ? rowClass(row) : "";
    if (cls) tr.className = cls;
    for (const [name, value, title] of cells(row)) {
      const td = document.createElement("td");
      td.className = name;
      if (value instanceof Node) td.appendChild(value); else td.textContent = value;
      if (title) td.title = title;
      tr.appendChild(td);
    }
    Object.assign(tr.dataset, dataset(row));
    body.appendChild(tr);
  }
  if (!rows.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = document.querySelectorAll("#" + id + " thead th").length;
    td.className = "empty";
    td.textContent = "none";
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

function refusalText(causes) {
  return Object.entries(causes || {}).map(([c, n]) => c + " " + n).join(", ");
}

function fillSelect(id, values) {
  const select = document.getElementById(id);
  const kept = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const v of values) select.add(new Option(v, v));
  if (values.includes(kept)) select.value = kept;
}

const usage = { data: null };

function renderUsage(data) {
  usage.data = data;
  const t = data.total;
  const totals = document.getElementById("totals");
  totals.textContent = "";
  totals.append(
    tile("spent", fmtSpent(t.cost_usd, t.unpriced, t.requests)),
    tile("requests answered", fmtInt(t.requests)),
    tile("errors", fmtInt(t.errors)),
    tile("refused by the proxy", fmtInt(t.refused)),
    tile("input tokens", fmtInt(t.input_tokens + t.cache_read_tokens + t.cache_write_tokens)),
    tile("output tokens", fmtInt(t.output_tokens)),
  );
  const agents = [...new Set(data.by_agent.map(r => r.agent))].sort((a, b) => a === "lead" ? -1 : b === "lead" ? 1 : a.localeCompare(b));
  const members = [...new Set(data.by_agent.map(r => r.member))];
  barChart(document.getElementById("chart-cost-agent"),
    members.map(m => ({ key: m, parts: data.by_agent.filter(r => r.member === m).map(r => ({ name: r.agent, value: r.cost_usd })) })),
    agents, money, "legend-cost-agent");
  barChart(document.getElementById("chart-cost-model"),
    data.by_model.map(r => ({ key: r.key, parts: [{ name: "cost", value: r.cost_usd }] })), ["cost"], money, "legend-cost-model");
  barChart(document.getElementById("chart-tokens-model"),
    data.by_model.map(r => ({ key: r.key, parts: [
      { name: "input", value: r.input_tokens + r.cache_read_tokens + r.cache_write_tokens },
      { name: "output", value: r.output_tokens }] })), ["input", "output"], count, "legend-tokens-model");
  const dayMembers = [...new Set(data.by_day_member.map(r => r.member))].sort();
  barChart(document.getElementById("chart-cost-day"),
    data.by_day.map(r => ({ key: r.key.slice(5), parts: data.by_day_member.filter(d => d.day === r.key).map(d => ({ name: d.member, value: d.cost_usd })) })),
    dayMembers, money, "legend-cost-day");
  fillTable("by-agent", data.by_agent, r => [
    ["member", r.member], ["agent", r.agent], ["requests", fmtInt(r.requests)], ["errors", fmtInt(r.errors)],
    ["input", fmtInt(r.input_tokens)], ["output", fmtInt(r.output_tokens)], ["cache-read", fmtInt(r.cache_read_tokens)],
    ["cost", fmtCost(r.cost_usd, r.unpriced, r.requests)]], r => ({ key: r.key }));
  fillTable("by-model", data.by_model, r => [
    ["key", r.key], ["requests", fmtInt(r.requests)], ["errors", fmtInt(r.errors)],
    ["input", fmtInt(r.input_tokens)], ["output", fmtInt(r.output_tokens)],
    ["cache-read", fmtInt(r.cache_read_tokens)], ["cache-write", fmtInt(r.cache_write_tokens)],
    ["cost", fmtCost(r.cost_usd, r.unpriced, r.requests)],
    ["latency", fmtMs(r.p50_latency_ms)], ["ttfb", fmtMs(r.p50_ttfb_ms)]], r => ({ key: r.key }));
  const refused = refusalText(data.refusals);
  document.getElementById("refusals-line").textContent = refused ? "Refused by the proxy (no spend): " + refused : "";
  fillSelect("filter-member", data.filters.member);
  fillSelect("filter-model", data.filters.model);
  fillSelect("filter-status", data.filters.status);
  fillTable("latest", data.latest, r => [
    ["time", fmtTime(r.time)], ["member", r.member], ["agent", r.agent || "lead"],
    ["model", r.target_model || r.requested_model || "-", r.request_id],
    ["status", r.refusal ? "refused: " + r.refusal : String(r.status) + (r.error_type ? " " + r.error_type : "")],
    ["input", fmtInt(r.input_tokens) + (r.estimated ? " (est.)" : "")], ["output", fmtInt(r.output_tokens)],
    ["cost", r.refusal ? "-" : r.cost_usd === null ? "unknown" : Number(r.cost_usd).toFixed(4)],
    ["latency", fmtMs(r.latency_ms)]],
    r => ({ requestId: r.request_id }),
    r => (r.refusal ? "refused" : r.status >= 400 || r.error_type ? "error" : ""));
}

function sinceValue() {
  const v = document.getElementById("since").value;
  return v === "today" ? new Date().toISOString().slice(0, 10) : v;
}

async function loadUsage() {
  const q = new URLSearchParams({ since: sinceValue() });
  for (const f of ["member", "model", "status"]) {
    const v = document.getElementById("filter-" + f).value;
    if (v) q.set(f, v);
  }
  // From the origin, not the page's URL: fetch refuses a URL holding credentials.
  const reply = await fetch(location.origin + "/dashboard/data.json?" + q, { credentials: "same-origin" });
  if (reply.status === 401) { showSignIn(); return null; }
  if (!reply.ok) throw new Error((await errorText(reply)) || "HTTP " + reply.status);
  const data = await reply.json();
  renderUsage(data);
  return data;
}

async function errorText(reply) {
  try {
    const doc = await reply.json();
    return doc.error && doc.error.message ? doc.error.message : "";
  } catch (e) {
    return "";
  }
}
