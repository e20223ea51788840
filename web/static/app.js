// The page: a router over the URL (/, /?q=…, /s/ID#mID, /stats), the
// session list, search as you type, the transcript, the usage dashboard,
// live updates from /api/v1/events and the keyboard.
import { h, clear, marked, ago, fmtDate, num, usd } from './dom.js';
import { api, qs, setUnauthorized } from './api.js';
import { Transcript } from './transcript.js';
import { stacked, bars } from './charts.js';

const $ = id => document.getElementById(id);
const state = { info: { read_only: true }, mode: 'list', q: '', offset: 0, total: 0, newHits: 0 };
let transcript;
let searchCtl = null;

async function main() {
  setUnauthorized(showLogin);
  $('login-form').addEventListener('submit', login);
  await tokenFromHash();
  window.addEventListener('hashchange', async () => { if (await tokenFromHash()) location.reload(); });
  try {
    state.info = await api('/info');
  } catch {
    return; // showLogin took over
  }
  transcript = new Transcript($('detail'), { readOnly: state.info.read_only, navigate, onChanged: updateRow });
  wire();
  loadSources(); // the source filter fills in beside the first list
  route();
  live();
}

function wire() {
  document.addEventListener('click', e => {
    const a = e.target.closest('a[data-nav]');
    if (a && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
      e.preventDefault();
      navigate(a.getAttribute('href'));
    }
  });
  window.addEventListener('popstate', route);
  $('search-form').addEventListener('submit', e => { e.preventDefault(); runSearch(); });
  let timer;
  $('q').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(runSearch, 180);
  });
  for (const id of ['f-source', 'f-role', 'f-sort', 'f-archived', 'f-pinned']) {
    $(id).addEventListener('change', () => (state.q ? runSearch() : loadList(true)));
  }
  $('more').addEventListener('click', () => (state.q ? runSearch(true) : loadList(false)));
  $('new-hits').addEventListener('click', () => runSearch());
  $('help-button').addEventListener('click', () => $('help').showModal());
  document.addEventListener('keydown', keyboard);
}

// navigate changes the URL and shows it.
function navigate(url) {
  if (url !== location.pathname + location.search + location.hash) history.pushState(null, '', url);
  route();
}

function route() {
  const path = location.pathname;
  const params = new URLSearchParams(location.search);
  const stats = path === '/stats';
  document.body.dataset.view = stats ? 'stats' : path.startsWith('/s/') ? 'session' : 'list';
  $('stats-pane').hidden = !stats;
  $('list-pane').hidden = stats;
  $('detail-pane').hidden = stats;
  $('filters').hidden = stats;
  $('tab-stats').toggleAttribute('aria-current', stats);
  $('tab-sessions').toggleAttribute('aria-current', !stats);
  if (stats) {
    transcript.close();
    document.title = 'Usage · sessiondb';
    showStats();
    return;
  }
  const q = params.get('q') || '';
  if (q !== state.q || !state.loaded) {
    $('q').value = q;
    state.loaded = true;
    if (q) runSearch(); else { state.q = ''; loadList(true); }
  }
  if (path.startsWith('/s/')) {
    const id = decodeURIComponent(path.slice(3));
    const target = +(location.hash.match(/^#m(\d+)$/) || [])[1] || 0;
    if (id !== transcript.id) transcript.open(id, target);
    else if (target) transcript.scrollTo(target);
    markSelected(id);
  } else {
    transcript.close();
    clear($('detail')).append(h('p', { class: 'empty' }, 'Pick a session, or search with ', h('kbd', null, '/'), '.'));
    document.title = 'sessiondb';
  }
}

async function loadSources() {
  if (!state.info.stats) return;
  try {
    const { rows } = await api('/stats?group_by=source');
    $('f-source').append(...rows.map(r => h('option', { value: r.key }, r.key)));
  } catch { /* the filter stays at "all" */ }
}

// --- the session list ---

async function loadList(reset) {
  state.mode = 'list';
  document.body.dataset.mode = 'list';
  state.q = '';
  $('new-hits').hidden = true;
  if (reset) state.offset = 0;
  const params = {
    limit: 30, offset: state.offset,
    source: $('f-source').value, archived: $('f-archived').value, pinned: $('f-pinned').checked,
  };
  $('list-status').textContent = 'Loading…';
  let data;
  try {
    data = await api('/sessions' + qs(params));
  } catch (e) {
    $('list-status').textContent = e.message;
    return;
  }
  if (reset) clear($('list'));
  $('list').append(...data.sessions.map(sessionRow));
  state.offset += data.sessions.length;
  state.total = data.total;
  $('list-status').textContent = data.total ? `${num(state.offset)} of ${num(data.total)} sessions` : 'No sessions.';
  $('more').hidden = state.offset >= data.total;
  markSelected(transcript.id);
  if (!performance.getEntriesByName('list-rendered').length) performance.mark('list-rendered');
}

function sessionRow(s) {
  const last = s.last_active || s.last_activity_at || s.started_at;
  return h('li', { class: 'row item', tabindex: -1, dataset: { id: s.id, last } },
    h('a', { href: '/s/' + encodeURIComponent(s.id), 'data-nav': true, class: 'row-link' },
      h('span', { class: 'row-title' }, s.pinned ? h('span', { class: 'pin', 'aria-label': 'pinned' }, '📌 ') : null,
        s.title || s.preview || s.id),
      s.archived ? h('span', { class: 'tag' }, 'archived') : null,
      s.title && s.preview ? h('span', { class: 'row-preview' }, s.preview) : null,
      h('span', { class: 'row-meta' }, [s.source, s.model].filter(Boolean).join(' · '), ' · ',
        h('time', { title: fmtDate(last), class: 'last' }, ago(last)), ' · ', h('span', { class: 'count' }, num(s.message_count)), ' msgs')));
}

// updateRow applies a session's new state to its row, moving it to the
// top when it was active.
function updateRow(s, moved) {
  const old = document.querySelector(`#list li.row[data-id="${CSS.escape(s.id)}"]`);
  if (s.deleted) { old?.remove(); return; }
  if (!old) return false;
  const row = sessionRow({ ...s, preview: old.querySelector('.row-preview')?.textContent || '', last_active: moved ? Date.now() / 1000 : +old.dataset.last });
  if (old.hasAttribute('aria-current')) row.setAttribute('aria-current', 'true');
  if (moved) { old.remove(); $('list').prepend(row); } else old.replaceWith(row);
  return true;
}

function markSelected(id) {
  for (const li of document.querySelectorAll('#list .item')) {
    select(li, li.dataset.id === id || (li.dataset.session === id && !li.dataset.id));
  }
}

// select marks the list item that is current (the open session, or the
// one j/k moved to).
function select(li, on) {
  if (on) li.setAttribute('aria-current', 'true');
  else li.removeAttribute('aria-current');
}

// --- search as you type ---

async function runSearch(more) {
  const q = $('q').value.trim();
  if (!q) {
    if (state.q) { history.replaceState(null, '', location.pathname); loadList(true); }
    return;
  }
  if (searchCtl) searchCtl.abort(); // a newer query wins
  const ctl = new AbortController();
  searchCtl = ctl;
  state.mode = 'search';
  document.body.dataset.mode = 'search';
  state.q = q;
  state.newHits = 0;
  $('new-hits').hidden = true;
  if (!more) state.offset = 0;
  const url = location.pathname.startsWith('/s/') ? location.pathname : '/';
  history.replaceState(null, '', url + qs({ q }) + location.hash);
  const params = { q, source: $('f-source').value, role: $('f-role').value, sort: $('f-sort').value, limit: 50, offset: state.offset };
  $('list-status').textContent = 'Searching…';
  let data;
  try {
    data = await api('/search' + qs(params), { signal: ctl.signal });
  } catch (e) {
    if (e.name !== 'AbortError') $('list-status').textContent = e.message;
    return;
  }
  if (!more) clear($('list'));
  renderHits(data);
  state.offset += data.hits.length;
  $('list-status').textContent = state.offset ? `${num(state.offset)} hits` : 'No matches.';
  $('more').hidden = data.hits.length < params.limit;
}

// renderHits groups consecutive hits of a session under its heading.
function renderHits({ hits, sessions }) {
  let group, last;
  for (const hit of hits) {
    if (hit.session_id !== last) {
      last = hit.session_id;
      const s = sessions[hit.session_id] || {};
      group = h('ol', { class: 'hits' });
      $('list').append(h('li', { class: 'group', dataset: { session: hit.session_id } },
        h('div', { class: 'group-head' }, h('span', { class: 'row-title' }, s.title || hit.session_id),
          h('span', { class: 'row-meta' }, [hit.source, hit.model, fmtDate(hit.session_started)].filter(Boolean).join(' · '))),
        group));
    }
    group.append(h('li', { class: 'hit item', tabindex: -1, dataset: { session: hit.session_id, msg: hit.id } },
      h('a', { href: '/s/' + encodeURIComponent(hit.session_id) + qs({ q: state.q }) + '#m' + hit.id, 'data-nav': true, class: 'row-link' },
        h('span', { class: 'role role-' + hit.role }, hit.role), hit.tool_name ? h('span', { class: 'tool-name' }, hit.tool_name) : null,
        h('span', { class: 'snippet' }, marked(hit.snippet)))));
  }
}

// --- live ---

function live() {
  if (!state.info.events) return;
  const es = new EventSource('/api/v1/events');
  const dot = $('live');
  es.onopen = () => { dot.classList.add('on'); dot.setAttribute('aria-label', 'Live updates: on'); };
  es.onerror = () => { dot.classList.remove('on'); dot.setAttribute('aria-label', 'Live updates: reconnecting'); };
  let refresh;
  const later = () => { clearTimeout(refresh); refresh = setTimeout(() => state.mode === 'list' && loadList(true), 400); };
  es.addEventListener('message', e => {
    const m = JSON.parse(e.data);
    if (transcript.id === m.session_id) transcript.more();
    if (state.mode === 'search' && matches(m.preview, state.q)) {
      state.newHits++;
      const b = $('new-hits');
      b.textContent = `${state.newHits} new`;
      b.setAttribute('aria-label', `${state.newHits} new matching messages: show them`);
      b.hidden = false;
    }
  });
  es.addEventListener('session', e => {
    const s = JSON.parse(e.data);
    if (state.mode !== 'list') return;
    const row = document.querySelector(`#list li.row[data-id="${CSS.escape(s.id)}"]`);
    const active = row && +row.querySelector('.count').textContent.replace(/\D/g, '') !== s.message_count;
    if (updateRow(s, active) === false && !s.deleted) later();
    if (transcript.id === s.id && !s.deleted) transcript.session = s;
  });
  es.addEventListener('reset', () => { later(); if (transcript.id) transcript.open(transcript.id); });
}

// matches is a rough client-side test of a preview against the query's
// words, for the "new hits" badge; the search itself decides.
function matches(text, q) {
  const t = (text || '').toLowerCase();
  const words = q.toLowerCase().replace(/["()*]/g, ' ').split(/\s+/).filter(w => w && !['and', 'or', 'not'].includes(w));
  return words.length > 0 && words.every(w => t.includes(w));
}

// --- keyboard ---

function keyboard(e) {
  const typing = e.target.matches('input, textarea, select');
  if (e.key === 'Escape') {
    if (typing) { e.target.blur(); return; }
    if ($('help').open) return;
    if (location.pathname !== '/') navigate('/' + (state.q ? qs({ q: state.q }) : ''));
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const items = [...document.querySelectorAll('#list .item')];
  let i = items.findIndex(li => li === document.activeElement || li.contains(document.activeElement));
  if (i < 0) i = items.findIndex(li => li.hasAttribute('aria-current'));
  switch (e.key) {
    case '/':
      e.preventDefault();
      $('q').focus();
      $('q').select();
      break;
    case 'j':
    case 'k': {
      if (!items.length) return;
      const n = Math.max(0, Math.min(items.length - 1, i + (e.key === 'j' ? 1 : -1)));
      items.forEach((li, k) => select(li, k === n));
      items[n].focus();
      items[n].scrollIntoView({ block: 'nearest' });
      break;
    }
    case 'Enter':
      if (i >= 0) { e.preventDefault(); items[i].querySelector('a').click(); }
      break;
    case '?':
      $('help').showModal();
      break;
  }
}

// --- usage dashboard ---

async function showStats() {
  const pane = clear($('stats-pane'));
  if (!state.info.stats) {
    pane.append(h('p', { class: 'empty' }, 'This store has no usage statistics.'));
    return;
  }
  pane.append(h('p', { class: 'status' }, 'Loading…'));
  try {
    const [total, days, models, sources, top] = await Promise.all([
      api('/stats'), state.info.stats_day_model ? api('/stats?group_by=day_model') : api('/stats?group_by=day'),
      api('/stats?group_by=model'), api('/stats?group_by=source'),
      state.info.stats_costliest ? api('/stats/costliest?limit=10') : api('/sessions?limit=200&children=1&archived=1'),
    ]);
    const t = total.rows[0] || {};
    const perDay = dayModel(days);
    const byModel = new Map();
    for (const r of models.rows) {
      const m = byModel.get(r.key) || { key: r.key, tokens: 0, cost: 0 };
      m.tokens += r.input_tokens + r.output_tokens;
      m.cost += r.estimated_cost_usd || r.actual_cost_usd;
      byModel.set(r.key, m);
    }
    // The store ranks every session by cost; one that cannot gets the 200
    // newest ranked here, and the chart says so.
    const topCost = top.sessions.map(s => ({ ...s, cost: s.actual_cost_usd || s.estimated_cost_usd || 0 }))
      .filter(s => s.cost > 0).sort((a, b) => b.cost - a.cost).slice(0, 10);
    const topLabel = state.info.stats_costliest ? 'Top sessions by cost' : 'Top sessions by cost (of the 200 newest)';
    clear(pane).append(
      h('h1', null, 'Usage'),
      h('dl', { class: 'totals' },
        [['Sessions', num(t.sessions)], ['Messages', num(t.messages)], ['API calls', num(t.api_calls)],
          ['Input tokens', num(t.input_tokens)], ['Output tokens', num(t.output_tokens)], ['Estimated cost', usd(t.estimated_cost_usd)]]
          .map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v)))),
      h('div', { class: 'charts' },
        stacked(perDay.tokens, perDay.series, { label: 'Tokens per day, by model' }),
        stacked(perDay.cost, perDay.series, { label: 'Cost per day, by model', format: usd }),
        bars([...byModel.values()], { label: 'Tokens by model', value: r => r.tokens, name: r => r.key }),
        bars([...byModel.values()].sort((a, b) => b.cost - a.cost), { label: 'Cost by model', value: r => r.cost, name: r => r.key, format: usd, series: 's1' }),
        bars(sources.rows, { label: 'Tokens by source', value: r => r.input_tokens + r.output_tokens, name: r => r.key, series: 's2' }),
        bars(topCost, { label: topLabel, value: r => r.cost, name: r => r.title || r.id, format: usd, series: 's3' })));
    for (const [i, s] of topCost.entries()) {
      const link = pane.querySelectorAll('figure')[5]?.querySelectorAll('rect')[i];
      link?.addEventListener('click', () => navigate('/s/' + encodeURIComponent(s.id)));
    }
  } catch (e) {
    clear(pane).append(h('p', { class: 'error' }, e.message));
  }
}

// dayModel turns the rows of group_by=day_model (or, from a store without
// it, group_by=day) into the last 90 days' columns stacked by model: the
// five largest models, the rest as "other".
function dayModel({ group_by: by, rows }) {
  if (by !== 'day_model') {
    const days = rows.slice(0, 90).reverse();
    const series = [{ key: 'all', label: 'all models' }];
    return { series, tokens: days.map(r => ({ key: r.key, all: r.input_tokens + r.output_tokens })),
      cost: days.map(r => ({ key: r.key, all: r.actual_cost_usd || r.estimated_cost_usd })) };
  }
  const size = new Map();
  for (const r of rows) size.set(r.key, (size.get(r.key) || 0) + r.input_tokens + r.output_tokens);
  const top = [...size.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5).map(e => e[0]);
  const series = top.map(m => ({ key: m, label: m }));
  if (size.size > top.length) series.push({ key: '\u0000other', label: 'other' });
  const tokens = new Map(), cost = new Map();
  for (const r of rows) {
    const k = top.includes(r.key) ? r.key : '\u0000other';
    for (const [m, v] of [[tokens, r.input_tokens + r.output_tokens], [cost, r.actual_cost_usd || r.estimated_cost_usd]]) {
      const d = m.get(r.day) || { key: r.day };
      d[k] = (d[k] || 0) + v;
      m.set(r.day, d);
    }
  }
  const last = xs => [...xs.values()].slice(-90);
  return { series, tokens: last(tokens), cost: last(cost) };
}

// --- login ---

// tokenFromHash logs in with the token of a /#token=… link (the URL serve
// prints), then drops it from the URL; the fragment never reaches the
// server or its log.
async function tokenFromHash() {
  const m = location.hash.match(/^#token=([\w-]+)$/);
  if (!m) return false;
  history.replaceState(null, '', location.pathname + location.search);
  await api('/login', { method: 'POST', body: { token: m[1] } }).catch(() => {});
  return true;
}

function showLogin() {
  if (!$('login').open) $('login').showModal();
}

async function login(e) {
  e.preventDefault();
  try {
    await api('/login', { method: 'POST', body: { token: $('token').value } });
    location.reload();
  } catch (err) {
    $('login-error').textContent = err.message;
  }
}

main();
