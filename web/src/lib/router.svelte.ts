// A small client-side router over the History API: the gateway answers
// every path that is not the API's with the app, and the app shows the view
// the path names.

export type Route =
  | { name: 'home' }
  | { name: 'projects' }
  | { name: 'project'; projectId: string }
  | { name: 'session'; projectId: string; sessionId: string }
  | { name: 'settings'; section: string }
  | { name: 'notfound'; path: string };

export function parse(path: string): Route {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { name: 'home' };
  if (parts[0] === 'projects') {
    if (parts.length === 1) return { name: 'projects' };
    if (parts.length === 2) return { name: 'project', projectId: parts[1]! };
    if (parts.length === 4 && parts[2] === 'sessions') return { name: 'session', projectId: parts[1]!, sessionId: parts[3]! };
  }
  if (parts[0] === 'settings' && parts.length <= 2) return { name: 'settings', section: parts[1] ?? 'skills' };
  return { name: 'notfound', path };
}

export const router = $state({ route: parse(typeof location === 'undefined' ? '/' : location.pathname) });

/** navigate shows path, adding it to the history unless replace is set. */
export function navigate(path: string, replace = false): void {
  if (path === location.pathname) return;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  router.route = parse(path);
}

export function sessionPath(projectId: string, sessionId: string): string {
  return `/projects/${encodeURIComponent(projectId)}/sessions/${encodeURIComponent(sessionId)}`;
}

export function projectPath(projectId: string): string {
  return `/projects/${encodeURIComponent(projectId)}`;
}

if (typeof window !== 'undefined') {
  window.addEventListener('popstate', () => (router.route = parse(location.pathname)));
}

/** link is an action for <a href> elements: a plain click navigates in the
 *  app; a modified click (new tab) is left to the browser. */
export function link(node: HTMLAnchorElement) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const href = node.getAttribute('href');
    if (!href || !href.startsWith('/')) return;
    e.preventDefault();
    navigate(href);
  };
  node.addEventListener('click', onClick);
  return { destroy: () => node.removeEventListener('click', onClick) };
}
