// Browser notifications: while the tab is hidden, a turn that finishes or
// waits for the user's answer, in the joined session or any session of the
// user's projects, raises the browser's own notification (once the user has
// allowed them). Clicking one brings the tab forward.

import type { ChatEvent, ServerFrame } from './live/protocol';

/** permission is the browser's notification permission, or 'unsupported'. */
export function permission(): NotificationPermission | 'unsupported' {
  return typeof Notification === 'undefined' ? 'unsupported' : Notification.permission;
}

export async function askPermission(): Promise<NotificationPermission | 'unsupported'> {
  if (typeof Notification === 'undefined') return 'unsupported';
  return Notification.requestPermission();
}

const titles = new Map<string, string>(); // session id → title, for the text

/** nameSession tells notifications what to call a session. */
export function nameSession(id: string, title: string): void {
  titles.set(id, title);
}

const recent = new Map<string, number>(); // dedupe: the joined session's event and the project notice

/** notifyFrame raises a notification for a frame that warrants one. */
export function notifyFrame(f: ServerFrame): void {
  if (f.type !== 'event') return;
  const text = describe(f.event);
  if (!text || typeof document === 'undefined' || document.visibilityState !== 'hidden') return;
  if (permission() !== 'granted') return;
  const tag = `${f.event.chatSessionId}:${f.event.runId ?? ''}:${text}`;
  const now = Date.now();
  if ((recent.get(tag) ?? 0) > now - 10_000) return;
  recent.set(tag, now);
  const n = new Notification(titles.get(f.event.chatSessionId) || 'Clopen', { body: text, tag });
  n.onclick = () => {
    window.focus();
    n.close();
  };
}

function describe(ev: ChatEvent): string {
  switch (ev.type) {
    case 'chat:stream-finished':
      switch (ev.data.status) {
        case 'completed':
          return 'The turn finished.';
        case 'error':
          return 'The turn failed.';
        case 'cancelled':
          return 'The turn was cancelled.';
        case 'lost':
          return 'The turn was lost: its worker went away.';
      }
      return '';
    case 'chat:waiting-input':
      return 'Waiting for your answer.';
    case 'chat:run-state':
      return ev.data.state === 'awaiting_input' ? 'Waiting for your answer.' : '';
  }
  return '';
}
