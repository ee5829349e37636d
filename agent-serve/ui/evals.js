// Evals: run a dataset (the YAML or JSON of `loopwright eval`) against an
// agent, see each case pass or fail with the reasons (a judge's included),
// and compare two eval runs case by case.
import { get, post } from './api.js';
import { badge, errorBox, fill, h, table, when } from './dom.js';

const EXAMPLE = `cases:
  - name: greeting
    prompt: Say hello.
    expect:
      - contains: hello
`;

export async function evalsView() {
  const { agents } = await get('/v1/agents');
  const picker = h('select', { id: 'eval-agent', 'aria-label': 'Agent' }, agents.map((a) => h('option', { value: a.name }, a.name)));
  const name = h('input', { id: 'eval-name', 'aria-label': 'Dataset name', value: 'dataset.yaml' });
  const dataset = h('textarea', { id: 'dataset', 'aria-label': 'Dataset (YAML or JSON)', spellcheck: 'false' });
  dataset.value = EXAMPLE;
  const file = h('input', { type: 'file', accept: '.yaml,.yml,.json', 'aria-label': 'Load a dataset file' });
  const run = h('button', { type: 'submit' }, 'Run the eval');
  const result = h('div', { id: 'eval-result', 'aria-live': 'polite' });
  const history = h('div');
  const compared = h('div', { id: 'compared' });

  file.addEventListener('change', async () => {
    const chosen = file.files[0];
    if (!chosen) return;
    dataset.value = await chosen.text();
    name.value = chosen.name;
  });

  async function submit(e) {
    e.preventDefault();
    run.disabled = true;
    fill(result, h('p', { class: 'muted' }, 'Running the cases…'));
    try {
      const kept = await post(`/v1/agents/${encodeURIComponent(picker.value)}/evals`, { dataset: dataset.value, name: name.value });
      fill(result, report(kept));
      await listed();
    } catch (error) {
      fill(result, errorBox(error));
    } finally {
      run.disabled = false;
    }
  }

  async function listed() {
    const { evals } = await get('/v1/evals');
    if (!evals.length) { fill(history, h('p', { class: 'muted' }, 'No eval has run here yet.')); return; }
    const choose = (id, label, pick) => h('select', { id, 'aria-label': label },
      evals.map((ev, i) => h('option', { value: ev.id, selected: i === pick }, `${ev.name} · ${ev.agent} · ${when(ev.created_at)} · ${ev.passed}/${ev.runs}`)));
    const before = choose('compare-a', 'Earlier eval', Math.min(1, evals.length - 1));
    const after = choose('compare-b', 'Later eval', 0);
    const compare = async () => {
      try {
        const [a, b] = await Promise.all([get('/v1/evals/' + before.value), get('/v1/evals/' + after.value)]);
        fill(compared, comparison(a, b));
      } catch (error) {
        fill(compared, errorBox(error));
      }
    };
    fill(history,
      table([
        ['Dataset', (ev) => ev.name], ['Agent', (ev) => ev.agent], ['When', (ev) => when(ev.created_at)],
        ['Passed', (ev) => `${ev.passed} of ${ev.runs}`],
      ], evals),
      h('h3', {}, 'Compare two'),
      h('div', { class: 'row' }, before, h('span', {}, 'with'), after,
        h('button', { type: 'button', class: 'quiet', onclick: compare }, 'Compare')));
  }

  await listed();
  const node = h('section', {},
    h('h1', {}, 'Evals'),
    h('form', { onsubmit: submit },
      h('div', { class: 'row' }, h('label', {}, 'Agent ', picker), h('label', {}, 'Name ', name), file),
      dataset,
      h('div', { class: 'row' }, run)),
    result,
    h('h2', {}, 'Eval runs'), history, compared);
  return { node, title: 'Evals' };
}

/** One case's verdict: passed, and why not. */
function verdict(c) {
  const failures = c.runs.flatMap((r) => [r.error, ...r.expectations.filter((x) => !x.passed).map((x) => `${x.expectation}: ${x.reason ?? 'failed'}`)]).filter(Boolean);
  return { passed: c.pass_rate === 1, failures };
}

function report(kept) {
  const r = kept.report;
  return h('div', { class: 'card' },
    h('h2', {}, `${kept.name}: ${r.passed} of ${r.runs} passed`),
    table([
      ['Case', (c) => c.name],
      ['Result', (c) => badge(verdict(c).passed ? 'passed' : 'failed')],
      ['Why', (c) => h('ul', {}, verdict(c).failures.map((f) => h('li', {}, f)))],
      ['Answer', (c) => h('div', { class: 'text' }, c.runs[0]?.text ?? ''), true],
    ], r.cases));
}

function comparison(a, b) {
  const names = [...new Set([...a.report.cases, ...b.report.cases].map((c) => c.name))];
  const rows = names.map((name) => {
    const before = a.report.cases.find((c) => c.name === name);
    const after = b.report.cases.find((c) => c.name === name);
    const was = before ? (verdict(before).passed ? 'passed' : 'failed') : 'absent';
    const is = after ? (verdict(after).passed ? 'passed' : 'failed') : 'absent';
    return { name, was, is, changed: was !== is, why: after ? verdict(after).failures : [] };
  });
  const changed = rows.filter((r) => r.changed).length;
  return h('div', { class: 'card' },
    h('h3', {}, `${changed} case${changed === 1 ? '' : 's'} changed`),
    table([
      ['Case', (r) => r.name],
      [a.name + ' (earlier)', (r) => badge(r.was)],
      [b.name + ' (later)', (r) => badge(r.is)],
      ['Changed', (r) => (r.changed ? h('strong', { class: 'warn' }, `${r.was} → ${r.is}`) : h('span', { class: 'muted' }, 'no'))],
    ], rows));
}
