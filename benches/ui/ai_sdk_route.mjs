// The AI SDK's own chat route, the bench's reference (BENCHMARKS.md §16):
// `streamText(...).toUIMessageStreamResponse()` on `node:http`, its model
// the OpenAI-compatible endpoint MODEL_URL (the same local model server
// the served agent calls). As small as a route gets: what the AI SDK's
// docs show, without a framework.
//
// node ai_sdk_route.mjs NODE_MODULES MODEL_URL
// prints "listening PORT" once it accepts requests.
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';

const [modules, modelUrl] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const ai = await load('ai/dist/index.js');
const { createOpenAICompatible } = await load('@ai-sdk/openai-compatible/dist/index.js');

const provider = createOpenAICompatible({ name: 'local', baseURL: modelUrl, apiKey: 'unused' });

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const { messages } = JSON.parse(Buffer.concat(chunks).toString());
  const result = ai.streamText({
    model: provider('bench'),
    messages: await ai.convertToModelMessages(messages),
  });
  const response = result.toUIMessageStreamResponse();
  res.writeHead(response.status, Object.fromEntries(response.headers));
  Readable.fromWeb(response.body).pipe(res);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
