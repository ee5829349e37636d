// A run: its status, followed live (the event stream, reconnected from the
// last event seen), its pending approvals answered, cancelled; its steps as
// a waterfall of model calls, tool calls and guardrail checks, each opened
// for what went in and came out; the context used against the window.
import { ApiError, get, post, stream } from './api.js';
import { figure } from './agents.js';
import { tokens } from './runs.js';
import { badge, count, errorBox, fill, h, json, link, ms, when } from './dom.js';

const RECONNECT_MS = 1000;

export async function timelineView(id) {
  const path = '/v1/runs/' + encodeURIComponent(id);
  const state = { run: await get(path), events: [], last: null, window: null, open: new Set() };
  const agent = await get('/v1/agents/' + encodeURIComponent(state.run.agent)).catch(() => null);
  state.window = agent?.limits?.context_window ?? null;
  const head = h('div');
  const body = h('div', {}, h('p', { class: 'muted' }, 'Reading the run’s events…'));
  const controller = new AbortController();

  const live = h('p', { class: 'warn', role: 'status' });
  const redraw = () => {
    // The focused waterfall row keeps the focus across a redraw.
    const focused = document.activeElement?.dataset?.row;
    fill(head, header(state, path, act));
    fill(body, timeline(state, redraw));
    if (focused !== undefined) body.querySelector(`[data-row="${focused}"]`)?.focus();
  };
  async function act(what) {
    try {
      await what();
      state.run = await get(path);
      redraw();
      follow();
    } catch (error) {
      head.append(errorBox(error));
    }
  }
  // Follow the log from the last event seen, reconnecting after a cut,
  // until the run ends or pauses (a paused run's log waits for its
  // decisions: the stream is left, and taken up again once decided).
  let following = false;
  async function follow() {
    if (following) return;
    following = true;
    while (!controller.signal.aborted) {
      const after = state.last === null ? '' : '?after=' + state.last;
      const connection = new AbortController();
      const stopConnection = () => connection.abort();
      controller.signal.addEventListener('abort', stopConnection);
      let paused = false;
      try {
        await stream(`${path}/events${after}`, {
          signal: connection.signal,
          onEvent: ({ id: seq, data }) => {
            const event = JSON.parse(data);
            if (event.type === 'error' && seq === null) throw new Error(event.error?.message ?? 'the log cannot be read');
            if (seq !== null) state.last = Number(seq);
            state.events.push(event);
            fill(live);
            redraw();
            if (event.type === 'awaiting_approval') { paused = true; connection.abort(); }
          },
        });
      } catch (error) {
        if (controller.signal.aborted) break;
        if (error instanceof ApiError && error.status < 500) { fill(live, error.message); break; }
        if (!paused) fill(live, `Reconnecting: ${error.message}`);
      } finally {
        controller.signal.removeEventListener('abort', stopConnection);
      }
      state.run = await (paused ? settled(path, controller.signal) : get(path, { signal: controller.signal })).catch(() => state.run);
      redraw();
      if (state.run.status !== 'running') break;
      await new Promise((r) => setTimeout(r, RECONNECT_MS));
    }
    following = false;
  }
  redraw();
  follow();
  return { node: h('section', {}, head, live, body), title: 'Run ' + id, stop: () => controller.abort() };
}

/** A paused run's record, once it says so (it is written just after the log). */
async function settled(path, signal) {
  for (let tries = 1; ; tries += 1) {
    const run = await get(path, { signal });
    if (run.status !== 'running' || tries === 20) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function header(state, path, act) {
  const run = state.run;
  const pending = run.pending_approvals ?? [];
  const decide = (call, approve) => act(() => post(path + '/approvals', {
    decisions: [{ call_id: call.call_id, approve, reason: approve ? undefined : 'denied in the run view' }],
  }));
  return [
    h('div', { class: 'row spread' },
      h('h1', {}, 'Run ', h('code', {}, run.id)),
      run.status === 'running' || run.status === 'awaiting_approval'
        ? h('button', { type: 'button', class: 'danger', onclick: () => act(() => post(path + '/cancel')) }, 'Cancel') : null),
    h('div', { class: 'figures' },
      figure('Status', badge(run.status)),
      figure('Agent', link('#/agents/' + encodeURIComponent(run.agent), run.agent)),
      figure('Session', run.session ? link('#/sessions/' + encodeURIComponent(run.session), run.session) : '–'),
      figure('Started', when(run.created_at)),
      figure('Duration', ms(run.updated_at - run.created_at)),
      figure('Tokens', tokens(run.result?.usage)),
      figure('Exit', run.result?.exit ?? '–')),
    run.result?.continued_by ? h('p', {}, 'Continued by ', link('#/runs/' + encodeURIComponent(run.result.continued_by), run.result.continued_by)) : null,
    run.error ? errorBox(new Error(run.error.message ?? JSON.stringify(run.error))) : null,
    pending.length ? h('div', { class: 'card' }, h('h2', {}, 'Waiting for a decision'),
      pending.map((call) => h('div', { class: 'tool-card awaiting' },
        h('strong', {}, call.tool), ' ', h('span', { class: 'muted' }, call.kind.replaceAll('_', ' ')),
        json(call.arguments),
        call.kind !== 'client_tool' ? h('div', { class: 'row' },
          h('button', { type: 'button', onclick: () => decide(call, true) }, 'Approve'),
          h('button', { type: 'button', class: 'danger', onclick: () => decide(call, false) }, 'Deny')) : null))) : null,
    run.result?.text ? h('div', {}, h('h2', {}, 'Answer'), h('div', { class: 'card text' }, run.result.text)) : null,
  ];
}

/** The rows of the waterfall: every accounted model call, tool call and guard check, with its place in time. */
function rows(events) {
  const out = [];
  let step = 0;
  // Each step's events, whole: a model call's entry comes before the tool
  // calls it made.
  const steps = new Map([[0, []]]);
  const calls = new Map();
  for (const event of events) {
    if (event.type === 'step_started') { step = event.step; steps.set(step, []); }
    steps.get(step).push(event);
    if (event.type === 'tool_call') calls.set(event.call_id, { call: event });
    if (event.type === 'tool_result') calls.set(event.call_id, { ...calls.get(event.call_id), result: event });
    if (event.type === 'accounting') {
      const entry = event.entry;
      const kind = entry?.type;
      if (!kind) continue;
      const end = Date.parse(entry.timestamp);
      out.push({ kind, entry, step, end, start: end - (entry.latency_ms ?? 0), stepEvents: kind === 'llm' ? steps.get(step) : null });
    }
    if (['compacted', 'model_fallback', 'warning', 'resumed', 'approval_requested', 'approval_resolved'].includes(event.type)) {
      out.push({ kind: 'mark', event, step });
    }
  }
  // An entry names its tool, not its call: the call of that tool that took
  // as long, else the first of that tool not matched yet.
  const free = [...calls.values()].filter((c) => c.result);
  const take = (test) => {
    const i = free.findIndex(test);
    return i < 0 ? undefined : free.splice(i, 1)[0];
  };
  for (const row of out.filter((r) => r.kind === 'tool')) {
    const same = (c) => c.result.tool === row.entry.tool;
    row.io = take((c) => same(c) && c.result.duration_ms === row.entry.latency_ms) ?? take(same);
  }
  return out;
}

function timeline(state, redraw) {
  const all = rows(state.events);
  const timed = all.filter((r) => r.kind !== 'mark');
  if (!state.events.length) return h('p', { class: 'muted' }, 'No events yet.');
  const t0 = Math.min(...timed.map((r) => r.start));
  const span = Math.max(1, Math.max(...timed.map((r) => r.end)) - t0);
  const steps = state.events.filter((e) => e.type === 'step_finished');
  const largest = Math.max(0, ...steps.map((s) => s.usage?.input_tokens ?? 0));
  return h('div', {},
    h('h2', {}, `Timeline (${steps.length} step${steps.length === 1 ? '' : 's'})`),
    h('div', { class: 'waterfall', role: 'list' }, all.map((row, i) => (row.kind === 'mark'
      ? h('div', { class: 'wf-mark', role: 'listitem' }, mark(row.event))
      : bar(row, i, t0, span, state, redraw)))),
    h('h2', {}, 'Context'),
    state.window
      ? h('div', {}, h('p', {}, `Largest prompt: ${count(largest)} of ${count(state.window)} tokens (${Math.round(100 * largest / state.window)}%)`),
        h('div', { class: 'meter', role: 'meter', 'aria-valuenow': largest, 'aria-valuemax': state.window, 'aria-label': 'context used' },
          h('div', { style: { width: `${Math.min(100, (100 * largest) / state.window)}%` } })))
      : h('p', { class: 'muted' }, `Largest prompt: ${count(largest)} tokens (the agent sets no context window).`),
    h('details', {}, h('summary', {}, `Every event (${state.events.length})`), json(state.events)));
}

function bar(row, i, t0, span, state, redraw) {
  const e = row.entry;
  const label = row.kind === 'llm' ? `step ${row.step} · ${e.provider}/${e.model}`
    : row.kind === 'tool' ? `${e.tool}` : `guard ${e.guard} (${e.point})`;
  const figures = row.kind === 'llm' ? `${ms(e.latency_ms)} · ${count(e.tokens?.input)} in · ${count(e.tokens?.output)} out`
    : ms(e.latency_ms);
  const open = state.open.has(i);
  const button = h('button', {
    type: 'button', class: 'wf-row', 'aria-expanded': String(open), 'data-kind': row.kind, 'data-row': i,
    onclick: () => { if (open) state.open.delete(i); else state.open.add(i); redraw(); },
  },
  h('span', { class: 'wf-label' }, label, e.status === 'error' ? h('span', { class: 'bad' }, ' ✗') : null),
  h('span', { class: 'wf-track' }, h('span', { class: 'wf-bar ' + row.kind, style: { left: `${(100 * (row.start - t0)) / span}%`, width: `${(100 * (row.end - row.start)) / span}%` } })),
  h('span', { class: 'wf-figures' }, figures));
  return h('div', { role: 'listitem' }, button, open ? detail(row) : null);
}

function detail(row) {
  if (row.kind === 'llm') {
    const said = row.stepEvents.filter((e) => e.type === 'text_delta').map((e) => e.text).join('');
    const thought = row.stepEvents.filter((e) => e.type === 'reasoning_delta').map((e) => e.text).join('');
    const calls = row.stepEvents.filter((e) => e.type === 'tool_call').map(({ call_id, tool, input }) => ({ call_id, tool, input }));
    return h('div', { class: 'card' },
      h('h3', {}, 'Response'),
      thought ? h('div', { class: 'reasoning' }, thought) : null,
      said ? h('pre', {}, said) : null,
      calls.length ? json(calls) : null,
      h('h3', {}, 'Accounting'), json(row.entry));
  }
  if (row.kind === 'tool') {
    return h('div', { class: 'card' },
      h('h3', {}, 'Arguments'), json(row.io?.call?.input ?? null),
      h('h3', {}, 'Result'), json(row.io?.result?.output ?? null),
      h('h3', {}, 'Accounting'), json(row.entry));
  }
  return h('div', { class: 'card' }, json(row.entry));
}

function mark(event) {
  switch (event.type) {
    case 'compacted': return `Compacted (${event.strategy}): ${count(event.tokens_before)} → ${count(event.tokens_after)} tokens`;
    case 'model_fallback': return `Fallback: ${event.from} → ${event.to} (${event.error})`;
    case 'resumed': return `Resumed (attempt ${event.attempt})`;
    case 'approval_requested': return `Approval asked for ${event.tool}`;
    case 'approval_resolved': return `Approval ${event.approved ? 'given' : 'refused'}${event.reason ? ': ' + event.reason : ''}`;
    default: return `Warning: ${event.message}`;
  }
}
