// DOM helpers. Nothing here (or anywhere in the page) assigns HTML: text
// goes in as text nodes, so no message can become markup.

// h builds an element: attrs are properties or attributes (on* handlers
// as functions only), children are nodes or strings (made text nodes).
export function h(tag, attrs, ...children) {
  const svg = tag.startsWith('svg:');
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (!svg && k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// marked turns search snippet text with >>>match<<< markers into text
// nodes and <mark> elements; the text between the markers stays text.
export function marked(snippet) {
  const out = [];
  let rest = snippet || '';
  while (rest.length) {
    const i = rest.indexOf('>>>');
    if (i < 0) { out.push(rest); break; }
    const j = rest.indexOf('<<<', i + 3);
    if (j < 0) { out.push(rest); break; }
    if (i > 0) out.push(rest.slice(0, i));
    out.push(h('mark', null, rest.slice(i + 3, j)));
    rest = rest.slice(j + 3);
  }
  return out;
}

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeFmt = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const rel = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export function fmtDate(sec) {
  return sec ? dateFmt.format(new Date(sec * 1000)) : '';
}

export function fmtTime(sec) {
  return sec ? timeFmt.format(new Date(sec * 1000)) : '';
}

// ago is a short relative time ("3 hours ago") with the date as a title.
export function ago(sec) {
  const d = (sec * 1000 - Date.now()) / 1000;
  const units = [['year', 31536000], ['month', 2592000], ['week', 604800], ['day', 86400], ['hour', 3600], ['minute', 60]];
  for (const [u, s] of units) {
    if (Math.abs(d) >= s) return rel.format(Math.round(d / s), u);
  }
  return rel.format(Math.round(d), 'second');
}

export function num(n) {
  return new Intl.NumberFormat(undefined, { notation: n >= 100000 ? 'compact' : 'standard', maximumFractionDigits: 1 }).format(n || 0);
}

export function usd(n) {
  return '$' + (n || 0).toFixed(n >= 10 ? 2 : 4);
}
