// The transcript turns the saved messages on a session's HEAD path into the
// items the chat shows: prompts, answers (with their reasoning folded under
// them), one item per tool call with its result stitched in from the
// synthetic tool-result message (the event contract leaves that to the
// client), a sub-agent's messages grouped under the tool call that started
// it, compaction markers, saved errors, and a footer with each turn's usage
// and cost. Items are rebuilt on every structural change; an item whose
// inputs did not change keeps its identity, so the view leaves it alone.

import type {
  AssistantMessage,
  ContentBlock,
  ImageBlock,
  MessageRow,
  ReasoningMessage,
  ToolResultBlock,
  ToolUseBlock,
  UserMessage,
} from '../live/protocol';
import { terminalStates } from '../live/protocol';
import type { Pending, Turn } from '../live/session';

/** Activity is one thing a sub-agent did, shown under its parent call. */
export type Activity =
  | { kind: 'text'; text: string }
  | { kind: 'tool'; tool: ToolUseBlock; result?: ToolResultBlock };

export type Item =
  | { kind: 'user'; key: string; text: string; images: ImageBlock[]; sender: string; at: string }
  | { kind: 'assistant'; key: string; text: string; reasoning: string; error: boolean; interrupted: boolean; at: string }
  | { kind: 'reasoning'; key: string; text: string }
  | {
      kind: 'tool';
      key: string;
      tool: ToolUseBlock;
      result?: ToolResultBlock;
      children: Activity[];
      pending?: Pending['kind'];
      interrupted: boolean;
      runId?: string;
    }
  | { kind: 'compact'; key: string; trigger: string; preTokens: number }
  | { kind: 'other'; key: string; type: string }
  | { kind: 'turn'; key: string; turn: Turn };

const errorPrefix = '**Error:** ';

/** build returns the items of path. */
export function build(path: MessageRow[], turns: Map<string, Turn>, pending: Pending[]): Item[] {
  const results = new Map<string, ToolResultBlock>();
  const children = new Map<string, Activity[]>();
  for (const r of path) {
    const m = r.message;
    const parentTool = (m as { parent?: { toolUseId?: string | null } }).parent?.toolUseId ?? null;
    if (m.type === 'user') {
      for (const b of blocks(m)) {
        if (b.type === 'tool_result') results.set(b.toolUseId, b);
      }
    }
    if (parentTool && (m.type === 'assistant' || m.type === 'user')) {
      const list = children.get(parentTool) ?? [];
      children.set(parentTool, list);
      if (m.type === 'assistant') {
        for (const b of blocks(m)) {
          if (b.type === 'text' && b.text.trim()) list.push({ kind: 'text', text: b.text });
          if (b.type === 'tool_use') list.push({ kind: 'tool', tool: b });
        }
      }
    }
  }
  // Stitch the sub-agents' own tool results in.
  for (const list of children.values()) {
    for (const a of list) if (a.kind === 'tool') a.result = results.get(a.tool.id);
  }
  const waiting = new Map(pending.map((p) => [p.toolUseId, p.kind]));

  const out: Item[] = [];
  let reasoning = '';
  for (let i = 0; i < path.length; i++) {
    const r = path[i]!;
    const m = r.message;
    const parentTool = (m as { parent?: { toolUseId?: string | null } }).parent?.toolUseId ?? null;
    if (!parentTool) {
      switch (m.type) {
        case 'user': {
          const u = m as UserMessage;
          if (!u.synthetic) {
            out.push({ kind: 'user', key: r.rowId, text: textOf(blocks(u)), images: blocks(u).filter((b): b is ImageBlock => b.type === 'image'),
              sender: u.sender?.name ?? '', at: r.createdAt });
          }
          break;
        }
        case 'reasoning':
          reasoning += (reasoning ? '\n\n' : '') + String((m as ReasoningMessage).text ?? '');
          // Folded into the answer that follows; alone if none does.
          if (path[i + 1]?.message.type !== 'assistant') {
            out.push({ kind: 'reasoning', key: r.rowId, text: reasoning });
            reasoning = '';
          }
          break;
        case 'assistant': {
          const a = m as AssistantMessage;
          const content = blocks(a);
          const text = textOf(content);
          if (text.trim() || reasoning) {
            const error = text.startsWith(errorPrefix);
            out.push({ kind: 'assistant', key: r.rowId, text: error ? text.slice(errorPrefix.length) : text, reasoning, error,
              interrupted: a.stopReason === 'interrupted' && !content.some((b) => b.type === 'tool_use'), at: r.createdAt });
          }
          reasoning = '';
          for (const b of content) {
            if (b.type !== 'tool_use' || typeof b.id !== 'string') continue;
            out.push({ kind: 'tool', key: `${r.rowId}:${b.id}`, tool: b, result: results.get(b.id), children: children.get(b.id) ?? [],
              pending: waiting.get(b.id), interrupted: b.interrupted === true || (a.stopReason === 'interrupted' && !results.has(b.id)),
              runId: r.runId });
          }
          break;
        }
        case 'compact_boundary': {
          const c = m as { trigger: string; preTokens: number };
          out.push({ kind: 'compact', key: r.rowId, trigger: c.trigger, preTokens: c.preTokens });
          break;
        }
        default:
          out.push({ kind: 'other', key: r.rowId, type: m.type });
      }
    }
    // An ended turn's footer follows its last message on the path (a turn
    // still going shows its state by the composer).
    const next = path[i + 1];
    if (r.runId && next?.runId !== r.runId) {
      const t = turns.get(r.runId);
      if (t && terminalStates.includes(t.state)) out.push({ kind: 'turn', key: `turn:${r.runId}`, turn: { ...t } });
    }
  }
  return out;
}

/** blocks is a message's content blocks, none when it has no list of
 *  them (a malformed message is shown empty, not thrown on). */
function blocks(m: unknown): ContentBlock[] {
  const c = (m as { content?: unknown }).content;
  return Array.isArray(c) ? c.filter((b): b is ContentBlock => typeof b === 'object' && b !== null && typeof (b as { type?: unknown }).type === 'string') : [];
}

/** textOf joins a message's text blocks. */
export function textOf(blocks: ContentBlock[] | undefined): string {
  return (blocks ?? []).filter((b): b is { type: 'text'; text: string } => b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n\n');
}

/** Memo keeps an item's identity while its content stays the same, so the
 *  view does not redraw items that did not change. */
export class Memo {
  private prev = new Map<string, { sig: string; item: Item }>();

  build(path: MessageRow[], turns: Map<string, Turn>, pending: Pending[]): Item[] {
    const next = new Map<string, { sig: string; item: Item }>();
    const items = build(path, turns, pending).map((it) => {
      const sig = signature(it);
      const old = this.prev.get(it.key);
      const keep = old && old.sig === sig ? old.item : it;
      next.set(it.key, { sig, item: keep });
      return keep;
    });
    this.prev = next;
    return items;
  }
}

// signature is what makes an item different from its previous build: the
// parts that change after it first appears (a result, children, pending, a
// turn's numbers). Content of a saved message never changes.
function signature(it: Item): string {
  switch (it.kind) {
    case 'tool':
      return `${it.result ? (it.result.isError ? 'E' : 'R') + it.result.content.length : '-'}|${it.children.length}|` +
        `${it.children.map((c) => (c.kind === 'tool' ? (c.result ? 'r' : '-') : 't')).join('')}|${it.pending ?? ''}|${it.interrupted}`;
    case 'turn':
      return JSON.stringify(it.turn);
    case 'assistant':
      return `${it.text.length}|${it.reasoning.length}|${it.interrupted}`;
    case 'reasoning':
      return String(it.text.length);
    default:
      return '';
  }
}
