// How the app names a session: its title, unless it is the placeholder a
// new session gets, then what its latest prompt was about.

import type { Session } from './api/client';

export const untitled = 'New session';

export function sessionLabel(s: Pick<Session, 'title' | 'headTitle'>): string {
  return s.title && s.title !== untitled ? s.title : s.headTitle || s.title || 'Untitled session';
}
