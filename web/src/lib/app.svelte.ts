// The app's shared state: who is signed in, the tab's live connection, the
// projects and their sessions. Views read it; the functions here are the
// only ones that change it.

import { api, ApiError, ok, onUnauthorized, type Me, type Project, type Session } from './api/client';
import { LiveSocket, socketURL, type ConnectionState } from './live/socket';
import type { ServerFrame } from './live/protocol';
import { notifyFrame } from './notify';

const signedOutKey = 'clopen.signedOut';

export const auth = $state({
  status: 'checking' as 'checking' | 'signed-in' | 'signed-out',
  me: null as Me | null,
  devSignIn: false,
  error: '',
});

export const live = $state({ state: 'connecting' as ConnectionState, lastDrop: '', retryAt: 0 });

export const workspace = $state({
  projects: [] as Project[],
  projectsLoaded: false,
  sessions: [] as Session[],
  sessionsOf: '',
  query: '',
  error: '',
});

let socket: LiveSocket | null = null;

/** theSocket is the tab's live connection (there is one once signed in). */
export function theSocket(): LiveSocket {
  if (!socket) throw new Error('not signed in');
  return socket;
}

/** boot finds out whether the browser has a session; under clopen dev, on
 *  this machine, it signs in as the development user without asking
 *  (unless the user signed out in this browser). */
export async function boot(): Promise<void> {
  onUnauthorized(() => {
    if (auth.status === 'signed-in') expire();
  });
  try {
    const ws = await ok(api.GET('/v1/session'));
    auth.devSignIn = ws.devSignIn;
    if (ws.signedIn) {
      const me = await meOrNull();
      if (me) return signedIn(me);
    }
    if (ws.devSignIn && localStorage.getItem(signedOutKey) !== '1') {
      return signedIn(await ok(api.POST('/v1/session/dev')));
    }
  } catch (e) {
    auth.error = e instanceof Error ? e.message : String(e);
  }
  auth.status = 'signed-out';
}

async function meOrNull(): Promise<Me | null> {
  try {
    return await ok(api.GET('/v1/me'));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

export async function signIn(apiKey: string): Promise<void> {
  auth.error = '';
  signedIn(await ok(api.POST('/v1/session', { body: { apiKey } })));
}

export async function devSignIn(): Promise<void> {
  auth.error = '';
  signedIn(await ok(api.POST('/v1/session/dev')));
}

export async function signOut(): Promise<void> {
  await ok(api.DELETE('/v1/session')).catch(() => {});
  localStorage.setItem(signedOutKey, '1');
  stopLive();
  auth.me = null;
  auth.status = 'signed-out';
}

function expire(): void {
  stopLive();
  auth.me = null;
  auth.status = 'signed-out';
  auth.error = 'Your session ended; sign in again.';
}

function signedIn(me: Me): void {
  localStorage.removeItem(signedOutKey);
  auth.me = me;
  auth.status = 'signed-in';
  startLive();
}

function startLive(): void {
  if (socket) return;
  socket = new LiveSocket(socketURL());
  const sync = () => {
    live.state = socket!.state;
    live.lastDrop = socket!.lastDrop;
    live.retryAt = socket!.retryAt;
  };
  socket.onState(sync);
  socket.onFrame((f: ServerFrame) => {
    notifyFrame(f);
    refreshOnFinish(f);
  });
  socket.start();
  sync();
  exposeForTests();
}

function stopLive(): void {
  socket?.stop();
  socket = null;
}

export async function loadProjects(): Promise<void> {
  try {
    workspace.projects = (await ok(api.GET('/v1/projects'))).projects;
    workspace.error = '';
  } catch (e) {
    workspace.error = e instanceof Error ? e.message : String(e);
  } finally {
    workspace.projectsLoaded = true;
  }
}

/** loadSessions lists a project's sessions, newest first, matching the
 *  search query when there is one. */
export async function loadSessions(projectId: string): Promise<void> {
  const q = workspace.query.trim();
  try {
    const r = await ok(api.GET('/v1/projects/{id}/sessions', {
      params: { path: { id: projectId }, query: q ? { q, limit: 200 } : { limit: 200 } },
    }));
    if (workspace.query.trim() !== q) return; // a newer search is on its way
    workspace.sessions = r.sessions;
    workspace.sessionsOf = projectId;
  } catch (e) {
    workspace.error = e instanceof Error ? e.message : String(e);
  }
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

// refreshOnFinish lists the sessions again when one of them finished a turn
// (its head title, summary and running mark changed).
function refreshOnFinish(f: ServerFrame): void {
  if (f.type !== 'event' || f.event.type !== 'chat:stream-finished') return;
  const project = workspace.sessionsOf;
  if (!project || !workspace.sessions.some((s) => s.id === f.event.chatSessionId)) return;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => void loadSessions(project), 300);
}

/** exposeForTests lets the browser tests reach the live connection (to drop
 *  it as a network failure would, and to compare frames between tabs). */
function exposeForTests(): void {
  (window as unknown as { __clopen?: unknown }).__clopen = { socket };
}
