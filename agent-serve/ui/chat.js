// A client of the AI SDK's UI message stream (the chat route), written
// here: it posts the chat's messages and builds the assistant message from
// the chunks as they come, as the `ai` package's chat does.

import { stream } from './api.js';

/**
 * Send the chat: `messages` (UI messages) to `/api/agents/{agent}/chat`
 * (on `model`, one the server offers, when given);
 * the answer's chunks update `assistant` (a UI message; a continued turn
 * goes on in the same one), `changed()` after each.
 */
export async function send({ agent, chatId, messages, assistant, changed, signal, model }) {
  const body = { id: chatId, messages, trigger: 'submit-message' };
  if (model) body.model = model;
  let done = false;
  await stream(`/api/agents/${encodeURIComponent(agent)}/chat`, {
    body,
    signal,
    onEvent: ({ data }) => {
      if (data === '[DONE]') { done = true; return; }
      apply(assistant, JSON.parse(data));
      changed();
    },
  });
  // The route always ends with [DONE]: a stream without it was cut.
  if (!done) throw new Error('the answer stopped before its end (the connection was cut)');
}

function toolPart(message, id) {
  return message.parts.find((p) => p.toolCallId === id);
}

function open(message, type, id) {
  return message.parts.findLast((p) => p.type === type && p._id === id);
}

/** Apply one chunk to the assistant message. */
export function apply(message, chunk) {
  const parts = message.parts;
  switch (chunk.type) {
    case 'start': if (chunk.messageId) message.id = chunk.messageId; break;
    case 'start-step': parts.push({ type: 'step-start' }); break;
    case 'text-start': case 'reasoning-start':
      parts.push({ type: chunk.type.split('-')[0], text: '', state: 'streaming', _id: chunk.id }); break;
    case 'text-delta': case 'reasoning-delta': {
      const part = open(message, chunk.type.split('-')[0], chunk.id);
      if (part) part.text += chunk.delta;
      break;
    }
    case 'text-end': case 'reasoning-end': {
      const part = open(message, chunk.type.split('-')[0], chunk.id);
      if (part) part.state = 'done';
      break;
    }
    case 'tool-input-start':
      parts.push({ type: 'tool-' + chunk.toolName, toolCallId: chunk.toolCallId, state: 'input-streaming', inputText: '' }); break;
    case 'tool-input-delta': {
      const part = toolPart(message, chunk.toolCallId);
      if (part) part.inputText += chunk.inputTextDelta;
      break;
    }
    case 'tool-input-available': {
      let part = toolPart(message, chunk.toolCallId);
      if (!part) { part = { type: 'tool-' + chunk.toolName, toolCallId: chunk.toolCallId }; parts.push(part); }
      Object.assign(part, { state: 'input-available', input: chunk.input });
      break;
    }
    case 'tool-approval-request': {
      const part = toolPart(message, chunk.toolCallId);
      if (part) Object.assign(part, { state: 'approval-requested', approval: { id: chunk.approvalId } });
      break;
    }
    case 'tool-output-available': setTool(message, chunk, { state: 'output-available', output: chunk.output }); break;
    case 'tool-output-error': setTool(message, chunk, { state: 'output-error', errorText: chunk.errorText }); break;
    case 'tool-output-denied': setTool(message, chunk, { state: 'output-denied' }); break;
    case 'file': parts.push({ type: 'file', mediaType: chunk.mediaType, url: chunk.url }); break;
    case 'source-url': parts.push({ type: 'source-url', sourceId: chunk.sourceId, url: chunk.url }); break;
    case 'finish': message.finishReason = chunk.finishReason; break;
    case 'error': message.error = chunk.errorText; break;
    default: break;
  }
}

function setTool(message, chunk, fields) {
  const part = toolPart(message, chunk.toolCallId);
  if (part) Object.assign(part, fields);
}

/** The message as the route reads it back (without this page's own keys). */
export function wire(message) {
  return {
    id: message.id,
    role: message.role,
    parts: message.parts.map(({ _id, inputText, ...part }) => part),
  };
}
