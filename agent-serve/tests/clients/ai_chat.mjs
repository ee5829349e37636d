// A chat route driven by the `ai` package's own client code (tests-deps,
// pinned): `DefaultChatTransport` posts the request and parses the UI
// message stream, `readUIMessageStream` builds the assistant message from
// its chunks, as `useChat` does.
//
// node ai_chat.mjs AI_PACKAGE_DIR API_URL MESSAGES_JSON [CHAT_ID]
// prints {"message": <the assistant UI message>, "chunks": [<every chunk>]}
// on one line; exits 1 with the error on stderr when the client fails.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [aiDir, api, messagesJson, chatId = 'chat-1'] = process.argv.slice(2);
const ai = await import(pathToFileURL(path.join(aiDir, 'dist/index.js')).href);

const transport = new ai.DefaultChatTransport({ api });
const stream = await transport.sendMessages({
  chatId,
  messages: JSON.parse(messagesJson),
  trigger: 'submit-message',
  messageId: undefined,
  abortSignal: undefined,
});
const [forMessage, forChunks] = stream.tee();
const chunks = [];
const reading = (async () => {
  const reader = forChunks.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    chunks.push(value);
  }
})();
let message;
for await (const snapshot of ai.readUIMessageStream({
  stream: forMessage,
  terminateOnError: true,
})) {
  message = snapshot;
}
await reading;
console.log(JSON.stringify({ message, chunks }));
