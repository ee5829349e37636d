// A whole useChat round trip driven by the `ai` package's own chat class
// (`AbstractChat`, what `useChat` wraps, with a Node state in place of
// React's) over `DefaultChatTransport`: the user's message, then, as a
// page would, an approval answered (`addToolApprovalResponse`) or a
// client tool run (`onToolCall` -> `addToolOutput`), and the chat's own
// automatic follow-up request (`sendAutomaticallyWhen`).
//
// node ai_chat_flow.mjs AI_PACKAGE_DIR API_URL MODE TEXT
//   MODE: approve | deny | client
// prints {"messages": [...], "requests": [<each posted body>], "status"}
// on one line; exits 1 with the error on stderr when the chat fails.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [aiDir, api, mode, text] = process.argv.slice(2);
const ai = await import(pathToFileURL(path.join(aiDir, 'dist/index.js')).href);

class NodeChatState {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage = (m) => { this.messages = [...this.messages, m]; };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = this.messages.with(i, m); };
  snapshot = (x) => structuredClone(x);
}

class NodeChat extends ai.AbstractChat {
  constructor(init) {
    super({ ...init, state: new NodeChatState() });
  }
}

// Every response the chat finished, and every body it posted.
const requests = [];
let finished = 0;
let wake = () => {};
const fetchCounting = async (url, init) => {
  requests.push(JSON.parse(init.body));
  return fetch(url, init);
};
const clientTools = {
  get_location: {
    description: 'The user\'s city, from the browser.',
    inputSchema: { type: 'object', properties: { precise: { type: 'boolean' } } },
  },
};
const chat = new NodeChat({
  id: 'chat-flow',
  transport: new ai.DefaultChatTransport({
    api,
    fetch: fetchCounting,
    body: mode === 'client' ? { tools: clientTools } : {},
  }),
  sendAutomaticallyWhen: mode === 'client'
    ? ai.lastAssistantMessageIsCompleteWithToolCalls
    : ai.lastAssistantMessageIsCompleteWithApprovalResponses,
  onToolCall: async ({ toolCall }) => {
    if (toolCall.toolName === 'get_location') {
      // Not awaited, as the AI SDK's docs say.
      chat.addToolOutput({
        tool: 'get_location',
        toolCallId: toolCall.toolCallId,
        output: { city: 'Lisbon' },
      });
    }
  },
  onFinish: () => { finished += 1; wake(); },
  onError: (e) => { console.error(e.message); process.exit(1); },
});

const responses = (n) => new Promise((resolve) => {
  const check = () => { if (finished >= n) resolve(); };
  wake = check;
  check();
});

await chat.sendMessage({ text });
await responses(1);
if (mode === 'approve' || mode === 'deny') {
  const last = chat.messages.at(-1);
  const asked = last.parts.find((p) => p.state === 'approval-requested');
  if (!asked) throw new Error(`no approval was asked: ${JSON.stringify(last)}`);
  await chat.addToolApprovalResponse({
    id: asked.approval.id,
    approved: mode === 'approve',
    reason: mode === 'deny' ? 'not on a Friday' : undefined,
  });
}
await responses(2);
console.log(JSON.stringify({ messages: chat.messages, requests, status: chat.status }));
