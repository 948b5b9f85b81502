// LiveSocket is the tab's one WebSocket to /v1/ws. It keeps the connection
// up: it reconnects with backoff after a drop, a bye or a missed heartbeat
// (a laptop that slept may hold a socket that is silently dead), and at once
// when the browser comes back online or the tab becomes visible. Requests
// wait for their reply by frame id. Whoever listens (the session stream)
// re-joins from its cursor on every open.

import { parseServerFrame, type APIError, type ClientFrame, type ServerFrame } from './protocol';

export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'offline';

export class RequestError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(e: APIError) {
    super(e.message);
    this.status = e.status;
    this.code = e.code;
  }
}

interface Pending {
  resolve: (data: unknown) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** Timing of the connection; tests shorten it. */
export interface SocketTiming {
  heartbeatMs: number;
  heartbeatTimeoutMs: number;
  requestTimeoutMs: number;
  backoffMs: readonly number[];
}

export const defaultTiming: SocketTiming = {
  heartbeatMs: 20_000,
  heartbeatTimeoutMs: 8_000,
  requestTimeoutMs: 20_000,
  backoffMs: [250, 1000, 2000, 4000, 8000],
};

type Listener<T> = (v: T) => void;

export class LiveSocket {
  state: ConnectionState = 'connecting';
  /** Why the last connection ended, for the connection indicator. */
  lastDrop = '';
  /** When the next reconnection attempt is due (ms since the epoch), 0 if none. */
  retryAt = 0;

  private ws: WebSocket | null = null;
  private pending = new Map<string, Pending>();
  private nextID = 1;
  private attempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private beatTimer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  private frameListeners = new Set<Listener<ServerFrame>>();
  private openListeners = new Set<Listener<void>>();
  private stateListeners = new Set<Listener<ConnectionState>>();
  /** Called with each raw frame and the time it arrived (performance.now()). */
  onRaw: ((text: string, at: number) => void) | null = null;

  constructor(
    private readonly url: string,
    private readonly timing: SocketTiming = defaultTiming,
    private readonly makeSocket: (url: string) => WebSocket = (u) => new WebSocket(u),
  ) {}

  /** start opens the connection and watches the browser's network and
   *  visibility to reconnect promptly. */
  start(): void {
    this.connect();
    if (typeof window !== 'undefined') {
      window.addEventListener('online', this.onWake);
      document.addEventListener('visibilitychange', this.onVisible);
    }
  }

  /** stop closes the connection for good. */
  stop(): void {
    this.closed = true;
    this.clearTimers();
    this.ws?.close(1000, 'leaving');
    this.ws = null;
    if (typeof window !== 'undefined') {
      window.removeEventListener('online', this.onWake);
      document.removeEventListener('visibilitychange', this.onVisible);
    }
    this.failPending(new Error('connection closed'));
  }

  onFrame(fn: Listener<ServerFrame>): () => void {
    this.frameListeners.add(fn);
    return () => this.frameListeners.delete(fn);
  }

  /** onOpen runs fn on every (re)connection, and now if open already. */
  onOpen(fn: Listener<void>): () => void {
    this.openListeners.add(fn);
    if (this.state === 'open') fn();
    return () => this.openListeners.delete(fn);
  }

  onState(fn: Listener<ConnectionState>): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  /** request sends a frame and resolves with its reply's data, or rejects
   *  with the server's error (RequestError) or a connection failure. */
  request<T = unknown>(frame: Omit<ClientFrame, 'id'>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.state !== 'open' || !this.ws) {
        reject(new Error('not connected: reconnecting'));
        return;
      }
      const id = String(this.nextID++);
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no reply to ${frame.op} in time`));
      }, this.timing.requestTimeoutMs);
      this.pending.set(id, { resolve: resolve as (d: unknown) => void, reject, timer });
      this.ws.send(JSON.stringify({ ...frame, id }));
    });
  }

  /** drop closes the current connection as a network failure would; the
   *  socket reconnects as after any drop. */
  drop(reason: string): void {
    this.lastDrop = reason;
    this.ws?.close(4000, reason.slice(0, 100));
  }

  private connect(): void {
    if (this.closed) return;
    this.setState(this.attempts === 0 ? 'connecting' : 'reconnecting');
    let ws: WebSocket;
    try {
      ws = this.makeSocket(this.url);
    } catch (e) {
      this.lastDrop = String(e);
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.attempts = 0;
      this.retryAt = 0;
      this.setState('open');
      this.startHeartbeat();
      for (const fn of this.openListeners) fn();
    };
    ws.onmessage = (m: MessageEvent) => {
      if (ws !== this.ws || typeof m.data !== 'string') return;
      this.onRaw?.(m.data, performance.now());
      const f = parseServerFrame(m.data);
      if (!f) return;
      if (f.type === 'reply' && f.id !== undefined) {
        const p = this.pending.get(f.id);
        if (p) {
          this.pending.delete(f.id);
          clearTimeout(p.timer);
          if (f.ok) p.resolve(f.data);
          else p.reject(new RequestError(f.error ?? { status: 500, code: 'internal', message: 'request failed' }));
        }
        return;
      }
      if (f.type === 'bye') this.lastDrop = f.reason;
      for (const fn of this.frameListeners) fn(f);
    };
    ws.onclose = (ev: CloseEvent) => {
      if (ws !== this.ws) return;
      this.ws = null;
      if (!this.lastDrop) this.lastDrop = ev.reason || `connection closed (${ev.code})`;
      this.clearTimers();
      this.failPending(new Error('connection lost'));
      this.scheduleRetry();
    };
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    const steps = this.timing.backoffMs;
    const base = steps[Math.min(this.attempts, steps.length - 1)] ?? 1000;
    this.attempts++;
    const delay = base / 2 + Math.random() * base / 2;
    this.retryAt = Date.now() + delay;
    this.setState(typeof navigator !== 'undefined' && navigator.onLine === false ? 'offline' : 'reconnecting');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.lastDrop = '';
      this.connect();
    }, delay);
  }

  private startHeartbeat(): void {
    this.beatTimer = setInterval(() => this.checkAlive(), this.timing.heartbeatMs);
  }

  /** checkAlive pings; a socket that does not answer in time is dead. */
  private checkAlive(): void {
    const ws = this.ws;
    if (!ws || this.state !== 'open') return;
    const timer = setTimeout(() => {
      if (ws === this.ws) this.drop('no answer to a heartbeat');
    }, this.timing.heartbeatTimeoutMs);
    this.request({ op: 'ping' }).then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
  }

  private onWake = (): void => {
    if (this.closed) return;
    if (this.state === 'open') {
      this.checkAlive();
      return;
    }
    if (!this.retryTimer) return; // a connection attempt is under way
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.attempts = 0;
    this.connect();
  };

  private onVisible = (): void => {
    if (document.visibilityState === 'visible') this.onWake();
  };

  private setState(s: ConnectionState): void {
    if (this.state === s) return;
    this.state = s;
    for (const fn of this.stateListeners) fn(s);
  }

  private clearTimers(): void {
    if (this.beatTimer) clearInterval(this.beatTimer);
    this.beatTimer = null;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private failPending(err: Error): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
  }
}

/** socketURL is the WebSocket address of the gateway that served the page. */
export function socketURL(loc: Location = location): string {
  return `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}/v1/ws`;
}
