// An AG-UI thread driven by `@ag-ui/client`'s own `HttpAgent` (tests-deps,
// pinned): its `runAgent` checks every event against the protocol's
// schema and order (`verifyEvents`) and builds the thread's messages, as
// CopilotKit's runtime does.
//
// node agui_client.mjs NODE_MODULES URL MODE
//   MODE: text       one run, a user message
//         interrupt  a run that ends with an interrupt, then a run that
//                    resumes it (approved)
//         frontend   a run whose frontend tool the client runs, then a
//                    run with the tool's result
//         again      a new client of the `text` thread, with only its new
//                    message (the thread's history is the server's)
// prints {"runs": [{"events": [...], "outcome": ..., "interrupts": ...}],
// "messages": [...]} on one line; exits 1 with the error on stderr.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, url, mode] = process.argv.slice(2);
const agui = await import(pathToFileURL(path.join(modules, '@ag-ui/client/dist/index.mjs')).href);

const agent = new agui.HttpAgent({
  url,
  threadId: mode === 'again' ? 'thread-text' : `thread-${mode}`,
  initialState: mode === 'again' ? { page: 'forecast' } : undefined,
});
const tools = [{
  name: 'get_location',
  description: "The user's city, from the browser.",
  parameters: { type: 'object', properties: { precise: { type: 'boolean' } } },
}];
const runs = [];

async function run(params) {
  const seen = { events: [], outcome: undefined, interrupts: undefined, pending: [], calls: [] };
  const subscriber = {
    onEvent: ({ event }) => { seen.events.push(event); },
    onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
      seen.calls.push({ id: event.toolCallId, name: toolCallName, args: toolCallArgs });
    },
    onRunFinishedEvent: (p) => {
      seen.outcome = p.outcome;
      seen.interrupts = p.interrupts;
      seen.pending = p.pendingToolCallIds ?? [];
    },
    onRunFailed: ({ error }) => { console.error(`run failed: ${error.message}`); process.exit(1); },
  };
  await agent.runAgent(params, subscriber);
  runs.push(seen);
  return seen;
}

agent.addMessage({ id: agui.randomUUID(), role: 'user', content: 'What is the weather where I am?' });
if (mode === 'text' || mode === 'again') {
  await run({});
} else if (mode === 'interrupt') {
  const first = await run({});
  if (first.outcome !== 'interrupt') throw new Error(`no interrupt: ${JSON.stringify(first)}`);
  const resume = agui.buildResumeArray(agent.pendingInterrupts, Object.fromEntries(
    agent.pendingInterrupts.map((i) => [i.id, { status: 'resolved', payload: { approved: true } }]),
  ));
  await run({ resume });
} else if (mode === 'frontend') {
  const first = await run({ tools });
  for (const call of first.calls.filter((c) => first.pending.includes(c.id))) {
    agent.addMessage({ id: agui.randomUUID(), role: 'tool', toolCallId: call.id, content: 'Lisbon' });
  }
  await run({ tools });
} else {
  throw new Error(`unknown mode ${mode}`);
}
console.log(JSON.stringify({ runs, messages: agent.messages, state: agent.state }));
