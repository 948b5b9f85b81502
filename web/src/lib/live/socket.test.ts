import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveSocket, RequestError } from './socket';

// A WebSocket double: the test plays the server.
class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  sent: Record<string, unknown>[] = [];
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close(code = 1000, reason = '') {
    this.onclose?.({ code, reason });
  }
  serverSends(v: unknown) {
    this.onmessage?.({ data: JSON.stringify(v) });
  }
}

const timing = { heartbeatMs: 1000, heartbeatTimeoutMs: 500, requestTimeoutMs: 2000, backoffMs: [100, 200, 400] };
const open = () => {
  const ws = FakeSocket.all.at(-1)!;
  ws.onopen?.();
  return ws;
};

describe('LiveSocket', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    FakeSocket.all = [];
  });
  afterEach(() => vi.useRealTimers());

  const make = () => new LiveSocket('ws://x/v1/ws', timing, (u) => new FakeSocket(u) as unknown as WebSocket);

  it('matches replies to requests by id, and rejects a refusal with its code', async () => {
    const s = make();
    s.start();
    const ws = open();
    const p = s.request({ op: 'join', session: 's1' });
    const q = s.request({ op: 'cancel', session: 's1' });
    ws.serverSends({ type: 'reply', id: ws.sent[1]!.id, ok: false, error: { status: 404, code: 'not_found', message: 'no session' } });
    ws.serverSends({ type: 'reply', id: ws.sent[0]!.id, ok: true, data: { session: 's1', from: 5 } });
    await expect(p).resolves.toEqual({ session: 's1', from: 5 });
    await expect(q).rejects.toBeInstanceOf(RequestError);
    s.stop();
  });

  it('reconnects after a drop, with backoff, and tells its listeners again', async () => {
    const s = make();
    let opens = 0;
    s.onOpen(() => opens++);
    s.start();
    open();
    expect(opens).toBe(1);
    FakeSocket.all[0]!.close(1006, '');
    expect(s.state).toBe('reconnecting');
    await vi.advanceTimersByTimeAsync(100);
    expect(FakeSocket.all).toHaveLength(2);
    open();
    expect(opens).toBe(2);
    expect(s.state).toBe('open');
    s.stop();
  });

  it('treats a socket that does not answer its heartbeat as dead', async () => {
    const s = make();
    s.start();
    open();
    await vi.advanceTimersByTimeAsync(1000 + 500 + 10);
    expect(s.state).toBe('reconnecting');
    expect(s.lastDrop).toBe('no answer to a heartbeat');
    s.stop();
  });

  it('fails requests in flight when the connection drops', async () => {
    const s = make();
    s.start();
    const ws = open();
    const p = s.request({ op: 'send', session: 's', text: 'x' });
    ws.close(1006, '');
    await expect(p).rejects.toThrow('connection lost');
    s.stop();
  });
});
