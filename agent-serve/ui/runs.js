// Runs: every run kept, with its status, agent, duration and tokens;
// filtered by status and agent; a row opens the run's timeline.
import { get } from './api.js';
import { badge, count, errorBox, fill, h, link, ms, table, when } from './dom.js';

const STATUSES = ['running', 'awaiting_approval', 'completed', 'failed', 'cancelled'];

export async function runsView(query) {
  const { agents } = await get('/v1/agents');
  const status = h('select', { 'aria-label': 'Status' }, h('option', { value: '' }, 'any status'),
    STATUSES.map((s) => h('option', { value: s, selected: query?.get('status') === s }, s.replaceAll('_', ' '))));
  const agent = h('select', { 'aria-label': 'Agent' }, h('option', { value: '' }, 'any agent'),
    agents.map((a) => h('option', { value: a.name, selected: query?.get('agent') === a.name }, a.name)));
  const out = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const refresh = h('button', { type: 'button', class: 'quiet' }, 'Refresh');

  async function load() {
    const params = new URLSearchParams({ limit: '200' });
    if (status.value) params.set('status', status.value);
    if (agent.value) params.set('agent', agent.value);
    try {
      const { runs } = await get('/v1/runs?' + params);
      fill(out, runs.length ? table([
        ['Run', (r) => link('#/runs/' + encodeURIComponent(r.id), r.id)],
        ['Status', (r) => badge(r.status)],
        ['Agent', (r) => r.agent],
        ['Started', (r) => when(r.created_at), true],
        ['Duration', (r) => ms(r.updated_at - r.created_at)],
        ['Tokens', (r) => tokens(r.result?.usage)],
        ['Steps', (r) => count(r.result?.steps), true],
      ], runs, (r) => { location.hash = '#/runs/' + encodeURIComponent(r.id); })
        : h('p', { class: 'muted' }, 'No run matches.'));
    } catch (error) {
      fill(out, errorBox(error));
    }
  }
  status.addEventListener('change', load);
  agent.addEventListener('change', load);
  refresh.addEventListener('click', load);
  await load();
  return {
    node: h('section', {}, h('h1', {}, 'Runs'), h('div', { class: 'row' }, status, agent, refresh), out),
    title: 'Runs',
  };
}

export function tokens(usage) {
  if (!usage) return '–';
  const input = usage.input_tokens ?? 0;
  const output = usage.output_tokens ?? 0;
  return `${count(input + output)} (${count(input)} in, ${count(output)} out)`;
}
