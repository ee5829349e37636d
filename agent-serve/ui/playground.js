// Playground: chat with an agent over the chat route: streaming text,
// reasoning and tool cards, approvals answered inline, files attached.
import { get, post } from './api.js';
import { send, wire } from './chat.js';
import { errorBox, fill, h, json, link } from './dom.js';

export async function playgroundView(name) {
  const { agents, models } = await get('/v1/agents');
  if (!agents.length) return { node: h('p', {}, 'No agent is served.'), title: 'Playground' };
  const agent = agents.some((a) => a.name === name) ? name : agents[0].name;
  const state = { agent, chatId: newChatId(), messages: [], busy: null, files: [] };
  const list = h('div', { class: 'chat' });
  const problem = h('div');
  // What screen readers hear: the turn's state, not every delta.
  const status = h('p', { class: 'muted', role: 'status', 'aria-live': 'polite' });
  const input = h('textarea', { id: 'prompt', 'aria-label': 'Message', placeholder: 'Ask something (Enter sends, Shift+Enter for a new line)' });
  const attach = h('input', { type: 'file', multiple: true, 'aria-label': 'Attach files' });
  const attached = h('span', { class: 'muted' });
  const sendButton = h('button', { type: 'submit' }, 'Send');
  const stopButton = h('button', { type: 'button', class: 'quiet', disabled: true }, 'Stop');
  const picker = h('select', { 'aria-label': 'Agent' }, agents.map((a) => h('option', { value: a.name, selected: a.name === agent }, a.name)));
  // The model of the next turn: the agent's own, or one the server offers.
  const modelPicker = h('select', { 'aria-label': 'Model', id: 'model' },
    h('option', { value: '' }, 'the agent’s model'),
    (models ?? []).map((m) => h('option', { value: m }, m)));

  const redraw = () => fill(list, state.messages.map((m) => message(m, state, answer)));
  const busy = (on) => {
    sendButton.disabled = on;
    stopButton.disabled = !on;
    fill(status, on ? 'Answering…' : waiting(state) ? 'A call waits for your approval.' : '');
  };

  async function run() {
    const controller = new AbortController();
    state.busy = controller;
    busy(true);
    fill(problem);
    let assistant = state.messages.at(-1);
    if (assistant?.role !== 'assistant') {
      assistant = { id: '', role: 'assistant', parts: [] };
      state.messages.push(assistant);
    }
    const messages = state.messages.filter((m) => m !== assistant || m.id).map(wire);
    try {
      await send({
        agent: state.agent, chatId: state.chatId, messages, assistant, changed: redraw, signal: controller.signal,
        model: modelPicker.value || undefined,
      });
    } catch (error) {
      if (error.name !== 'AbortError') fill(problem, errorBox(error));
      if (!assistant.parts.length) state.messages.pop();
      else settle(assistant);
    } finally {
      state.busy = null;
      busy(false);
      redraw();
    }
  }

  // A decision on a call: once every call waiting in the turn has one,
  // the turn goes on.
  function answer(part, approved) {
    Object.assign(part, { state: 'approval-responded', approval: { ...part.approval, approved, reason: approved ? undefined : 'denied in the playground' } });
    redraw();
    const last = state.messages.at(-1);
    if (!last.parts.some((p) => p.state === 'approval-requested')) run();
  }

  async function submit(e) {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || state.busy) return;
    if (waiting(state)) {
      fill(problem, errorBox(new Error('Approve or deny the waiting call first: the turn goes on once it is decided.')));
      return;
    }
    const parts = [...state.files, { type: 'text', text }];
    state.messages.push({ id: 'user-' + crypto.randomUUID(), role: 'user', parts });
    input.value = '';
    state.files = [];
    attach.value = '';
    fill(attached);
    redraw();
    await run();
  }

  attach.addEventListener('change', async () => {
    state.files = await Promise.all([...attach.files].map(readFile));
    fill(attached, state.files.map((f) => f.filename).join(', '));
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); e.target.form.requestSubmit(); }
  });
  // Stopping cancels the run on the server too (it goes on when only its
  // client leaves).
  const stop = () => {
    state.busy?.abort();
    const id = state.messages.at(-1)?.role === 'assistant' ? state.messages.at(-1).id : '';
    if (id) post(`/v1/runs/${encodeURIComponent(id)}/cancel`).catch(() => {});
  };
  stopButton.addEventListener('click', stop);
  picker.addEventListener('change', () => { location.hash = '#/playground/' + encodeURIComponent(picker.value); });
  const reset = h('button', { type: 'button', class: 'quiet', onclick: () => {
    if (state.busy) stop();
    state.messages = []; state.chatId = newChatId(); redraw(); busy(false);
  } }, 'New chat');

  const node = h('section', {},
    h('div', { class: 'row spread' }, h('h1', {}, 'Playground'), h('div', { class: 'row' }, picker, modelPicker, reset)),
    list, status, problem,
    h('form', { class: 'composer', onsubmit: submit },
      input,
      h('div', { class: 'row spread' }, h('div', { class: 'row' }, attach, attached), h('div', { class: 'row' }, stopButton, sendButton))));
  return { node, title: 'Playground', stop: () => state.busy?.abort() };
}

/** Whether the last turn waits for an approval. */
function waiting(state) {
  return state.messages.at(-1)?.parts?.some((p) => p.state === 'approval-requested') ?? false;
}

/**
 * A turn cut short: its calls without a result get one saying so, so the
 * chat's next request reads (every call in the history has its result).
 */
function settle(assistant) {
  for (const part of assistant.parts) {
    if (part.type?.startsWith('tool-') && (part.state === 'input-streaming' || part.state === 'input-available')) {
      Object.assign(part, { state: 'output-error', errorText: 'stopped before it ran', input: part.input ?? {} });
    }
  }
}

function newChatId() {
  return 'chat-' + crypto.randomUUID();
}

function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ type: 'file', mediaType: file.type || 'application/octet-stream', filename: file.name, url: reader.result });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function message(m, state, answer) {
  const who = m.role === 'user' ? 'You' : state.agent;
  return h('article', { class: 'msg ' + m.role },
    h('div', { class: 'row spread' }, h('span', { class: 'who' }, who),
      m.role === 'assistant' && m.id ? link('#/runs/' + encodeURIComponent(m.id), 'Timeline') : null),
    m.parts.map((p) => part(p, answer)),
    m.error ? errorBox(new Error(m.error)) : null);
}

function part(p, answer) {
  if (p.type === 'text') return h('div', { class: 'text' }, p.text);
  if (p.type === 'reasoning') return p.text ? h('div', { class: 'reasoning' }, p.text) : null;
  if (p.type === 'file' && p.mediaType?.startsWith('image/')) return h('img', { src: p.url, alt: p.filename ?? 'an image' });
  if (p.type === 'file') return h('div', { class: 'muted' }, 'File: ', p.filename ?? p.mediaType);
  if (p.type === 'source-url') return h('div', {}, 'Source: ', h('code', {}, p.url));
  if (p.type?.startsWith('tool-')) return toolCard(p, answer);
  return null;
}

function toolCard(p, answer) {
  const waiting = p.state === 'approval-requested';
  return h('div', { class: 'tool-card' + (waiting ? ' awaiting' : ''), 'data-tool-call': p.toolCallId },
    h('div', { class: 'row spread' }, h('strong', {}, p.type.slice(5)), h('span', { class: 'muted tool-state' }, p.state.replaceAll('-', ' '))),
    p.state === 'input-streaming' ? h('pre', {}, p.inputText) : json(p.input),
    waiting ? h('div', { class: 'row' },
      h('span', {}, 'This call waits for your approval.'),
      h('button', { type: 'button', onclick: () => answer(p, true) }, 'Approve'),
      h('button', { type: 'button', class: 'danger', onclick: () => answer(p, false) }, 'Deny')) : null,
    p.state === 'output-available' ? h('div', {}, h('div', { class: 'muted' }, 'Result'), h('pre', { class: 'tool-output' }, typeof p.output === 'string' ? p.output : JSON.stringify(p.output, null, 2))) : null,
    p.state === 'output-error' ? h('div', { class: 'bad' }, p.errorText) : null,
    p.state === 'output-denied' ? h('div', { class: 'warn' }, 'Denied.') : null);
}
