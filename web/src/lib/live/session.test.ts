import { describe, expect, it } from 'vitest';
import type { MessageRow, ServerFrame, Snapshot } from './protocol';
import { answer, ev, msg, S, toolCall, toolResult, user } from './testdata';
import { headPath, SessionStream } from './session';

function snapshot(cursor: number, messages: MessageRow[], extra: Partial<Snapshot> = {}, reload = false): ServerFrame {
  const head = messages.at(-1)?.rowId;
  return { type: 'snapshot', session: S, cursor, reload, snapshot: { session: { id: S, projectId: 'p', title: '', engine: 'scripted', headMessageId: head }, messages, cursor, ...extra } };
}

describe('SessionStream', () => {
  it('applies each frame once: a cursor at or below the last applied is a duplicate', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(10, []));
    expect(s.apply(msg(11, 'r1', null, user('m1', 'hi')))).toBe(true);
    expect(s.apply(msg(11, 'r1', null, user('m1', 'hi')))).toBe(false);
    expect(s.apply(msg(9, 'r0', null, user('m0', 'old')))).toBe(false);
    expect(s.path.map((r) => r.rowId)).toEqual(['r1']);
    expect(s.frames).toEqual([{ cursor: 11, type: 'chat:message' }]);
  });

  it('ignores frames of other sessions', () => {
    const s = new SessionStream(S);
    const f = ev(3, 'chat:complete', {});
    (f as { event: { chatSessionId: string } }).event.chatSessionId = 'other';
    expect(s.apply(f)).toBe(false);
    expect(s.cursor).toBe(0);
  });

  it('streams deltas into one partial without structural changes, and the saved message replaces it', () => {
    const s = new SessionStream(S);
    let structure = 0;
    let deltas = '';
    s.apply(snapshot(1, []));
    s.subscribe((c) => c === 'structure' && structure++);
    s.apply(ev(2, 'chat:run-state', { state: 'running' }));
    s.apply(ev(3, 'chat:partial', { eventType: 'start', reasoning: false }));
    s.partial!.subscribe((d) => (deltas += d));
    const before = structure;
    for (let i = 0; i < 100; i++) s.apply(ev(4 + i, 'chat:partial', { eventType: 'update', deltaText: 'ab', reasoning: false }));
    expect(structure).toBe(before);
    expect(s.partial!.text).toBe('ab'.repeat(100));
    expect(deltas).toBe('ab'.repeat(100));
    s.apply(ev(104, 'chat:partial', { eventType: 'end', reasoning: false }));
    s.apply(msg(105, 'r1', null, answer('m1', 'ab'.repeat(100))));
    expect(s.partial).toBeNull();
    expect(s.running).toBe(true);
    s.apply(ev(106, 'chat:run-state', { state: 'completed' }));
    expect(s.running).toBe(false);
  });

  it('resumes from a snapshot with the partial text, and a reload replaces everything', () => {
    const s = new SessionStream(S);
    const rows: MessageRow[] = [{ rowId: 'r1', message: user('m1', 'go'), runId: 'run-1', createdAt: '' }];
    s.apply(snapshot(40, rows, { activeRun: { id: 'run-1', sessionId: S, state: 'running', engine: 'scripted', queuedAt: '' }, partialText: 'half an ans' }));
    expect(s.partial?.text).toBe('half an ans');
    expect(s.running).toBe(true);
    s.apply(ev(41, 'chat:partial', { eventType: 'update', deltaText: 'wer', reasoning: false }));
    expect(s.partial?.text).toBe('half an answer');
    s.apply(snapshot(90, [...rows, { rowId: 'r2', parentRowId: 'r1', message: answer('m2', 'done'), runId: 'run-1', createdAt: '' }], {}, true));
    expect(s.reloads).toBe(1);
    expect(s.cursor).toBe(90);
    expect(s.partial).toBeNull();
    expect(s.running).toBe(false);
    expect(s.path.map((r) => r.rowId)).toEqual(['r1', 'r2']);
  });

  it('keeps a question pending from its call until it is answered, in any tab', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, []));
    s.apply(ev(2, 'chat:run-state', { state: 'running' }));
    s.apply(msg(3, 'r1', null, toolCall('m1', 'toolu_q', 'AskUserQuestion', { questions: [] })));
    expect(s.pending).toEqual([{ toolUseId: 'toolu_q', kind: 'question', runId: 'run-1' }]);
    s.apply(ev(4, 'chat:run-state', { state: 'awaiting_input', reason: 'question', toolUseId: 'toolu_q' }));
    expect(s.pending).toHaveLength(1);
    s.apply(ev(5, 'chat:run-state', { state: 'running', reason: 'answered' }));
    expect(s.pending).toEqual([]);
    s.apply(msg(6, 'r2', 'r1', toolResult('m2', 'toolu_q', 'Postgres')));
    expect(s.pending).toEqual([]);
  });

  it('finds a pending question and permission prompt in a snapshot', () => {
    const rows: MessageRow[] = [
      { rowId: 'r1', message: user('m1', 'go'), runId: 'run-1', createdAt: '' },
      { rowId: 'r2', message: toolCall('m2', 'toolu_b', 'Bash', { command: 'go test' }), runId: 'run-1', createdAt: '' },
    ];
    const s = new SessionStream(S);
    s.apply(snapshot(5, rows, { activeRun: { id: 'run-1', sessionId: S, state: 'awaiting_input', engine: 'scripted', queuedAt: '' } }));
    expect(s.pending).toEqual([{ toolUseId: 'toolu_b', kind: 'permission', runId: 'run-1' }]);
    s.apply(ev(6, 'chat:run-state', { state: 'cancelled' }));
    expect(s.pending).toEqual([]);
  });

  it('shows a permission prompt until it is decided', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, []));
    s.apply(msg(2, 'r1', null, toolCall('m1', 'toolu_b', 'Bash', { command: 'go test' })));
    s.apply(ev(3, 'chat:run-state', { state: 'awaiting_input', reason: 'permission', toolUseId: 'toolu_b' }));
    s.apply(ev(4, 'chat:waiting-input', { projectId: 'p', chatSessionId: S, toolUseId: 'toolu_b' }));
    expect(s.pending).toEqual([{ toolUseId: 'toolu_b', kind: 'permission', runId: 'run-1' }]);
    s.apply(ev(5, 'chat:run-state', { state: 'running', reason: 'answered' }));
    expect(s.pending).toEqual([]);
  });

  it('lists turns queued behind the active one until they start', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, []));
    s.apply(ev(2, 'chat:run-state', { state: 'running' }, 'run-1'));
    s.apply(ev(3, 'chat:run-state', { state: 'queued', reason: "behind the session's running turn" }, 'run-2'));
    s.queued('run-2', 'and then this');
    expect(s.queue).toEqual([{ runId: 'run-2', prompt: 'and then this', reason: "behind the session's running turn" }]);
    s.apply(ev(4, 'chat:run-state', { state: 'completed' }, 'run-1'));
    s.apply(msg(5, 'r9', null, user('m9', 'and then this'), 'run-2'));
    expect(s.queue).toEqual([]);
  });

  it('keeps a turn the frames ended ended when an older list of runs arrives after', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, []));
    s.apply(ev(2, 'chat:run-state', { state: 'running' }, 'run-1'));
    s.apply(ev(3, 'chat:run-state', { state: 'cancelled' }, 'run-1'));
    const run = { id: 'run-1', sessionId: S, engine: 'scripted', queuedAt: '' };
    // The list a rejoin asked for before the cancel reached the page.
    s.loadRuns([{ ...run, state: 'running' }]);
    expect(s.turns.get('run-1')?.state).toBe('cancelled');
    // A list may still end a turn, and fill in what the frames lacked.
    s.apply(ev(4, 'chat:run-state', { state: 'running' }, 'run-2'));
    s.loadRuns([{ ...run, id: 'run-2', state: 'completed', totalCostUsd: 0.25 }]);
    expect(s.turns.get('run-2')).toMatchObject({ state: 'completed', costUsd: 0.25 });
  });

  it('continues the path from the parent a message names (a fork)', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, [
      { rowId: 'a', message: user('1', 'one'), createdAt: '' },
      { rowId: 'b', parentRowId: 'a', message: answer('2', 'two'), createdAt: '' },
    ]));
    s.apply(msg(2, 'c', 'a', answer('3', 'another two')));
    expect(s.path.map((r) => r.rowId)).toEqual(['a', 'c']);
  });

  it('asks for a snapshot when the messages changed other than by appending', () => {
    const s = new SessionStream(S);
    s.apply(snapshot(1, []));
    s.apply(ev(2, 'chat:messages-changed', { reason: 'restored' }));
    expect(s.needsSnapshot).toBe(true);
  });
});

describe('headPath', () => {
  it('follows parents from the head, leaving other branches out', () => {
    const rows: MessageRow[] = [
      { rowId: 'a', message: user('1', 'x'), createdAt: '' },
      { rowId: 'b', parentRowId: 'a', message: user('2', 'x'), createdAt: '' },
      { rowId: 'c', parentRowId: 'a', message: user('3', 'x'), createdAt: '' },
      { rowId: 'd', parentRowId: 'c', message: user('4', 'x'), createdAt: '' },
    ];
    expect(headPath(rows, 'd').map((r) => r.rowId)).toEqual(['a', 'c', 'd']);
    expect(headPath(rows, undefined).map((r) => r.rowId)).toEqual(['a', 'b', 'c', 'd']);
    expect(headPath(rows, 'nope').map((r) => r.rowId)).toEqual(['a', 'b', 'c', 'd']);
  });
});

