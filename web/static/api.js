// The JSON API: fetch with the CSRF header, JSON errors as exceptions,
// and a login when the server asks for its token.

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};
export function setUnauthorized(fn) { onUnauthorized = fn; }

export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { 'Accept': 'application/json' };
  if (method !== 'GET') headers['X-Sessiondb'] = '1';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch('/api/v1' + path, {
    method, signal, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const e = data.error || { code: 'http_' + res.status, message: res.statusText };
    if (res.status === 401 && !path.startsWith('/login')) onUnauthorized();
    throw new APIError(res.status, e.code, e.message);
  }
  return data;
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) u.set(k, v === true ? '1' : v);
  }
  const s = u.toString();
  return s ? '?' + s : '';
}
