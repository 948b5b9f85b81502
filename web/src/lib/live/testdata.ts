// Frames and messages for the unit tests, shaped as pkg/events writes them.

import type { ChatEvent, Message, ServerFrame } from './protocol';

export const S = 'sess-1';
const engine = { type: 'scripted', provider: 'clopen', model: { id: 'scripted/ask', name: 'ask' }, account: { id: '', name: '' } };
export const base = (id: string, parentTool: string | null = null) => ({
  createdAt: '2026-05-01T12:00:00Z',
  messageId: id,
  sessionId: 'x',
  parent: { messageId: null, sessionId: null, toolUseId: parentTool },
  engine,
});

export function ev(cursor: number, type: ChatEvent['type'], data: unknown, runId = 'run-1'): ServerFrame {
  return { type: 'event', session: S, cursor, event: { type, chatSessionId: S, runId, timestamp: '2026-05-01T12:00:00Z', data } as ChatEvent };
}

export function msg(cursor: number, row: string, parent: string | null, message: Message, runId = 'run-1'): ServerFrame {
  return ev(cursor, 'chat:message', { message, messageRowId: row, parentMessageRowId: parent, senderId: '', senderName: '', engine: 'scripted', usage: null }, runId);
}

export const user = (id: string, text: string): Message => ({ ...base(id), type: 'user', sender: { id: 'u', name: 'Ada' }, content: [{ type: 'text', text }], synthetic: false });
export const answer = (id: string, text: string): Message => ({ ...base(id), type: 'assistant', content: [{ type: 'text', text }], stopReason: 'end_turn', usage: null });
export const toolCall = (id: string, tool: string, name: string, input: Record<string, unknown> = {}): Message => ({
  ...base(id), type: 'assistant', content: [{ type: 'tool_use', id: tool, name, input }], stopReason: 'tool_use', usage: null,
});
export const toolResult = (id: string, tool: string, content: string): Message => ({
  ...base(id), type: 'user', sender: { id: '', name: '' }, content: [{ type: 'tool_result', toolUseId: tool, content, isError: false }], synthetic: true,
});

