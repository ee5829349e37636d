// loopwright dev's pages in a real browser: Debian's chromium, driven by
// playwright-core (tests-deps, pinned) as a user would drive it: the key
// from the address, the agents, a chat in the playground (on a model the
// server offers, picked for it) whose MCP tool
// call waits for an approval given inline, the run's timeline with its
// steps and token counts, the runs, the session, a tool called from the
// tools view (and arguments its schema refuses). Every request the pages
// make is recorded; one that leaves loopback is blocked and reported.
//
// node dev_ui.mjs NODE_MODULES BASE_URL KEY SCREENSHOT_DIR
// prints {"browser", "views": {...}, "off_loopback": [...], "errors": [...]}
// on one line; exits 1 with the error on stderr.
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, base, key, shots] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const { chromium } = require('playwright-core');

const WAIT = 20000;
const loopback = (u) => {
  if (u.startsWith('data:') || u.startsWith('blob:')) return true;
  const host = new URL(u).hostname;
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
};

const browser = await chromium.launch({
  executablePath: '/usr/lib/chromium/chromium',
  headless: true,
  args: ['--disable-gpu', '--disable-quic', '--no-first-run',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost'],
});
const out = { browser: browser.version(), views: {}, off_loopback: [], errors: [], requests: 0 };
try {
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: { width: 1200, height: 860 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    out.requests += 1;
    if (loopback(url)) return route.continue();
    out.off_loopback.push(url);
    return route.abort('blockedbyclient');
  });
  await context.routeWebSocket(/.*/, (ws) => {
    if (loopback(ws.url())) return ws.connectToServer();
    out.off_loopback.push(ws.url());
    return ws.close();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  page.on('pageerror', (e) => out.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') out.errors.push(`console: ${m.text()}`); });
  const shot = (name) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });

  // Agents: the key comes from the address and leaves it.
  await page.goto(`${base}/ui/#token=${key}`);
  await page.getByRole('heading', { name: 'assistant' }).waitFor();
  out.views.agents = { address: page.url() };
  await shot('agents');
  await page.getByRole('link', { name: 'assistant' }).click();
  await page.getByRole('heading', { name: /^Tools \(\d+\)$/ }).waitFor();
  out.views.agent = { tools: await page.locator('tbody tr').count(), echo: await page.getByText('everything__echo').count() };
  await shot('agent');

  // Playground: the tool card waits for approval; approved, the answer comes.
  await page.goto(`${base}/ui/#/playground/assistant`);
  await page.getByLabel('Model').selectOption('openai/gpt-4.1-mini');
  await page.getByLabel('Message').fill('What is the weather in Lisbon?');
  await page.getByLabel('Message').press('Enter');
  const card = page.locator('.tool-card');
  await card.getByRole('button', { name: 'Approve' }).waitFor();
  const asked = { tool: await card.locator('strong').first().textContent(), state: await card.locator('.tool-state').textContent() };
  await shot('playground-approval');
  await card.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('It is sunny in Lisbon.').waitFor();
  await card.locator('.tool-output').waitFor();
  out.views.playground = { asked, output: await card.locator('.tool-output').textContent(), state: await card.locator('.tool-state').textContent() };
  await shot('playground');

  // The run's timeline, from the answer's link.
  await page.getByRole('link', { name: 'Timeline' }).click();
  await page.locator('.badge.completed').first().waitFor();
  await page.locator('.wf-row[data-kind="tool"]').first().waitFor();
  const llm = page.locator('.wf-row[data-kind="llm"]');
  const figures = await llm.locator('.wf-figures').allTextContents();
  await llm.first().click();
  await page.getByRole('heading', { name: 'Accounting' }).waitFor();
  out.views.timeline = {
    run: (await page.locator('h1 code').textContent()),
    llm: figures,
    tools: await page.locator('.wf-row[data-kind="tool"] .wf-label').allTextContents(),
    context: await page.getByText(/^Largest prompt/).textContent(),
  };
  await shot('timeline');

  // A background run paused on its call, approved from its timeline.
  const started = await fetch(`${base}/v1/agents/assistant/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'What is the weather in Lisbon?' }),
  }).then((r) => r.json());
  await page.goto(`${base}/ui/#/runs/${started.id}`);
  await page.locator('.badge.awaiting_approval').first().waitFor();
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.locator('.badge.completed').first().waitFor();
  await page.locator('.wf-row[data-kind="llm"]').nth(1).waitFor();
  out.views.approved = {
    answer: await page.locator('.card.text').textContent(),
    llm: await page.locator('.wf-row[data-kind="llm"]').count(),
  };

  // Runs and sessions.
  await page.goto(`${base}/ui/#/runs`);
  await page.locator('tbody tr').first().waitFor();
  out.views.runs = { rows: await page.locator('tbody tr').count(), first: await page.locator('tbody tr td a').last().textContent() };
  await shot('runs');
  await page.goto(`${base}/ui/#/sessions`);
  await page.locator('tbody tr td a').first().click();
  await page.getByRole('heading', { name: 'Runs that wrote it' }).waitFor();
  out.views.session = { messages: await page.locator('.msg').count(), runs: await page.locator('tbody tr').count() };
  await shot('session');

  // Tools: a call, then arguments the schema refuses.
  await page.goto(`${base}/ui/#/tools/assistant`);
  await page.getByLabel('Tool').selectOption('everything__echo');
  await page.locator('#arguments').fill('{"message": "hello from the browser"}');
  await page.getByRole('button', { name: 'Call' }).click();
  await page.locator('#tool-result').waitFor();
  const result = await page.locator('#tool-result pre').first().textContent();
  await shot('tools');
  await page.locator('#arguments').fill('{"message": 42}');
  const before = out.errors.length;
  await page.getByRole('button', { name: 'Call' }).click();
  const refused = await page.getByRole('alert').textContent();
  // The browser logs the refusal's 400 itself: expected here, and only here.
  const logged = out.errors.splice(before);
  if (logged.length !== 1 || !logged[0].includes('status of 400')) out.errors.push(...logged);
  out.views.tools = { result, refused };

  // Evals: a two-case dataset run twice (the model gets the sum right the
  // second time), then the two runs compared.
  await page.goto(`${base}/ui/#/evals`);
  await page.locator('#dataset').fill([
    'cases:',
    '  - name: greeting',
    '    prompt: Say hello.',
    '    expect: [{contains: hello}]',
    '  - name: sum',
    '    prompt: What is 2 + 2?',
    '    expect: [{contains: "4"}]',
  ].join('\n'));
  await page.getByRole('button', { name: 'Run the eval' }).click();
  await page.locator('#eval-result h2').waitFor();
  const once = await page.locator('#eval-result h2').textContent();
  const why = await page.locator('#eval-result tbody tr', { hasText: 'sum' }).locator('li').first().textContent();
  await page.getByRole('button', { name: 'Run the eval' }).click();
  await page.locator('#eval-result h2', { hasText: '2 of 2' }).waitFor();
  const twice = await page.locator('#eval-result h2').textContent();
  await page.getByRole('button', { name: 'Compare' }).click();
  await page.locator('#compared h3').waitFor();
  const changed = await page.locator('#compared h3').textContent();
  const change = await page.locator('#compared strong').allTextContents();
  out.views.evals = { first: once, why, second: twice, changed, change };
  await shot('evals');

  // A narrow window: the views still fit and the navigation is reachable.
  await page.setViewportSize({ width: 380, height: 800 });
  await page.goto(`${base}/ui/#/runs`);
  await page.locator('tbody tr').first().waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  // What sticks out, for the failure message (a table scrolls in its own box).
  const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
    .filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.table-wrap'))
    .map((e) => `${e.tagName.toLowerCase()}.${e.className}`).slice(0, 5));
  // Keyboard, on a page just loaded: the first Tab reaches the skip link,
  // the next ones the views.
  await page.reload();
  await page.locator('tbody tr').first().waitFor();
  await page.keyboard.press('Tab');
  const first = await page.evaluate(() => document.activeElement?.textContent?.trim());
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const third = await page.evaluate(() => document.activeElement?.textContent?.trim());
  out.views.narrow = { scroll_width: width, wide, first, third, nav: await page.getByRole('link', { name: 'Sessions' }).isVisible() };
  await shot('narrow');
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
