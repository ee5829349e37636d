// The server's REST routes, with the key kept in this tab (sessionStorage).
// A `#token=KEY` in the address (what `loopwright dev --token` prints) is
// taken once and removed from the address bar.

const KEY = 'loopwright.key';

export function takeTokenFromAddress() {
  const match = location.hash.match(/[#&]token=([^&]+)/);
  if (!match) return;
  sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
  const rest = location.hash.replace(/[#&]?token=[^&]+/, '');
  history.replaceState(null, '', location.pathname + (rest.startsWith('#') ? rest : '#' + rest.replace(/^&/, '')));
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
}

export function hasKey() {
  return sessionStorage.getItem(KEY) !== null;
}

function headers(extra = {}) {
  const out = { ...extra };
  const key = sessionStorage.getItem(KEY);
  if (key) out.authorization = 'Bearer ' + key;
  return out;
}

/** An error the server answered: its status and its message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let onUnauthorized = () => {};
/** What to do when the server asks for a key (the page opens its dialog). */
export function whenUnauthorized(handler) { onUnauthorized = handler; }

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    message = body?.error?.message ?? message;
  } catch { /* not JSON: the status says it */ }
  if (response.status === 401) onUnauthorized();
  return new ApiError(response.status, message);
}

export async function get(path, { signal } = {}) {
  const response = await fetch(path, { headers: headers(), signal });
  if (!response.ok) throw await failure(response);
  return response.json();
}

export async function post(path, body, { signal } = {}) {
  const response = await fetch(path, {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/**
 * Read a server-sent event stream from `path` (GET, or POST with `body`),
 * calling `onEvent({id, data})` for each event, until it ends or `signal`
 * aborts. Resolves with the last event id seen.
 */
export async function stream(path, { body, signal, onEvent, extraHeaders = {} }) {
  const init = { headers: headers(extraHeaders), signal };
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204 || !response.body) return null;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let lastId = null;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        let id = null;
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (id !== null) lastId = id;
        if (data.length) onEvent({ id, data: data.join('\n') });
      }
    }
  } finally {
    // A handler that threw, or an abort: the connection is closed, not leaked.
    reader.cancel().catch(() => {});
  }
  return lastId;
}
