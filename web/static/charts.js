// Charts drawn as SVG by hand (see DESIGN.md for why no library): stacked
// vertical bars over days and horizontal bars per key. Colours come from
// CSS (classes s0…s5), so light and dark themes apply; every bar has a
// <title> with its numbers, and every chart an accessible name.
import { h, num } from './dom.js';

const fmt = v => num(v);

// stacked draws one bar per row (x label: row.key) stacked by series
// [{key, label}], values row[key].
export function stacked(rows, series, { label, format = fmt, height = 220 } = {}) {
  const pad = { l: 52, r: 8, t: 10, b: 36 };
  const bw = Math.max(6, Math.min(28, 720 / Math.max(rows.length, 1)));
  const width = Math.max(420, pad.l + pad.r + rows.length * (bw + 4));
  const total = r => series.reduce((s, k) => s + (r[k.key] || 0), 0);
  const maxV = Math.max(1, ...rows.map(total));
  const y = v => pad.t + (height - pad.t - pad.b) * (1 - v / maxV);
  const svg = h('svg:svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': label, preserveAspectRatio: 'xMinYMin meet' });
  for (const f of [0, 0.5, 1]) {
    svg.append(h('svg:line', { x1: pad.l, x2: width - pad.r, y1: y(maxV * f), y2: y(maxV * f), class: 'grid' }),
      h('svg:text', { x: pad.l - 6, y: y(maxV * f) + 4, class: 'axis', 'text-anchor': 'end' }, format(maxV * f)));
  }
  rows.forEach((r, i) => {
    const x = pad.l + 2 + i * (bw + 4);
    let acc = 0;
    series.forEach((s, si) => {
      const v = r[s.key] || 0;
      if (v <= 0) return;
      svg.append(h('svg:rect', { x, y: y(acc + v), width: bw, height: Math.max(0.5, y(acc) - y(acc + v)), class: 'bar s' + si },
        h('svg:title', null, `${r.key} · ${s.label}: ${format(v)}`)));
      acc += v;
    });
    if (rows.length <= 16 || i % Math.ceil(rows.length / 12) === 0) {
      svg.append(h('svg:text', { x: x + bw / 2, y: height - pad.b + 14, class: 'axis', 'text-anchor': 'middle' }, String(r.key).slice(5)));
    }
  });
  return h('figure', { class: 'chart-box' }, h('figcaption', null, label), svg, legend(series));
}

// bars draws one horizontal bar per row: label(row) and value(row).
export function bars(rows, { label, value, name, format = fmt, series }) {
  const rowH = 24, pad = 150, width = 520;
  const height = rows.length * rowH + 4;
  const maxV = Math.max(1e-9, ...rows.map(value));
  const svg = h('svg:svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': label });
  rows.forEach((r, i) => {
    const v = value(r), w = (width - pad - 70) * v / maxV;
    const y = 2 + i * rowH;
    svg.append(h('svg:text', { x: pad - 8, y: y + 15, class: 'axis', 'text-anchor': 'end' }, String(name(r)).slice(0, 22)),
      h('svg:rect', { x: pad, y: y + 3, width: Math.max(1, w), height: rowH - 8, rx: 2, class: 'bar ' + (series || 's0') }, h('svg:title', null, `${name(r)}: ${format(v)}`)),
      h('svg:text', { x: pad + w + 6, y: y + 15, class: 'axis' }, format(v)));
  });
  return h('figure', { class: 'chart-box' }, h('figcaption', null, label), svg);
}

function legend(series) {
  return h('ul', { class: 'legend' }, series.map((s, i) => h('li', null, h('span', { class: 'swatch s' + i }), s.label)));
}
