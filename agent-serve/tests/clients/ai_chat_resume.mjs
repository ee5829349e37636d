// A chat's stream resumed by the `ai` package's own transport, as
// `useChat({resume: true})` does on load: `reconnectToStream` asks
// `GET {api}/{chatId}/stream`, and `readUIMessageStream` builds the
// assistant message from what comes.
//
// node ai_chat_resume.mjs AI_PACKAGE_DIR API_URL CHAT_ID
// prints "connected" once the stream is open (or {"none": true} when
// there is nothing to resume), then {"message": ...} on one line.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [aiDir, api, chatId] = process.argv.slice(2);
const ai = await import(pathToFileURL(path.join(aiDir, 'dist/index.js')).href);

const transport = new ai.DefaultChatTransport({ api });
const stream = await transport.reconnectToStream({ chatId });
if (!stream) {
  console.log(JSON.stringify({ none: true }));
  process.exit(0);
}
console.log('connected');
let message;
for await (const snapshot of ai.readUIMessageStream({ stream, terminateOnError: true })) {
  message = snapshot;
}
console.log(JSON.stringify({ message }));
