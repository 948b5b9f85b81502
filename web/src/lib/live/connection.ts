// SessionConnection joins one chat session over the tab's LiveSocket and
// feeds its frames to a SessionStream: on every (re)connection it joins
// from the stream's cursor, so the server replays exactly the frames the
// tab missed (or, when the cursor is too old, sends a snapshot to reload
// from). It is also how the tab acts on the session: send, cancel,
// interrupt, answer.

import type { LiveSocket } from './socket';
import type { EngineType, RunInfo, ServerFrame } from './protocol';
import { SessionStream } from './session';

/** Selection is the engine choice a send carries. */
export interface Selection {
  engine?: EngineType;
  model?: string;
  reasoningEffort?: string;
}

export interface SendReply {
  runId: string;
  queued: boolean;
  queuedReason?: string;
}

export class SessionConnection {
  readonly stream: SessionStream;
  /** The latest join or replay failure, for the view to show. */
  error = '';
  private offs: (() => void)[] = [];
  private joining = false;

  constructor(
    private readonly socket: LiveSocket,
    readonly sessionId: string,
    private readonly loadRuns: () => Promise<RunInfo[]>,
  ) {
    this.stream = new SessionStream(sessionId);
  }

  start(): void {
    this.offs.push(this.socket.onFrame((f) => this.onFrame(f)));
    this.offs.push(this.socket.onOpen(() => void this.join()));
  }

  stop(): void {
    for (const off of this.offs) off();
    this.offs = [];
    if (this.socket.state === 'open') this.socket.request({ op: 'leave', session: this.sessionId }).catch(() => {});
  }

  /** join asks for the frames after the stream's cursor, or a snapshot when
   *  it has none; then it refreshes the turns' usage and the queue. */
  private async join(): Promise<void> {
    if (this.joining) return;
    this.joining = true;
    try {
      const cursor = this.stream.cursor > 0 ? this.stream.cursor : undefined;
      await this.socket.request({ op: 'join', session: this.sessionId, cursor });
      this.error = '';
      this.stream.loadRuns(await this.loadRuns());
    } catch (e) {
      this.error = `Could not join the session: ${e instanceof Error ? e.message : String(e)}`;
      this.stream.touch();
    } finally {
      this.joining = false;
    }
  }

  private onFrame(f: ServerFrame): void {
    if (f.type === 'bye') return; // the socket reconnects; join resumes
    this.stream.apply(f);
    if (this.stream.needsSnapshot) {
      // The messages changed other than by appending (a restore): start
      // over from a snapshot.
      this.stream.cursor = 0;
      this.stream.needsSnapshot = false;
      void this.join();
    }
  }

  async send(text: string, sel: Selection): Promise<SendReply> {
    const reply = await this.socket.request<SendReply>({ op: 'send', session: this.sessionId, text, ...sel,
      clientRequestId: crypto.randomUUID() });
    if (reply.queued && !this.stream.path.some((r) => r.runId === reply.runId) && reply.runId !== this.stream.activeRun?.id) {
      this.stream.queued(reply.runId, text);
    }
    return reply;
  }

  cancel(run?: string): Promise<unknown> {
    return this.socket.request({ op: 'cancel', session: this.sessionId, run });
  }

  interrupt(): Promise<unknown> {
    return this.socket.request({ op: 'interrupt', session: this.sessionId });
  }

  answer(toolUseId: string, a: { answers?: Record<string, string>; decision?: 'allow' | 'deny'; message?: string }): Promise<unknown> {
    return this.socket.request({ op: 'answer', session: this.sessionId, toolUseId, ...a });
  }
}
