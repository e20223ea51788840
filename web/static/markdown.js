// A small Markdown renderer that builds DOM nodes, never HTML: fenced and
// inline code, headings, lists, quotes, rules, emphasis and links. Raw HTML
// in the text stays text; a link is a link only for http, https and mailto
// URLs; images are not loaded (a remote image would leak that the page was
// read), they show as their alt text.
import { h } from './dom.js';

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

export function markdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) frag.append(h('p', null, inlineLines(para)));
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = line.match(/^\s{0,3}(`{3,}|~{3,})\s*([\w+.#-]*)/))) {
      flush();
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence); i++) body.push(lines[i]);
      i++;
      frag.append(h('pre', { class: 'code' }, h('code', { 'data-lang': m[2] || null }, body.join('\n'))));
      continue;
    }
    if ((m = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      flush();
      frag.append(h('h' + Math.min(m[1].length + 2, 6), { class: 'md-h' }, inline(m[2])));
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      frag.append(h('hr'));
      i++;
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      flush();
      const body = [];
      for (; i < lines.length && /^\s{0,3}>/.test(lines[i]); i++) body.push(lines[i].replace(/^\s{0,3}>\s?/, ''));
      frag.append(h('blockquote', null, markdown(body.join('\n'))));
      continue;
    }
    if ((m = line.match(/^(\s*)([-*+]|\d{1,9}[.)])\s+/))) {
      flush();
      const ordered = /\d/.test(m[2]);
      const list = h(ordered ? 'ol' : 'ul');
      for (; i < lines.length; i++) {
        const lm = lines[i].match(/^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/);
        if (lm && /\d/.test(lm[2]) === ordered) list.append(h('li', null, inline(lm[3])));
        else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) list.lastChild.append(' ', ...inline(lines[i].trim()));
        else break;
      }
      frag.append(list);
      continue;
    }
    if (!line.trim()) {
      flush();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return frag;
}

function inlineLines(lines) {
  const out = [];
  lines.forEach((l, n) => {
    if (n) out.push(h('br'));
    out.push(...inline(l));
  });
  return out;
}

// One pattern for every inline construct; the first match in the text
// wins and the text around it stays text.
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)[^)]*\)|\[([^\]]+)\]\(([^)\s]*)[^)]*\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/;

export function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    const m = rest.match(INLINE);
    if (!m) { out.push(rest); break; }
    if (m.index) out.push(rest.slice(0, m.index));
    if (m[1]) out.push(h('code', null, m[2]));
    else if (m[4] !== undefined && m[0].startsWith('!')) out.push(h('span', { class: 'md-img', title: m[4] }, '[image: ' + (m[3] || m[4]) + ']'));
    else if (m[5] !== undefined) out.push(link(m[5], m[6], m[0]));
    else if (m[7] || m[8]) out.push(h('strong', null, inline(m[7] || m[8])));
    else if (m[9] || m[10]) out.push(h('em', null, inline(m[9] || m[10])));
    else if (m[11]) out.push(link(m[11], m[11], m[11]));
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

function link(text, url, raw) {
  if (!SAFE_URL.test(url)) return raw; // javascript:, data: and the like stay text
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }, inline(text));
}
