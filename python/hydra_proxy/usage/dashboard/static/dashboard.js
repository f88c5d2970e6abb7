// hydra-proxy usage page: reads /dashboard/data.json and draws SVG bar charts and tables.
// No dependencies, no build step: plain DOM and SVG.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
function fmtCost(v, unpriced, requests) {
  if (v === null || (unpriced && unpriced === requests)) return "unknown";
  const text = Number(v).toFixed(4);
  return unpriced ? text + " (+" + unpriced + " unpriced)" : text;
}
function fmtMs(v) { return v === null || v === undefined ? "-" : Math.round(v).toString(); }
function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// series: [{key, parts: [{name, value, cls}]}] drawn as stacked vertical bars.
function barChart(svg, series, format) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = svg.clientWidth || 480, height = svg.clientHeight || 220;
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  const left = 8, bottom = 34, top = 18;
  const totals = series.map(s => s.parts.reduce((a, p) => a + p.value, 0));
  const max = Math.max(0, ...totals);
  svg.appendChild(el("line", { class: "axis", x1: left, x2: width - left, y1: height - bottom, y2: height - bottom }));
  if (!series.length) {
    svg.appendChild(el("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty" }, "no data"));
    return;
  }
  const slot = (width - 2 * left) / series.length;
  const barW = Math.max(4, Math.min(60, slot * 0.7));
  series.forEach((s, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let y = height - bottom;
    for (const p of s.parts) {
      const h = max > 0 ? (p.value / max) * (height - bottom - top) : 0;
      y -= h;
      const rect = el("rect", { class: "bar " + (p.cls || ""), x: x.toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1), "data-key": s.key, "data-part": p.name, "data-value": p.value });
      rect.appendChild(el("title", {}, s.key + " " + p.name + ": " + format(p.value)));
      svg.appendChild(rect);
    }
    svg.appendChild(el("text", { class: "value", x: x + barW / 2, y: Math.max(11, y - 4), "text-anchor": "middle" }, format(totals[i])));
    svg.appendChild(el("text", { x: x + barW / 2, y: height - bottom + 14, "text-anchor": "middle" }, short(s.key, Math.max(6, Math.floor(slot / 6.5)))));
  });
}

function tile(label, value) {
  const div = document.createElement("div");
  div.className = "tile";
  div.innerHTML = '<div class="value"></div><div class="label"></div>';
  div.firstChild.textContent = value;
  div.lastChild.textContent = label;
  return div;
}

function fillTable(id, rows, cells, rowClass) {
  const body = document.querySelector("#" + id + " tbody");
  body.textContent = "";
  for (const row of rows) {
    const tr = document.createElement("tr");
    const cls = rowClass ? rowClass(row) : "";
    if (cls) tr.className = cls;
    for (const [name, value] of cells(row)) {
      const td = document.createElement("td");
      td.className = name;
      td.textContent = value;
      tr.appendChild(td);
    }
    if (row.request_id) tr.dataset.requestId = row.request_id;
    else tr.dataset.key = row.key;
    body.appendChild(tr);
  }
}

function render(data) {
  const t = data.total;
  const totals = document.getElementById("totals");
  totals.textContent = "";
  totals.append(
    tile("cost USD", fmtCost(t.cost_usd, t.unpriced, t.requests)),
    tile("requests", fmtInt(t.requests)),
    tile("errors", fmtInt(t.errors)),
    tile("input tokens", fmtInt(t.input_tokens)),
    tile("output tokens", fmtInt(t.output_tokens)),
    tile("cache read tokens", fmtInt(t.cache_read_tokens)),
  );
  const money = v => "$" + v.toFixed(v >= 1 ? 2 : 4);
  const count = v => v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(v);
  barChart(document.getElementById("chart-cost-model"),
    data.by_model.map(r => ({ key: r.key, parts: [{ name: "cost", value: r.cost_usd }] })), money);
  barChart(document.getElementById("chart-tokens-model"),
    data.by_model.map(r => ({ key: r.key, parts: [
      { name: "input", value: r.input_tokens + r.cache_read_tokens + r.cache_write_tokens },
      { name: "output", value: r.output_tokens, cls: "output" }] })), count);
  barChart(document.getElementById("chart-cost-day"),
    data.by_day.map(r => ({ key: r.key, parts: [{ name: "cost", value: r.cost_usd }] })), money);
  barChart(document.getElementById("chart-tokens-day"),
    data.by_day.map(r => ({ key: r.key, parts: [
      { name: "input", value: r.input_tokens + r.cache_read_tokens + r.cache_write_tokens },
      { name: "output", value: r.output_tokens, cls: "output" }] })), count);
  fillTable("by-model", data.by_model, r => [
    ["key", r.key], ["requests", fmtInt(r.requests)], ["errors", fmtInt(r.errors)],
    ["input", fmtInt(r.input_tokens)], ["output", fmtInt(r.output_tokens)],
    ["cache-read", fmtInt(r.cache_read_tokens)], ["cache-write", fmtInt(r.cache_write_tokens)],
    ["cost", fmtCost(r.cost_usd, r.unpriced, r.requests)],
    ["latency", fmtMs(r.p50_latency_ms)], ["ttfb", fmtMs(r.p50_ttfb_ms)]]);
  fillTable("latest", data.latest, r => [
    ["time", new Date(r.time * 1000).toISOString().replace("T", " ").slice(0, 19)],
    ["request-id", r.request_id], ["protocol", r.protocol], ["route", r.route],
    ["model", r.target_model], ["status", String(r.status) + (r.error_type ? " " + r.error_type : "")],
    ["latency", fmtMs(r.latency_ms)], ["ttfb", fmtMs(r.ttfb_ms)],
    ["input", fmtInt(r.input_tokens) + (r.estimated ? " (est.)" : "")], ["output", fmtInt(r.output_tokens)],
    ["cost", r.cost_usd === null ? "unknown" : Number(r.cost_usd).toFixed(4)]],
    r => (r.status >= 400 || r.error_type ? "error" : ""));
  const status = document.getElementById("status");
  status.className = "";
  status.textContent = fmtInt(t.requests) + " requests" + (data.truncated ? " (only the latest " + fmtInt(data.records) + " counted)" : "");
  document.body.dataset.loaded = "true";
}

async function load() {
  const since = document.getElementById("since").value;
  const status = document.getElementById("status");
  try {
    // From the origin, not the page's URL: fetch refuses a URL holding credentials
    // (user:key@host in the address bar, how a member may hand its key to the page).
    const url = location.origin + "/dashboard/data.json?since=" + encodeURIComponent(since);
    const reply = await fetch(url, { credentials: "same-origin" });
    if (!reply.ok) throw new Error("HTTP " + reply.status);
    render(await reply.json());
  } catch (err) {
    status.className = "error";
    status.textContent = "could not load usage: " + err.message;
  }
}

const params = new URLSearchParams(location.search);
if (params.get("since")) {
  const select = document.getElementById("since");
  const wanted = params.get("since");
  if (![...select.options].some(o => o.value === wanted)) select.add(new Option(wanted, wanted));
  select.value = wanted;
}
document.getElementById("since").addEventListener("change", load);
load();
