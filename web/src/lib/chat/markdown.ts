// Markdown for saved answers: rendered once per message with marked, then
// sanitised with DOMPurify before it reaches the page (an agent's text is
// untrusted). Inline styles are dropped (the CSP would refuse them anyway)
// and links open in a new tab without a referrer or an opener.

import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({ gfm: true, breaks: false, async: false });

let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.getAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  });
}

const cache = new Map<string, string>();

/** render returns the sanitised HTML of markdown text. */
export function render(text: string): string {
  const hit = cache.get(text);
  if (hit !== undefined) return hit;
  hook();
  const html = DOMPurify.sanitize(marked.parse(text) as string, {
    FORBID_ATTR: ['style'],
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    ALLOW_DATA_ATTR: false,
  });
  if (cache.size > 500) cache.clear();
  cache.set(text, html);
  return html;
}
