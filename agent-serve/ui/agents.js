// Agents: each served agent; one agent whole (models, MCP servers, tools
// with their schemas and sources, guardrails, limits).
import { get } from './api.js';
import { badge, count, h, json, link, ms, table } from './dom.js';

export async function agentsView() {
  const { agents } = await get('/v1/agents');
  const node = h('section', {},
    h('h1', {}, 'Agents'),
    h('div', { class: 'grid' }, agents.map((a) => h('div', { class: 'card' },
      h('h2', {}, link('#/agents/' + encodeURIComponent(a.name), a.name)),
      h('p', { class: 'muted' }, a.description),
      h('p', {}, 'Model: ', h('code', {}, a.models[0] ?? '–'),
        a.models.length > 1 ? h('span', { class: 'muted' }, ` then ${a.models.slice(1).join(', ')}`) : null),
      h('div', { class: 'row' },
        link('#/playground/' + encodeURIComponent(a.name), 'Chat'), ' · ',
        link('#/tools/' + encodeURIComponent(a.name), 'Tools'), ' · ',
        link('#/runs?agent=' + encodeURIComponent(a.name), 'Runs'))))));
  return { node, title: 'Agents' };
}

export async function agentView(name) {
  const a = await get('/v1/agents/' + encodeURIComponent(name));
  const servers = a.servers;
  const node = h('section', {},
    h('h1', {}, a.name),
    h('p', { class: 'muted' }, a.description),
    h('div', { class: 'row' },
      link('#/playground/' + encodeURIComponent(a.name), 'Open in the playground'), ' · ',
      link('#/tools/' + encodeURIComponent(a.name), 'Call its tools')),
    h('h2', {}, 'Models'),
    h('ol', {}, a.models.map((m, i) => h('li', {}, h('code', {}, m), i ? h('span', { class: 'muted' }, ' (fallback)') : null))),
    h('h2', {}, 'MCP servers'),
    servers
      ? h('ul', {},
        servers.connected.map((s) => h('li', {}, s, ' ', badge('connected'))),
        servers.failed.map((f) => h('li', {}, f.server, ' ', badge('error'), ' ', h('span', { class: 'bad' }, f.error))))
      : h('p', { class: 'muted' }, 'None configured.'),
    h('h2', {}, `Tools (${a.tools.length})`),
    a.tools.length ? table([
      ['Tool', (t) => h('div', {}, h('code', {}, t.name), t.original_name !== t.name ? h('div', { class: 'muted' }, 'as ', t.original_name) : null)],
      ['Source', (t) => h('div', {}, t.source, ' ', badge(t.source_kind))],
      ['Description', (t) => h('div', {}, t.description,
        h('details', {}, h('summary', {}, 'Input schema'), json(t.input_schema)))],
    ], a.tools) : h('p', { class: 'muted' }, 'No tools.'),
    a.warnings.length ? h('div', {}, h('h2', {}, 'Warnings'), h('ul', {}, a.warnings.map((w) => h('li', { class: 'warn' }, w)))) : null,
    h('h2', {}, 'Guardrails'),
    a.guardrails.length
      ? h('ul', {}, a.guardrails.map((g) => h('li', {}, h('code', {}, g.name), h('span', { class: 'muted' }, ' on ', g.points.join(', ')))))
      : h('p', { class: 'muted' }, 'None.'),
    h('h2', {}, 'Limits'),
    h('div', { class: 'figures' },
      figure('Steps at most', count(a.limits.max_steps)),
      figure('Tool timeout', ms(a.limits.tool_timeout_ms)),
      figure('Tools at once', count(a.limits.tool_concurrency)),
      figure('Context window', a.limits.context_window ? count(a.limits.context_window) + ' tokens' : 'not set')),
    a.system ? h('div', {}, h('h2', {}, 'System prompt'), h('pre', {}, a.system)) : null);
  return { node, title: a.name };
}

export function figure(label, value) {
  return h('div', {}, h('span', {}, label), value);
}
