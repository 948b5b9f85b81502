import { describe, expect, it } from 'vitest';
import type { Message, MessageRow } from '../live/protocol';
import { answer, base, toolCall, toolResult, user } from '../live/testdata';
import { build, Memo, type Item } from './transcript';

const rows = (...ms: [Message, string?][]): MessageRow[] =>
  ms.map(([message, runId], i) => ({ rowId: `r${i}`, parentRowId: i ? `r${i - 1}` : undefined, runId: runId ?? 'run-1', message, createdAt: '' }));

const kinds = (items: Item[]) => items.map((i) => i.kind);

describe('build', () => {
  it('stitches each tool result into its call, and hides the carrier message', () => {
    const items = build(rows([user('1', 'look')], [toolCall('2', 't1', 'Bash', { command: 'ls' })], [toolResult('3', 't1', 'a.go\n')], [answer('4', 'one file')]), new Map(), []);
    expect(kinds(items)).toEqual(['user', 'tool', 'assistant']);
    const tool = items[1] as Extract<Item, { kind: 'tool' }>;
    expect(tool.result?.content).toBe('a.go\n');
  });

  it("groups a sub-agent's messages under the call that started it", () => {
    const child = (id: string, m: Message) => ({ ...m, ...{ parent: base(id, 'agent-1').parent } }) as Message;
    const items = build(
      rows(
        [user('1', 'survey')],
        [toolCall('2', 'agent-1', 'Agent', { description: 'Survey', prompt: 'list tests' })],
        [child('3', answer('3', 'Looking.'))],
        [child('4', toolCall('4', 'g1', 'Glob', { pattern: '*_test.go' }))],
        [child('5', toolResult('5', 'g1', 'main_test.go'))],
        [toolResult('6', 'agent-1', 'One test file')],
      ),
      new Map(),
      [],
    );
    expect(kinds(items)).toEqual(['user', 'tool']);
    const agent = items[1] as Extract<Item, { kind: 'tool' }>;
    expect(agent.children.map((c) => c.kind)).toEqual(['text', 'tool']);
    expect(agent.children[1]).toMatchObject({ kind: 'tool', result: { content: 'main_test.go' } });
    expect(agent.result?.content).toBe('One test file');
  });

  it('folds reasoning under the answer that follows it', () => {
    const reasoning: Message = { ...base('r'), type: 'reasoning', text: 'thinking it over' };
    const items = build(rows([user('1', 'q')], [reasoning], [answer('2', 'the answer')]), new Map(), []);
    expect(kinds(items)).toEqual(['user', 'assistant']);
    expect(items[1]).toMatchObject({ reasoning: 'thinking it over', text: 'the answer' });
  });

  it('shows a saved error as an error, and each turn with its footer', () => {
    const turns = new Map([['run-1', { runId: 'run-1', state: 'failed' as const, error: 'overloaded' }]]);
    const items = build(rows([user('1', 'q')], [answer('2', '**Error:** provider overloaded')]), turns, []);
    expect(kinds(items)).toEqual(['user', 'assistant', 'turn']);
    expect(items[1]).toMatchObject({ error: true, text: 'provider overloaded' });
  });

  it('marks the call a prompt waits on', () => {
    const items = build(rows([toolCall('1', 'b1', 'Bash', { command: 'rm -rf /' })]), new Map(), [{ toolUseId: 'b1', kind: 'permission' }]);
    expect(items[0]).toMatchObject({ kind: 'tool', pending: 'permission' });
  });

  it('shows a message type it does not know, rather than dropping it', () => {
    const items = build([{ rowId: 'x', message: { type: 'hologram' }, createdAt: '' }], new Map(), []);
    expect(items).toEqual([{ kind: 'other', key: 'x', type: 'hologram' }]);
  });
});

describe('Memo', () => {
  it('keeps the identity of items that did not change', () => {
    const m = new Memo();
    const path = rows([user('1', 'q')], [toolCall('2', 't1', 'Read', { filePath: 'a' })]);
    const first = m.build(path, new Map(), []);
    const again = m.build(path, new Map(), []);
    expect(again[0]).toBe(first[0]);
    expect(again[1]).toBe(first[1]);
    const done = m.build([...path, ...rows([toolResult('3', 't1', 'text')]).map((r) => ({ ...r, rowId: 'r9' }))], new Map(), []);
    expect(done[0]).toBe(first[0]);
    expect(done[1]).not.toBe(first[1]);
  });
});
