// The WebSocket protocol of /v1/ws and the chat events it carries, as
// pkg/events defines them (ws.go, chat*.go, output and block types). The
// REST API's types are generated from the OpenAPI document (../api); these
// are not in it, so they are written here and checked against the Go
// package's golden files (protocol.test.ts).

export type EngineType =
  | 'claude-code' | 'codex' | 'copilot' | 'opencode' | 'qwen' | 'pi' | 'cursor' | 'cline' | 'gemini' | 'acp' | 'scripted';

/** A client frame: an operation with an id the reply carries back. */
export interface ClientFrame {
  id?: string;
  op: 'join' | 'leave' | 'send' | 'cancel' | 'interrupt' | 'answer' | 'ping' | 'skills.available' | 'models.list';
  session?: string;
  projectId?: string;
  run?: string;
  cursor?: number;
  text?: string;
  prompt?: ContentBlock[];
  engine?: EngineType;
  accountId?: string;
  model?: string;
  reasoningEffort?: string;
  profileId?: string | null;
  clientRequestId?: string;
  toolUseId?: string;
  answers?: Record<string, string>;
  decision?: 'allow' | 'deny';
  message?: string;
}

export interface APIError {
  status: number;
  code: string;
  message: string;
  clientRequestId?: string;
  retryAfter?: number;
}

/** What the server sends: a reply to a client frame, a chat event with its
 *  CHAT cursor, a snapshot to start from, or bye before it disconnects. */
export type ServerFrame =
  | { type: 'reply'; id?: string; ok: boolean; data?: unknown; error?: APIError }
  | { type: 'event'; session?: string; cursor?: number; event: ChatEvent }
  | { type: 'snapshot'; session: string; cursor: number; reload?: boolean; snapshot: Snapshot }
  | { type: 'bye'; reason: string; session?: string; cursor?: number };

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
}

// ---- content blocks ----

export interface TextBlock { type: 'text'; text: string }
export interface ImageBlock { type: 'image'; mediaType: string; data: string }
export interface DocumentBlock { type: 'document'; mediaType: string; data: string; title: string | null }
export interface ToolResultBlock { type: 'tool_result'; toolUseId: string; content: string; isError: boolean }
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  result?: unknown;
  interrupted?: boolean;
}
export interface UnknownBlock { type: string; [k: string]: unknown }
export type ContentBlock = TextBlock | ImageBlock | DocumentBlock | ToolResultBlock | ToolUseBlock;

// ---- persisted messages (an Output that is saved) ----

export interface MessageBase {
  createdAt: string;
  messageId: string;
  sessionId: string | null;
  parent: { messageId: string | null; sessionId: string | null; toolUseId: string | null };
  engine: {
    type: EngineType | string;
    provider: string;
    model: { id: string; name: string };
    account: { id: string; name: string };
    reasoningEffort?: string;
  };
}
export interface UserMessage extends MessageBase {
  type: 'user';
  sender: { id: string; name: string };
  content: ContentBlock[];
  synthetic: boolean;
}
export interface AssistantMessage extends MessageBase {
  type: 'assistant';
  content: ContentBlock[];
  stopReason: string | null;
  usage: TokenUsage | null;
}
export interface ReasoningMessage extends MessageBase { type: 'reasoning'; text: string }
export interface CompactBoundaryMessage extends MessageBase { type: 'compact_boundary'; trigger: string; preTokens: number }
/** A message type this client does not know: shown as such, never dropped. */
export interface OtherMessage extends Partial<MessageBase> { type: string }
export type Message = UserMessage | AssistantMessage | ReasoningMessage | CompactBoundaryMessage;

// ---- chat events ----

export interface ChatEventBase<T extends string, D> {
  type: T;
  chatSessionId: string;
  projectId?: string;
  runId?: string;
  source?: { run: string; epoch: number; seq: number };
  timestamp: string;
  data: D;
}

export interface ChatMessageData {
  message: Message | OtherMessage;
  messageRowId: string;
  parentMessageRowId: string | null;
  senderId: string;
  senderName: string;
  engine: string;
  usage: TokenUsage | null;
}
export interface ChatPartialData { eventType: 'start' | 'update' | 'end'; deltaText?: string; reasoning: boolean }
export interface ChatNotificationData { notification: { type: 'info' | 'warning' | 'error'; title: string; message: string } }
export interface ChatRateLimitData {
  engine: string;
  accountId: string;
  status: string;
  utilization: number;
  resetsAt: number | null;
  rateLimitType: string | null;
}
export interface ChatCompleteData { stopReason?: string; usage?: TokenUsage; totalCostUsd?: number; numTurns?: number }
export interface ChatErrorData { error: string; errorKind?: string }
export interface ChatStreamFinishedData {
  projectId: string;
  chatSessionId: string;
  status: 'completed' | 'error' | 'cancelled' | 'lost';
  reason?: string;
}
export interface ChatWaitingInputData { projectId: string; chatSessionId: string; toolUseId: string }
export type RunStateName =
  | 'queued' | 'claimed' | 'running' | 'awaiting_input' | 'cancelling' | 'completed' | 'failed' | 'cancelled' | 'lost';
export interface ChatRunStateData { state: RunStateName; reason?: string; error?: string; toolUseId?: string }

export type ChatEvent =
  | ChatEventBase<'chat:message', ChatMessageData>
  | ChatEventBase<'chat:partial', ChatPartialData>
  | ChatEventBase<'chat:notification', ChatNotificationData>
  | ChatEventBase<'chat:rate_limit', ChatRateLimitData>
  | ChatEventBase<'chat:complete', ChatCompleteData>
  | ChatEventBase<'chat:error', ChatErrorData>
  | ChatEventBase<'chat:cancelled', { status: 'cancelled' }>
  | ChatEventBase<'chat:stream-finished', ChatStreamFinishedData>
  | ChatEventBase<'chat:waiting-input', ChatWaitingInputData>
  | ChatEventBase<'chat:run-state', ChatRunStateData>
  | ChatEventBase<'chat:messages-changed', { reason: string }>;

export const terminalStates: readonly RunStateName[] = ['completed', 'failed', 'cancelled', 'lost'];

/** A saved message as REST and snapshots carry it. */
export interface MessageRow {
  rowId: string;
  parentRowId?: string;
  runId?: string;
  message: Message | OtherMessage;
  createdAt: string;
}

/** The run fields the chat uses (the REST Run schema has them all). */
export interface RunInfo {
  id: string;
  sessionId: string;
  state: RunStateName;
  engine: string;
  model?: string;
  reasoningEffort?: string;
  error?: string;
  usage?: TokenUsage;
  totalCostUsd?: number;
  prompt?: string;
  dispatchedAt?: string;
  queuedAt: string;
  endedAt?: string;
}

export interface Snapshot {
  session: { id: string; projectId: string; title: string; headMessageId?: string; activeRunId?: string; engine: string; model?: string };
  messages: MessageRow[];
  activeRun?: RunInfo;
  partialText?: string;
  partialReasoning?: string;
  cursor: number;
}

/** isMessage reports whether a decoded value is a persisted message type
 *  this client renders. */
export function isKnownMessage(m: { type: string }): m is Message {
  return m.type === 'user' || m.type === 'assistant' || m.type === 'reasoning' || m.type === 'compact_boundary';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCursor = (v: unknown) => v === undefined || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0);

/** parseServerFrame decodes one text frame, checking the shape the client
 *  relies on; anything else (not JSON, an unknown frame type, a missing or
 *  mistyped field) is null and skipped: a newer server's frame, or a broken
 *  one, never breaks the page. */
export function parseServerFrame(text: string): ServerFrame | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(v)) return null;
  switch (v.type) {
    case 'reply':
      return typeof v.ok === 'boolean' && (v.id === undefined || typeof v.id === 'string') ? (v as ServerFrame) : null;
    case 'bye':
      return typeof v.reason === 'string' && isCursor(v.cursor) ? (v as ServerFrame) : null;
    case 'snapshot': {
      const s = v.snapshot;
      if (typeof v.session !== 'string' || !isCursor(v.cursor) || !isObject(s) || !Array.isArray(s.messages) || !isObject(s.session)) return null;
      if (!s.messages.every((m) => isObject(m) && typeof m.rowId === 'string' && isObject(m.message) && typeof m.message.type === 'string')) return null;
      return v as ServerFrame;
    }
    case 'event': {
      const ev = v.event;
      if (!isCursor(v.cursor) || !isObject(ev) || typeof ev.type !== 'string' || typeof ev.chatSessionId !== 'string' || !isObject(ev.data)) return null;
      if (ev.runId !== undefined && typeof ev.runId !== 'string') return null;
      return wellFormed(ev.type, ev.data) ? (v as ServerFrame) : null;
    }
  }
  return null;
}

// wellFormed checks the fields of a chat event's data that the client reads.
function wellFormed(type: string, d: Record<string, unknown>): boolean {
  const str = (k: string) => typeof d[k] === 'string';
  switch (type) {
    case 'chat:message':
      return isObject(d.message) && typeof d.message.type === 'string' && str('messageRowId') &&
        (d.parentMessageRowId === null || d.parentMessageRowId === undefined || str('parentMessageRowId'));
    case 'chat:partial':
      return (d.eventType === 'start' || d.eventType === 'update' || d.eventType === 'end') && (d.deltaText === undefined || str('deltaText'));
    case 'chat:notification':
      return isObject(d.notification) && typeof d.notification.title === 'string' && typeof d.notification.message === 'string';
    case 'chat:rate_limit':
      return typeof d.utilization === 'number' && str('engine') && str('status');
    case 'chat:error':
      return str('error');
    case 'chat:run-state':
      return str('state');
    case 'chat:waiting-input':
      return str('toolUseId');
    case 'chat:stream-finished':
      return str('status');
  }
  return true;
}
