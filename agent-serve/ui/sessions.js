// Sessions: the conversations kept; one with its messages and the runs
// that wrote it.
import { get } from './api.js';
import { badge, count, h, json, link, table, when } from './dom.js';

export async function sessionsView() {
  const { sessions } = await get('/v1/sessions?limit=200');
  const node = h('section', {}, h('h1', {}, 'Sessions'),
    sessions.length ? table([
      ['Session', (s) => link('#/sessions/' + encodeURIComponent(s.id), s.id)],
      ['Turns', (s) => count(s.version)],
      ['Last written', (s) => when(s.updated_at)],
    ], sessions, (s) => { location.hash = '#/sessions/' + encodeURIComponent(s.id); })
      : h('p', { class: 'muted' }, 'No session is kept yet: a chat in the playground, or a run given a session, makes one.'));
  return { node, title: 'Sessions' };
}

export async function sessionView(id) {
  const s = await get('/v1/sessions/' + encodeURIComponent(id));
  const node = h('section', {},
    h('h1', {}, 'Session ', h('code', {}, s.id)),
    h('p', { class: 'muted' }, `${count(s.version)} turns, ${count(s.messages.length)} messages`),
    h('h2', {}, 'Messages'),
    h('div', { class: 'chat' }, s.messages.map(message)),
    h('h2', {}, 'Runs that wrote it'),
    s.runs.length ? table([
      ['Run', (r) => link('#/runs/' + encodeURIComponent(r.id), r.id)],
      ['Status', (r) => badge(r.status)],
      ['Started', (r) => when(r.created_at)],
    ], s.runs) : h('p', { class: 'muted' }, 'No background run: its turns came from synchronous requests.'));
  return { node, title: 'Session ' + id };
}

function message(m) {
  return h('article', { class: 'msg ' + m.role },
    h('div', { class: 'who' }, m.role),
    (m.content ?? []).map((part) => {
      if (part.type === 'text') return h('div', { class: 'text' }, part.text);
      if (part.type === 'tool_call') return h('div', { class: 'tool-card' }, h('strong', {}, part.name ?? part.tool), json(part.arguments ?? part.input));
      if (part.type === 'tool_result') return h('div', { class: 'tool-card' }, h('span', { class: 'muted' }, 'result of ', part.call_id), json(part.parts ?? part.output));
      return json(part);
    }));
}
