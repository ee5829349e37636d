// A served agent driven by A2A's official JavaScript SDK (@a2a-js/sdk,
// tests-deps, pinned), with the server's key: over v1.0 (the client the
// card makes) a message sent, one streamed, the task read back, the tasks
// listed; over v0.3 (the SDK's own v0.3 JSON-RPC transport, which speaks
// `message/send` and the `kind`-tagged shapes) a message sent, one
// streamed, the task read back, and a task started without waiting,
// followed and cancelled.
//
// node a2a_client.mjs NODE_MODULES AGENT_URL KEY
// prints {"v1": {...}, "v03": {...}} (each task as {id, contextId, state,
// text}, each stream as its events' summaries) on one line; exits 1 with
// the error on stderr.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, url, key] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(path.join(modules, '@a2a-js/sdk/dist', file)).href);
const sdk = await load('index.js');
const client = await load('client/index.js');
const legacy = await load('compat/v0_3/client/index.js');

const options = { serviceParameters: { Authorization: `Bearer ${key}` } };
const ask = (text, configuration) => ({
  message: {
    messageId: randomUUID(),
    role: sdk.Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } }],
  },
  configuration,
});
const text = (parts = []) => parts
  .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
  .join('');
const task = (t) => ({
  id: t.id,
  contextId: t.contextId,
  state: sdk.TaskState[t.status.state],
  text: text(t.artifacts?.[0]?.parts),
});
const event = ({ payload: { $case, value } }) => {
  if ($case === 'task') return { task: task(value) };
  if ($case === 'statusUpdate') return { status: sdk.TaskState[value.status.state] };
  if ($case === 'artifactUpdate') return { artifact: text(value.artifact.parts), lastChunk: value.lastChunk };
  return { message: text(value.parts) };
};
const collect = async (stream) => {
  const out = [];
  for await (const e of stream) out.push(event(e));
  return out;
};

// v1.0: the client the card makes (A2A-Version: 1.0, JSON-RPC first).
const factory = new client.ClientFactory(client.ClientFactoryOptions.createFrom(
  client.ClientFactoryOptions.default,
  { preferredTransports: ['JSONRPC'] },
));
const current = await factory.createFromUrl(url);
const v1 = { protocol: current.protocolVersion };
const sent = await current.sendMessage(ask('What is the weather in Lisbon?'), options);
v1.sent = task(sent);
v1.streamed = await collect(current.sendMessageStream(ask('And in Porto?'), options));
v1.got = task(await current.getTask({ id: sent.id }, options));
// No status: the SDK sends `UNRECOGNIZED` for it, which means any.
const listed = await current.listTasks({ pageSize: 10 }, options);
v1.listed = listed.tasks.map(task);

// v0.3: the SDK's v0.3 JSON-RPC transport on the same endpoint.
const old = new legacy.LegacyJsonRpcTransport({ endpoint: url });
const v03 = { protocol: old.protocolVersion };
const oldSent = await old.sendMessage(ask('What is the weather in Faro?'), options);
v03.sent = task(oldSent);
v03.streamed = await collect(old.sendMessageStream(ask('And in Braga?'), options));
v03.got = task(await old.getTask({ id: oldSent.id }, options));
const slow = await old.sendMessage(ask('Write a long report.', { returnImmediately: true }), options);
v03.slow = task(slow);
const followed = collect(old.resubscribeTask({ id: slow.id }, options));
await new Promise((resolve) => { setTimeout(resolve, 300); });
v03.cancelled = task(await old.cancelTask({ id: slow.id }, options));
v03.followed = await followed;
try {
  await old.getTask({ id: 'run_nope' }, options);
  v03.missing = 'found';
} catch (e) {
  v03.missing = e.constructor.name;
}

console.log(JSON.stringify({ v1, v03 }));
