// The lineage tree as an SVG picture: one box per session (root at the
// top, each child indented under its parent), the current one outlined,
// each box a link that opens its session.
import { h } from './dom.js';

const W = 260, H = 40, ROW = 52, INDENT = 28;

export function lineagePicture(tree, current, open) {
  const nodes = [];
  const walk = (n, depth) => {
    nodes.push({ n, depth, row: nodes.length });
    const me = nodes[nodes.length - 1];
    me.kids = (n.children || []).map(c => walk(c, depth + 1));
    return me;
  };
  walk(tree, 0);
  const width = W + INDENT * Math.max(...nodes.map(x => x.depth)) + 4;
  const height = nodes.length * ROW;
  const svg = h('svg:svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'group', 'aria-label': 'Lineage of ' + nodes.length + ' sessions', class: 'lineage-svg' });
  for (const p of nodes) {
    for (const c of p.kids) {
      const x = 2 + p.depth * INDENT + 12, y0 = p.row * ROW + H + 2, y1 = c.row * ROW + 2 + H / 2;
      svg.append(h('svg:path', { d: `M${x} ${y0} V${y1} H${2 + c.depth * INDENT}`, class: 'edge' }));
    }
  }
  for (const { n, depth, row } of nodes) {
    const x = 2 + depth * INDENT, y = 2 + row * ROW;
    const label = (n.title || n.id).slice(0, 34);
    const link = h('svg:a', { href: '/s/' + encodeURIComponent(n.id), class: 'node' + (n.id === current ? ' current' : ''), 'aria-label': `${n.kind}: ${n.title || n.id}, ${n.message_count} messages` },
      h('svg:rect', { x, y, width: W, height: H, rx: 6 }),
      h('svg:text', { x: x + 10, y: y + 16, class: 'node-title' }, label),
      h('svg:text', { x: x + 10, y: y + 32, class: 'node-meta' }, `${n.kind} · ${n.message_count} msgs${n.end_reason ? ' · ' + n.end_reason : ''}`));
    link.addEventListener('click', e => { e.preventDefault(); open(n.id); });
    svg.append(link);
  }
  return h('div', { class: 'lineage-scroll' }, svg);
}
