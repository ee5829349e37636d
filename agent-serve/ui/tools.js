// Tools: call any of an agent's tools (its own or an MCP server's) with
// JSON arguments, checked against the tool's schema by the server, and
// see the result.
import { get, post } from './api.js';
import { badge, errorBox, fill, h, json, ms } from './dom.js';

export async function toolsView(name) {
  const { agents } = await get('/v1/agents');
  if (!agents.length) return { node: h('p', {}, 'No agent is served.'), title: 'Tools' };
  const agentName = agents.some((a) => a.name === name) ? name : agents[0].name;
  const agent = await get('/v1/agents/' + encodeURIComponent(agentName));
  const picker = h('select', { 'aria-label': 'Agent' }, agents.map((a) => h('option', { value: a.name, selected: a.name === agentName }, a.name)));
  picker.addEventListener('change', () => { location.hash = '#/tools/' + encodeURIComponent(picker.value); });
  const toolPicker = h('select', { id: 'tool', 'aria-label': 'Tool' }, agent.tools.map((t) => h('option', { value: t.name }, t.name)));
  const about = h('div');
  const args = h('textarea', { id: 'arguments', 'aria-label': 'Arguments (JSON)', spellcheck: 'false' });
  const result = h('div', { 'aria-live': 'polite' });
  const call = h('button', { type: 'submit' }, 'Call');

  const show = () => {
    const tool = agent.tools.find((t) => t.name === toolPicker.value);
    if (!tool) return;
    fill(about, h('p', {}, tool.description), h('p', { class: 'muted' }, 'From ', tool.source, ' ', badge(tool.source_kind)),
      h('details', {}, h('summary', {}, 'Input schema'), json(tool.input_schema)));
    args.value = JSON.stringify(skeleton(tool.input_schema), null, 2);
    fill(result);
  };
  toolPicker.addEventListener('change', show);

  async function submit(e) {
    e.preventDefault();
    let input;
    try {
      input = JSON.parse(args.value || '{}');
    } catch (error) {
      fill(result, errorBox(new Error(`The arguments are not JSON: ${error.message}`)));
      return;
    }
    call.disabled = true;
    try {
      const answer = await post(`/v1/agents/${encodeURIComponent(agentName)}/tools/${encodeURIComponent(toolPicker.value)}`, input);
      fill(result, h('div', { class: 'card', id: 'tool-result' },
        h('div', { class: 'row spread' }, h('strong', {}, answer.is_error ? 'The tool failed' : 'Result'), h('span', { class: 'muted' }, ms(answer.duration_ms))),
        answer.output.map(output)));
    } catch (error) {
      fill(result, errorBox(error));
    } finally {
      call.disabled = false;
    }
  }
  show();
  const node = h('section', {},
    h('div', { class: 'row spread' }, h('h1', {}, 'Tools'), picker),
    agent.tools.length ? h('form', { onsubmit: submit },
      h('div', { class: 'row' }, h('label', {}, 'Tool ', toolPicker)), about,
      h('label', { for: 'arguments', class: 'muted' }, 'Arguments (JSON)'), args,
      h('div', { class: 'row' }, call)) : h('p', { class: 'muted' }, 'This agent has no tools.'),
    result);
  return { node, title: 'Tools' };
}

function output(part) {
  if (part.type === 'text') return h('pre', {}, part.text);
  const image = part.type === 'image' ? part.image : null;
  if (image?.kind === 'base64') return h('img', { src: `data:${image.media_type};base64,${image.data}`, alt: 'the tool’s image' });
  if (part.type === 'json') return json(part.value);
  return json(part);
}

/** Arguments to start from: each required property with a value of its type. */
function skeleton(schema) {
  const out = {};
  for (const key of schema?.required ?? []) {
    const type = schema.properties?.[key]?.type;
    out[key] = type === 'number' || type === 'integer' ? 0 : type === 'boolean' ? false
      : type === 'array' ? [] : type === 'object' ? {} : '';
  }
  return out;
}
