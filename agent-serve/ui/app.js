// The pages' router: `#/view/arg` picks a view; a view renders into <main>
// and returns what stops it (its streams) when another view opens.
import { takeTokenFromAddress, setKey, whenUnauthorized } from './api.js';
import { errorBox, fill } from './dom.js';
import { agentsView, agentView } from './agents.js';
import { playgroundView } from './playground.js';
import { runsView } from './runs.js';
import { timelineView } from './timeline.js';
import { sessionsView, sessionView } from './sessions.js';
import { toolsView } from './tools.js';
import { evalsView } from './evals.js';

const routes = {
  agents: (arg) => (arg ? agentView(arg) : agentsView()),
  playground: (arg) => playgroundView(arg),
  runs: (arg, query) => (arg ? timelineView(arg) : runsView(query)),
  sessions: (arg) => (arg ? sessionView(arg) : sessionsView()),
  tools: (arg) => toolsView(arg),
  evals: () => evalsView(),
};

let stop = null;

async function render() {
  const [path, search = ''] = location.hash.replace(/^#/, '').split('?');
  const [, view = 'agents', ...rest] = path.split('/');
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : null;
  const main = document.getElementById('main');
  if (stop) { stop(); stop = null; }
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const route = routes[view];
  if (!route) { fill(main, errorBox(new Error(`no view named ${view}`))); return; }
  try {
    const shown = await route(arg, new URLSearchParams(search));
    fill(main, shown.node);
    stop = shown.stop ?? null;
    document.title = `${shown.title ?? view} · loopwright dev`;
  } catch (error) {
    fill(main, errorBox(error));
  }
}

function keyDialog() {
  const dialog = document.getElementById('key-dialog');
  const input = document.getElementById('key-input');
  if (!dialog.open) { input.value = ''; dialog.showModal(); }
}

document.getElementById('key-dialog').addEventListener('close', (e) => {
  if (e.target.returnValue === 'save') { setKey(document.getElementById('key-input').value.trim()); render(); }
});
document.getElementById('key-button').addEventListener('click', keyDialog);
// The skip link moves the focus; it is not a view to route to.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  document.getElementById('main').focus();
});
whenUnauthorized(keyDialog);
takeTokenFromAddress();
if (!location.hash || location.hash === '#') history.replaceState(null, '', '#/agents');
addEventListener('hashchange', render);
render();
