// SessionStream is the live state of one chat session in this tab: the saved
// messages on the session's HEAD path, the text streaming now, the active
// run and what it waits for, the turns' usage, and the turns queued behind
// it. It is fed server frames in order and never talks to the network
// itself (SessionConnection does), so its rules are tested with plain
// frames: every event frame carries its CHAT cursor, a frame at or below
// the cursor already applied is a duplicate and is ignored, and a snapshot
// replaces everything and sets the cursor the frames after it continue.

import type {
  AssistantMessage,
  ChatEvent,
  Message,
  MessageRow,
  OtherMessage,
  RunInfo,
  RunStateName,
  ServerFrame,
  Snapshot,
  ToolUseBlock,
  TokenUsage,
} from './protocol';
import { terminalStates } from './protocol';

/** Pending is a question or permission prompt waiting for this user. */
export interface Pending {
  toolUseId: string;
  kind: 'question' | 'permission';
  runId?: string;
}

/** Turn is what the chat shows under a turn: its state, usage and cost. */
export interface Turn {
  runId: string;
  state: RunStateName;
  usage?: TokenUsage;
  costUsd?: number;
  error?: string;
  stopReason?: string;
}

/** Queued is a turn waiting behind the active one. */
export interface Queued {
  runId: string;
  prompt: string;
  reason?: string;
}

/** Notice is something to tell the user that is not a message. */
export interface Notice {
  id: number;
  level: 'info' | 'warning' | 'error';
  title: string;
  message: string;
}

/** FrameRecord is one event frame as it arrived, for comparing tabs: its
 *  cursor and type (a run state's with the state, chat:run-state:running). */
export interface FrameRecord {
  cursor: number;
  type: string;
}

type Change = 'structure' | 'delta';

/** Partial is the text streaming now; text grows by deltas without a
 *  structural change, so the view appends instead of re-rendering. */
export class Partial {
  text = '';
  ended = false;
  private listeners = new Set<(delta: string) => void>();
  constructor(readonly reasoning: boolean, readonly runId: string | undefined) {}
  append(delta: string): void {
    this.text += delta;
    for (const fn of this.listeners) fn(delta);
  }
  /** subscribe calls fn with every delta appended from now on. */
  subscribe(fn: (delta: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

const maxFrameRecords = 50_000;

export class SessionStream {
  cursor = 0;
  /** The saved messages on HEAD's path, oldest first. */
  path: MessageRow[] = [];
  partial: Partial | null = null;
  /** The run going on now, if any. */
  activeRun: { id: string; state: RunStateName; reason?: string } | null = null;
  pending: Pending[] = [];
  turns = new Map<string, Turn>();
  queue: Queued[] = [];
  notices: Notice[] = [];
  frames: FrameRecord[] = [];
  /** Bumped on every structural change. */
  version = 0;
  /** How many snapshots were applied, and how many were reloads. */
  snapshots = 0;
  reloads = 0;
  /** A chat:messages-changed asks the owner to start from a snapshot. */
  needsSnapshot = false;

  private rows = new Map<string, MessageRow>();
  private results = new Set<string>(); // tool_use ids with a result
  private listeners = new Set<(c: Change) => void>();
  private noticeID = 0;
  private parked: string | undefined; // the tool call the run is parked on

  constructor(readonly sessionId: string) {}

  subscribe(fn: (c: Change) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** running reports whether a turn of the session is going on. */
  get running(): boolean {
    return this.activeRun !== null && !terminalStates.includes(this.activeRun.state);
  }

  /** apply feeds one server frame of this session (or a project notice).
   *  It returns false for a duplicate it ignored. */
  apply(f: ServerFrame): boolean {
    switch (f.type) {
      case 'snapshot':
        if (f.session !== this.sessionId) return false;
        this.applySnapshot(f.snapshot, f.reload === true);
        return true;
      case 'event': {
        if (f.event.chatSessionId !== this.sessionId) return false;
        if (f.cursor !== undefined && f.cursor > 0) {
          if (f.cursor <= this.cursor) return false;
          this.cursor = f.cursor;
          if (this.frames.length < maxFrameRecords) {
            const detail = f.event.type === 'chat:run-state' ? `:${f.event.data.state}` : '';
            this.frames.push({ cursor: f.cursor, type: f.event.type + detail });
          }
        }
        this.applyEvent(f.event);
        return true;
      }
    }
    return false;
  }

  /** loadRuns merges the session's runs (REST) into the turns and queue.
   *  The list can be older than the frames already applied (it was read
   *  before the last of them, or from rows the event log is ahead of): a
   *  turn the frames ended stays ended, whatever state the list gives. */
  loadRuns(runs: RunInfo[]): void {
    for (const r of runs) {
      const t = this.turn(r.id, r.state);
      if (!terminalStates.includes(t.state) || terminalStates.includes(r.state)) t.state = r.state;
      if (r.usage) t.usage = r.usage;
      if (r.totalCostUsd !== undefined) t.costUsd = r.totalCostUsd;
      if (r.error) t.error = r.error;
      if (r.state === 'queued' && !r.dispatchedAt && r.id !== this.activeRun?.id) {
        this.enqueue(r.id, r.prompt ?? '');
      }
    }
    this.changed();
  }

  /** queued notes a turn this tab sent that waits behind the active one. */
  queued(runId: string, prompt: string): void {
    this.enqueue(runId, prompt);
    this.changed();
  }

  /** touch reports a change made outside the frames (a failed join). */
  touch(): void {
    this.changed();
  }

  dismissNotice(id: number): void {
    this.notices = this.notices.filter((n) => n.id !== id);
    this.changed();
  }

  private applySnapshot(s: Snapshot, reload: boolean): void {
    this.snapshots++;
    if (reload) this.reloads++;
    this.cursor = s.cursor;
    this.rows = new Map(s.messages.map((r) => [r.rowId, r]));
    this.path = headPath(s.messages, s.session.headMessageId);
    this.results = new Set();
    for (const r of this.path) this.noteResults(r.message);
    this.partial = null;
    this.pending = [];
    this.activeRun = null;
    this.needsSnapshot = false;
    const run = s.activeRun;
    if (run && !terminalStates.includes(run.state)) {
      this.activeRun = { id: run.id, state: run.state };
      this.turn(run.id, run.state).state = run.state;
      if (s.partialReasoning) this.startPartial(true, run.id).append(s.partialReasoning);
      if (s.partialText) this.startPartial(false, run.id).append(s.partialText);
      this.pending = pendingOf(this.path, run.id, run.state, this.results);
    }
    this.queue = this.queue.filter((q) => q.runId !== run?.id && !this.path.some((r) => r.runId === q.runId));
    this.changed();
  }

  private applyEvent(ev: ChatEvent): void {
    const run = ev.runId;
    switch (ev.type) {
      case 'chat:partial': {
        const d = ev.data;
        if (d.eventType === 'start') {
          this.startPartial(d.reasoning, run);
          this.changed();
        } else if (d.eventType === 'update') {
          if (!this.partial || this.partial.reasoning !== d.reasoning) {
            this.startPartial(d.reasoning, run);
            this.changed();
          }
          this.partial!.append(d.deltaText ?? '');
          this.emit('delta');
        } else if (this.partial) {
          this.partial.ended = true;
        }
        return;
      }
      case 'chat:message':
        this.addMessage(ev.data.messageRowId, ev.data.parentMessageRowId, run, ev.timestamp, ev.data.message, ev.data.usage);
        break;
      case 'chat:run-state':
        if (run) this.runState(run, ev.data.state, ev.data.reason, ev.data.toolUseId);
        break;
      case 'chat:waiting-input':
        this.addPending({ toolUseId: ev.data.toolUseId, kind: 'permission', runId: run });
        break;
      case 'chat:complete':
        if (run) {
          const t = this.turn(run, 'completed');
          if (ev.data.usage) t.usage = ev.data.usage;
          if (ev.data.totalCostUsd !== undefined) t.costUsd = ev.data.totalCostUsd;
          t.stopReason = ev.data.stopReason;
        }
        break;
      case 'chat:error':
        if (run) this.turn(run, 'failed').error = ev.data.error;
        this.notice('error', 'The turn failed', ev.data.error);
        break;
      case 'chat:cancelled':
        if (run) this.turn(run, 'cancelled').state = 'cancelled';
        break;
      case 'chat:stream-finished':
        if (run) this.finish(run);
        break;
      case 'chat:notification':
        this.notice(ev.data.notification.type, ev.data.notification.title, ev.data.notification.message);
        break;
      case 'chat:rate_limit': {
        const d = ev.data;
        const reset = d.resetsAt ? `, resets at ${new Date(d.resetsAt * 1000).toLocaleTimeString()}` : '';
        this.notice(d.status === 'rejected' ? 'error' : 'warning', 'Rate limit',
          `${d.engine}: ${Math.round(d.utilization * 100)}% used${reset}`);
        break;
      }
      case 'chat:messages-changed':
        this.needsSnapshot = true;
        break;
      default:
        return; // a newer server's event: nothing to show
    }
    this.changed();
  }

  private addMessage(rowId: string, parent: string | null, run: string | undefined, at: string,
    message: Message | OtherMessage, usage: TokenUsage | null): void {
    const row: MessageRow = { rowId, parentRowId: parent ?? undefined, runId: run, message, createdAt: at };
    if (usage && message.type === 'assistant') (message as AssistantMessage).usage = usage;
    const known = this.rows.has(rowId);
    this.rows.set(rowId, row);
    if (known) {
      this.path = this.path.map((r) => (r.rowId === rowId ? row : r));
    } else {
      // Normally the new message's parent is the last one on the path; a
      // parent further back is a fork (a retry, a restore): the path
      // continues from it.
      const at = parent ? this.path.findIndex((r) => r.rowId === parent) : -1;
      if (at >= 0 && at < this.path.length - 1) this.path = this.path.slice(0, at + 1);
      this.path = [...this.path, row];
    }
    this.noteResults(message);
    if (message.type === 'assistant' || message.type === 'reasoning') {
      if (this.partial && this.partial.reasoning === (message.type === 'reasoning')) this.partial = null;
    }
    if (message.type === 'user' && run) this.queue = this.queue.filter((q) => q.runId !== run);
    for (const tu of toolUses(message)) {
      if (tu.name === 'AskUserQuestion' && !this.results.has(tu.id)) {
        this.addPending({ toolUseId: tu.id, kind: 'question', runId: run });
      }
    }
    this.pending = this.pending.filter((p) => !this.results.has(p.toolUseId));
  }

  private runState(run: string, state: RunStateName, reason?: string, toolUseId?: string): void {
    this.turn(run, state).state = state;
    if (state === 'queued' && run !== this.activeRun?.id && !this.path.some((r) => r.runId === run)) {
      const q = this.queue.find((x) => x.runId === run);
      if (q) q.reason = reason;
      else this.queue.push({ runId: run, prompt: '', reason });
      return;
    }
    this.queue = this.queue.filter((q) => q.runId !== run);
    if (terminalStates.includes(state)) {
      this.finish(run);
      return;
    }
    this.activeRun = { id: run, state, reason };
    if (state === 'awaiting_input' && toolUseId) {
      this.parked = toolUseId;
      this.addPending({ toolUseId, kind: reason === 'permission' ? 'permission' : 'question', runId: run });
    }
    if (state === 'running' && reason === 'answered' && this.parked) {
      // The parked call was answered, in this tab or another: its prompt
      // goes now, before the tool's result arrives.
      const answered = this.parked;
      this.pending = this.pending.filter((p) => p.toolUseId !== answered);
      this.parked = undefined;
    }
  }

  private finish(run: string): void {
    if (this.activeRun?.id === run) this.activeRun = null;
    if (this.partial && (this.partial.runId === run || this.partial.runId === undefined)) this.partial = null;
    this.pending = this.pending.filter((p) => p.runId !== undefined && p.runId !== run);
    this.queue = this.queue.filter((q) => q.runId !== run);
  }

  private startPartial(reasoning: boolean, run: string | undefined): Partial {
    this.partial = new Partial(reasoning, run);
    return this.partial;
  }

  private addPending(p: Pending): void {
    if (this.results.has(p.toolUseId)) return;
    const i = this.pending.findIndex((x) => x.toolUseId === p.toolUseId);
    if (i >= 0) this.pending[i] = { ...this.pending[i]!, ...p };
    else this.pending = [...this.pending, p];
  }

  private enqueue(runId: string, prompt: string): void {
    const q = this.queue.find((x) => x.runId === runId);
    if (q) {
      if (prompt) q.prompt = prompt;
    } else {
      this.queue.push({ runId, prompt });
    }
  }

  private turn(run: string, state: RunStateName): Turn {
    let t = this.turns.get(run);
    if (!t) {
      t = { runId: run, state };
      this.turns.set(run, t);
    }
    return t;
  }

  private noteResults(m: Message | OtherMessage): void {
    const content = (m as { content?: unknown }).content;
    if (m.type !== 'user' || !Array.isArray(content)) return;
    for (const b of content as { type?: string; toolUseId?: string }[]) {
      if (b?.type === 'tool_result' && b.toolUseId) this.results.add(b.toolUseId);
    }
  }

  private notice(level: Notice['level'], title: string, message: string): void {
    this.notices = [...this.notices.slice(-4), { id: ++this.noticeID, level, title, message }];
  }

  private changed(): void {
    this.version++;
    this.emit('structure');
  }

  private emit(c: Change): void {
    for (const fn of this.listeners) fn(c);
  }
}

/** toolUses returns the tool calls of an assistant message. */
export function toolUses(m: Message | OtherMessage): ToolUseBlock[] {
  const content = (m as AssistantMessage).content;
  if (m.type !== 'assistant' || !Array.isArray(content)) return [];
  return content.filter((b): b is ToolUseBlock => b?.type === 'tool_use' && typeof b.id === 'string');
}

/** headPath returns the rows from the root to head, following parents;
 *  without a head it is every row in saved order. */
export function headPath(rows: MessageRow[], head: string | undefined): MessageRow[] {
  if (!head) return rows.slice();
  const byID = new Map(rows.map((r) => [r.rowId, r]));
  const out: MessageRow[] = [];
  const seen = new Set<string>();
  for (let r = byID.get(head); r && !seen.has(r.rowId); r = r.parentRowId ? byID.get(r.parentRowId) : undefined) {
    seen.add(r.rowId);
    out.push(r);
  }
  return out.length ? out.reverse() : rows.slice();
}

/** pendingOf finds what an active run waits for, from the saved messages:
 *  a question is pending from its tool call until its result; a run that
 *  awaits input otherwise waits on its last tool call without a result (a
 *  permission prompt). */
function pendingOf(path: MessageRow[], run: string, state: RunStateName, results: Set<string>): Pending[] {
  const out: Pending[] = [];
  let last: ToolUseBlock | null = null;
  for (const r of path) {
    if (r.runId !== run) continue;
    for (const tu of toolUses(r.message)) {
      if (results.has(tu.id)) continue;
      if (tu.name === 'AskUserQuestion') out.push({ toolUseId: tu.id, kind: 'question', runId: run });
      else last = tu;
    }
  }
  if (state === 'awaiting_input' && last && !out.length) out.push({ toolUseId: last.id, kind: 'permission', runId: run });
  return out;
}
