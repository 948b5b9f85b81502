// The Go event contract's golden files, read by this client: every chat
// event the server can send parses and applies, and every persisted message
// shape builds a transcript item.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { build } from '../chat/transcript';
import { parseServerFrame, type ChatEvent, type MessageRow } from './protocol';
import { SessionStream } from './session';

const testdata = join(__dirname, '../../../../pkg/events/testdata');
const read = (dir: string) =>
  readdirSync(join(testdata, dir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ name: f, value: JSON.parse(readFileSync(join(testdata, dir, f), 'utf8')) }));

describe('golden chat events', () => {
  const goldens = read('chat');
  it('finds them', () => expect(goldens.length).toBeGreaterThan(10));
  for (const g of goldens) {
    it(`applies ${g.name}`, () => {
      const ev = g.value as ChatEvent;
      const frame = parseServerFrame(JSON.stringify({ type: 'event', session: ev.chatSessionId, cursor: 7, event: ev }));
      expect(frame?.type).toBe('event');
      const s = new SessionStream(ev.chatSessionId);
      expect(s.apply(frame!)).toBe(true);
      expect(s.cursor).toBe(7);
      expect(s.apply(frame!)).toBe(false); // the same cursor again is a duplicate
    });
  }
});

describe('golden messages', () => {
  for (const g of read('output').filter((x) => ['user', 'assistant', 'reasoning', 'compact_boundary'].includes(x.value.type))) {
    it(`builds an item from ${g.name}`, () => {
      const row: MessageRow = { rowId: 'r1', message: g.value, createdAt: '2026-05-01T12:00:00Z' };
      const items = build([row], new Map(), []);
      if (g.value.type === 'user' && g.value.synthetic) expect(items).toEqual([]);
      else if (g.value.parent?.toolUseId) expect(items).toEqual([]); // a sub-agent's message shows under its call
      else expect(items.length).toBeGreaterThan(0);
    });
  }
});

// Broken frames are skipped, never thrown on: every golden event with one
// field removed, retyped or nulled either parses to a frame the stream
// applies without an exception, or is refused.
describe('broken frames', () => {
  const goldens = read('chat');
  const spoil = [undefined, null, 7, 'x', [], {}, true];
  const paths = (v: unknown, prefix: string[] = []): string[][] =>
    typeof v === 'object' && v !== null ? Object.entries(v).flatMap(([k, x]) => [[...prefix, k], ...paths(x, [...prefix, k])]) : [];
  it('never break the stream', () => {
    let refused = 0;
    let applied = 0;
    for (const g of goldens) {
      const frame = { type: 'event', session: g.value.chatSessionId, cursor: 3, event: g.value };
      for (const p of paths(frame)) {
        for (const bad of spoil) {
          const copy = JSON.parse(JSON.stringify(frame));
          let at = copy;
          for (const k of p.slice(0, -1)) at = at[k];
          at[p.at(-1)!] = bad;
          const f = parseServerFrame(JSON.stringify(copy));
          if (!f) {
            refused++;
            continue;
          }
          const s = new SessionStream(g.value.chatSessionId);
          const what = `${g.name} with ${p.join('.')} = ${JSON.stringify(bad)}`;
          expect(() => s.apply(f), what).not.toThrow();
          expect(() => build(s.path, s.turns, s.pending), what).not.toThrow();
          applied++;
        }
      }
    }
    expect(refused).toBeGreaterThan(0);
    expect(applied).toBeGreaterThan(0);
  });
  it('refuses what is not a frame', () => {
    for (const text of ['', 'null', '[]', '"event"', '{"type":"event"}', '{"type":"reply"}', '{"type":"snapshot","session":"s","cursor":1,"snapshot":{}}', '{"type":"bye","reason":1}']) {
      expect(parseServerFrame(text), text).toBeNull();
    }
  });
});
