// Fixtures of the browser suite. `app` is the running Clopen: its URL and
// a REST client on the development key (for setting up what a test needs
// and checking what the browser did). `project` is a fresh project per
// test, so tests running in parallel never see each other's sessions.
// Every page fails its test on a script error, a Content-Security-Policy
// violation or an unexpected console error.

import { expect, test as base, type Page } from '@playwright/test';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export { expect };

export interface Api {
  (method: string, path: string, body?: unknown): Promise<any>;
}

export interface App {
  url: string;
  key: string;
  api: Api;
  /** session makes a session in project with the given scripted model. */
  session(projectId: string, model?: string, engine?: string): Promise<{ id: string; projectId: string }>;
  /** waitIdle waits until a session has no active run. */
  waitIdle(sessionId: string, timeoutMs?: number): Promise<void>;
  /** chatPath is the address of a session's chat. */
  chatPath(s: { id: string; projectId: string }): string;
}

const here = dirname(fileURLToPath(import.meta.url));
export const screenshots = resolve(here, '../../docs/screenshots');

/** shot saves a screenshot of the page into docs/screenshots. */
export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshots, { recursive: true });
  await page.screenshot({ path: join(screenshots, `${name}.png`) });
}

function makeApp(): App {
  const url = process.env.CLOPEN_E2E_URL;
  const keyFile = process.env.CLOPEN_E2E_KEY_FILE;
  if (!url || !keyFile) throw new Error('CLOPEN_E2E_URL is not set: run the suite with npm run e2e (global-setup starts clopen dev)');
  const key = readFileSync(keyFile, 'utf8').trim();
  const api: Api = async (method, path, body) => {
    const r = await fetch(url + path, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    url,
    key,
    api,
    async session(projectId, model = 'scripted/hello', engine = 'scripted') {
      return api('POST', `/v1/projects/${projectId}/sessions`, { title: 'New session', engine, model });
    },
    async waitIdle(sessionId, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const s = await api('GET', `/v1/sessions/${sessionId}`);
        if (!s.activeRunId && s.queuedRuns === 0) return;
        if (Date.now() > deadline) throw new Error(`session ${sessionId} still has run ${s.activeRunId}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    chatPath: (s) => `/projects/${s.projectId}/sessions/${s.id}`,
  };
}

/** watch fails the test on what a healthy page never does. A call the
 *  API refuses with one of the statuses in refusals (ones the test provokes
 *  on purpose) is not a problem. */
export function watch(page: Page, problems: string[], refusals: number[] = []): void {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    const text = m.text();
    const status = Number(/status of (\d{3})/.exec(text)?.[1]);
    if (/Content Security Policy|Refused to/.test(text)) problems.push(`CSP: ${text}`);
    else if (m.type() === 'error' && !refusals.includes(status) && !/status of 40[14]|WebSocket connection to .* failed|ERR_CONNECTION/.test(text)) {
      problems.push(`console error: ${text}`);
    }
  });
}

export const test = base.extend<{ app: App; project: { id: string; name: string }; problems: string[]; refusals: number[] }>({
  // The statuses a test's page is expected to be refused with
  // (test.use({ refusals: [409] })).
  refusals: [[], { option: true }],
  app: async ({}, use) => {
    await use(makeApp());
  },
  project: async ({ app }, use) => {
    const name = `acme-app-${Math.random().toString(36).slice(2, 7)}`;
    await use(await app.api('POST', '/v1/projects', { name }));
  },
  problems: async ({}, use) => {
    const problems: string[] = [];
    await use(problems);
    expect(problems, 'the page logged problems').toEqual([]);
  },
  page: async ({ page, problems, refusals }, use) => {
    watch(page, problems, refusals);
    await use(page);
  },
});

/** openChat opens a session's chat and waits until it is live. */
export async function openChat(page: Page, app: App, s: { id: string; projectId: string }): Promise<void> {
  await page.goto(app.url + app.chatPath(s));
  await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'open');
  await expect(page.getByText('Loading the conversation')).toHaveCount(0);
}

/** send types a prompt and sends it with Enter. */
export async function send(page: Page, text: string): Promise<void> {
  await page.locator('#prompt').fill(text);
  await page.locator('#prompt').press('Enter');
  await expect(page.locator('#prompt')).toHaveValue('');
}

/** tool is the card of the tool call named name (the first, or the nth). */
export function tool(page: Page, name: string, nth = 0) {
  return page.locator(`[data-tool="${name}"]`).nth(nth);
}

/** footer is the footer of the last turn. */
export function lastTurn(page: Page) {
  return page.locator('[data-turn]').last();
}

/** saved is the success line of a settings section. */
export function saved(page: Page) {
  return page.locator('section p.done');
}
