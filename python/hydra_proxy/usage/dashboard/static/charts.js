// hydra-proxy console: stacked bar charts in SVG, with a value axis, category labels and
// a legend. No dependencies, no build step.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = 8; // series colours, .s0 ... .s7 in dashboard.css

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// A round step for about four gridlines up to `max`.
function niceStep(max) {
  const raw = max / 4;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// series: [{key, parts: [{name, value}]}] drawn as stacked bars; `names` the parts in
// legend order (each its colour); `legendId` the element the legend goes into.
function barChart(svg, series, names, format, legendId) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const width = svg.clientWidth || 480, height = svg.clientHeight || 200;
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  const left = 56, right = 8, bottom = 30, top = 12;
  const totals = series.map(s => s.parts.reduce((a, p) => a + p.value, 0));
  const max = Math.max(0, ...totals);
  const plotH = height - bottom - top;
  const base = height - bottom;
  if (!series.length || max <= 0) {
    svg.appendChild(el("line", { class: "axis", x1: left, x2: width - right, y1: base, y2: base }));
    svg.appendChild(el("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty" }, "no data"));
    legend(legendId, []);
    return;
  }
  const step = niceStep(max);
  const top_ = Math.ceil(max / step) * step;
  for (let v = 0; v <= top_ + step / 2; v += step) {
    const y = base - (v / top_) * plotH;
    svg.appendChild(el("line", { class: v === 0 ? "axis" : "grid", x1: left, x2: width - right, y1: y, y2: y }));
    svg.appendChild(el("text", { class: "tick", x: left - 6, y: y + 4, "text-anchor": "end" }, format(v)));
  }
  svg.appendChild(el("line", { class: "axis", x1: left, x2: left, y1: top, y2: base }));
  const slot = (width - left - right) / series.length;
  const barW = Math.max(4, Math.min(56, slot * 0.7));
  series.forEach((s, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let y = base;
    for (const p of s.parts) {
      const h = (p.value / top_) * plotH;
      y -= h;
      const colour = "s" + (names.indexOf(p.name) % PALETTE);
      const rect = el("rect", { class: "bar " + colour, x: x.toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1), "data-key": s.key, "data-part": p.name, "data-value": p.value });
      rect.appendChild(el("title", {}, s.key + ", " + p.name + ": " + format(p.value)));
      svg.appendChild(rect);
    }
    svg.appendChild(el("text", { class: "category", x: x + barW / 2, y: base + 16, "text-anchor": "middle" }, short(s.key, Math.max(5, Math.floor(slot / 7)))));
  });
  legend(legendId, names);
}

function legend(id, names) {
  const box = document.getElementById(id);
  if (!box) return;
  box.textContent = "";
  names.forEach((name, i) => {
    const item = document.createElement("span");
    item.className = "item";
    const swatch = document.createElement("span");
    swatch.className = "swatch s" + (i % PALETTE);
    item.append(swatch, document.createTextNode(name));
    box.appendChild(item);
  });
}
