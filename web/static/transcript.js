// The transcript of one session: its header and actions, the lineage
// picture, and the messages, read 500 at a time and appended as they come
// so that a session of 10,000 messages opens at once (content-visibility
// lets the browser skip laying out what is off screen).
import { h, clear, fmtDate, fmtTime, num, usd } from './dom.js';
import { markdown } from './markdown.js';
import { api, qs } from './api.js';
import { lineagePicture } from './lineage.js';

const PAGE = 250;

export class Transcript {
  constructor(root, { readOnly, navigate, onChanged }) {
    this.root = root;
    this.readOnly = readOnly;
    this.navigate = navigate;
    this.onChanged = onChanged;
    this.id = null;
    this.lastID = 0;
    this.loading = null;
  }

  // open shows session id, scrolled to message target (an id) if given.
  async open(id, target) {
    if (this.loading) this.loading.abort();
    const ctl = new AbortController();
    this.loading = ctl;
    this.id = id;
    this.lastID = 0;
    this.pending = false;
    this.target = target || 0;
    clear(this.root).append(h('p', { class: 'status' }, 'Loading…'));
    let s;
    try {
      s = await api('/sessions/' + encodeURIComponent(id), { signal: ctl.signal });
    } catch (e) {
      if (e.name === 'AbortError') return;
      clear(this.root).append(h('p', { class: 'error' }, e.message));
      return;
    }
    this.session = s;
    this.msgs = h('ol', { class: 'messages', 'aria-label': 'Messages' });
    this.lineageBox = h('div', { class: 'lineage' });
    clear(this.root).append(this.header(s), this.lineageBox, this.msgs,
      this.tail = h('p', { class: 'status', 'aria-live': 'polite' }));
    document.title = (s.title || s.id) + ' · sessiondb';
    this.loadLineage(ctl.signal);
    await this.loadAll(ctl.signal);
  }

  close() {
    if (this.loading) this.loading.abort();
    this.id = null;
  }

  header(s) {
    const facts = [s.source, s.model, fmtDate(s.started_at), num(s.message_count) + ' messages',
      num((s.input_tokens || 0) + (s.output_tokens || 0)) + ' tokens',
      s.estimated_cost_usd ? usd(s.estimated_cost_usd) : null,
      s.ended_at ? 'ended: ' + (s.end_reason || '') : 'open'].filter(Boolean);
    const actions = h('div', { class: 'actions' });
    const act = (label, fn, cls) => actions.append(h('button', { type: 'button', class: cls, onclick: fn }, label));
    if (!this.readOnly) {
      act(s.pinned ? 'Unpin' : 'Pin', () => this.mutate('PATCH', '', { pinned: !s.pinned }));
      act(s.archived ? 'Unarchive' : 'Archive', () => this.mutate('PATCH', '', { archived: !s.archived }));
      act('Rename', () => {
        const t = prompt('Title', s.title || '');
        if (t !== null) this.mutate('PATCH', '', { title: t });
      });
      act(s.ended_at ? 'Reopen' : 'End', () => this.mutate('POST', s.ended_at ? '/reopen' : '/end'));
      act('Delete', async () => {
        if (!confirm('Delete this session and its messages? This cannot be undone.')) return;
        await this.mutate('DELETE', '');
        this.navigate('/');
      }, 'danger');
    }
    const base = '/api/v1/sessions/' + encodeURIComponent(s.id) + '/export';
    actions.append(h('span', { class: 'export' }, 'Export ',
      ['md', 'jsonl', 'json'].map(f => h('a', { href: base + qs({ format: f }), download: '' }, f))));
    return h('header', { class: 'session-head' },
      h('button', { type: 'button', class: 'back', 'aria-label': 'Back to the list', onclick: () => this.navigate('/') }, '←'),
      h('h1', null, s.title || h('span', { class: 'untitled' }, s.id)),
      h('p', { class: 'facts' }, facts.join(' · '), s.pinned ? ' · 📌 pinned' : '', s.archived ? ' · archived' : ''),
      actions);
  }

  async mutate(method, path, body) {
    try {
      const s = await api('/sessions/' + encodeURIComponent(this.id) + path, { method, body });
      if (method !== 'DELETE') {
        this.session = s;
        this.root.querySelector('.session-head').replaceWith(this.header(s));
      }
      this.onChanged(s);
    } catch (e) {
      alert(e.message);
    }
  }

  async loadLineage(signal) {
    try {
      const tree = await api('/sessions/' + encodeURIComponent(this.id) + '/lineage', { signal });
      if (tree.children && tree.children.length) {
        this.lineageBox.append(h('details', { open: true }, h('summary', null, 'Lineage'),
          lineagePicture(tree, this.id, id => this.navigate('/s/' + encodeURIComponent(id)))));
      }
    } catch { /* the transcript works without it */ }
  }

  // loadAll reads every page, yielding to the browser between pages.
  async loadAll(signal) {
    this.filling = signal;
    try {
      await this.fill(signal);
    } finally {
      if (this.filling === signal) this.filling = null;
    }
    if (this.pending && !signal.aborted) {
      this.pending = false;
      this.more();
    }
  }

  async fill(signal) {
    for (;;) {
      let page;
      try {
        page = await api('/sessions/' + encodeURIComponent(this.id) + '/messages' + qs({ after_id: this.lastID, limit: PAGE }), { signal });
      } catch (e) {
        if (e.name !== 'AbortError') this.tail.textContent = e.message;
        return;
      }
      this.appendMessages(page.messages);
      if (!page.more) break;
      this.tail.textContent = 'Loading… ' + num(this.msgs.childElementCount);
      await new Promise(r => setTimeout(r, 0));
      if (signal.aborted) return;
    }
    this.tail.textContent = '';
    if (this.target) this.scrollTo(this.target);
  }

  appendMessages(list) {
    const frag = document.createDocumentFragment();
    for (const m of list) {
      if (m.id <= this.lastID) continue; // already shown
      frag.append(renderMessage(m));
      this.lastID = Math.max(this.lastID, m.id);
    }
    this.msgs.append(frag);
    if (this.target && this.lastID >= this.target) this.scrollTo(this.target);
  }

  scrollTo(id) {
    const el = document.getElementById('m' + id);
    if (!el) return;
    this.target = 0;
    el.classList.add('target');
    el.scrollIntoView({ block: 'center' });
  }

  // live: a message event for this session fetches what follows the last
  // message shown.
  async more() {
    if (!this.id) return;
    if (this.filling || this.fetching) {
      this.pending = true; // fetched when the running read ends
      return;
    }
    this.fetching = true;
    try {
      const pane = this.root.closest('.pane') || document.scrollingElement;
      const stick = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 80; // at the bottom: follow
      const page = await api('/sessions/' + encodeURIComponent(this.id) + '/messages' + qs({ after_id: this.lastID, limit: PAGE }));
      this.appendMessages(page.messages);
      if (stick && page.messages.length) this.msgs.lastChild.scrollIntoView({ block: 'end' });
    } catch { /* the next event tries again */ } finally {
      this.fetching = false;
    }
    if (this.pending) {
      this.pending = false;
      this.more();
    }
  }
}

export function renderMessage(m) {
  const role = m.role || 'unknown';
  const head = h('div', { class: 'msg-head' },
    h('span', { class: 'role role-' + role }, role),
    m.tool_name ? h('span', { class: 'tool-name' }, m.tool_name) : null,
    h('time', { datetime: new Date(m.timestamp * 1000).toISOString(), title: fmtDate(m.timestamp) }, fmtTime(m.timestamp)),
    h('a', { class: 'anchor', href: '#m' + m.id, 'aria-label': 'Link to message ' + m.id }, '#' + m.id));
  const body = h('div', { class: 'msg-body' });
  const reasoning = m.reasoning || m.reasoning_content;
  if (reasoning) body.append(fold('reasoning', 'Reasoning', h('div', { class: 'md' }, markdown(reasoning))));
  if (role === 'tool') {
    const text = contentText(m.content);
    const lines = text.split('\n').length;
    body.append(fold('tool-result', 'Result' + (m.tool_name ? ' of ' + m.tool_name : '') + ' · ' + num(lines) + ' lines',
      h('pre', { class: 'code' }, h('code', null, text))));
  } else {
    body.append(content(m.content));
  }
  for (const call of toolCalls(m.tool_calls)) {
    const fn = call.function || {};
    let args = fn.arguments || '';
    try { args = JSON.stringify(JSON.parse(args), null, 2); } catch { /* shown as stored */ }
    body.append(fold('tool-call', 'Tool call: ' + (fn.name || call.type || 'call'), h('pre', { class: 'code' }, h('code', null, args))));
  }
  return h('li', { id: 'm' + m.id, class: 'msg msg-' + role + (m.active === false ? ' inactive' : ''), dataset: { id: m.id } }, head, body);
}

function fold(cls, label, inner) {
  return h('details', { class: 'fold ' + cls }, h('summary', null, label), inner);
}

function toolCalls(raw) {
  return Array.isArray(raw) ? raw.filter(c => c && typeof c === 'object') : [];
}

function contentText(c) {
  if (c === null || c === undefined) return '';
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map(p => (p && typeof p.text === 'string') ? p.text : JSON.stringify(p)).join('\n');
  return JSON.stringify(c, null, 2);
}

// content renders a string as Markdown and a multimodal parts list part by
// part: text as Markdown, an inline data image as an image, anything else
// as its JSON.
function content(c) {
  if (c === null || c === undefined) return h('div', { class: 'md empty-content' });
  if (typeof c === 'string') return h('div', { class: 'md' }, markdown(c));
  if (!Array.isArray(c)) return h('pre', { class: 'code' }, h('code', null, JSON.stringify(c, null, 2)));
  return h('div', { class: 'md parts' }, c.map(p => {
    if (p && p.type === 'text' && typeof p.text === 'string') return markdown(p.text);
    const url = p && (p.image_url?.url || p.image_url);
    if (typeof url === 'string' && /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(url)) {
      return h('img', { class: 'part-img', src: url, alt: 'image attached to the message' });
    }
    if (typeof url === 'string') return h('p', { class: 'part' }, '[image: ' + url.slice(0, 200) + ']');
    return h('pre', { class: 'code part' }, h('code', null, JSON.stringify(p, null, 2)));
  }));
}
