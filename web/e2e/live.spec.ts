import type { Page } from '@playwright/test';
import { expect, openChat, send, test, watch } from './fixtures';
import { startProxy } from './proxy';

interface Seen {
  cursors: number[];
  types: string[];
  snapshots: number;
  reloads: number;
  cursor: number;
}

async function seen(page: Page): Promise<Seen> {
  return page.evaluate(() => {
    const s = (window as unknown as { __clopen: { session: { stream: { frames: { cursor: number; type: string }[]; snapshots: number; reloads: number; cursor: number } } } }).__clopen.session.stream;
    return { cursors: s.frames.map((f) => f.cursor), types: s.frames.map((f) => f.type), snapshots: s.snapshots, reloads: s.reloads, cursor: s.cursor };
  });
}

const transcript = (page: Page) => page.locator('.prompt, .answer, [data-tool], [data-turn]').allInnerTexts();

test('two tabs of one session stay in step: what one sends and answers, the other shows', async ({ page, context, app, project, problems }) => {
  const s = await app.session(project.id, 'scripted/ask');
  const other = await context.newPage();
  watch(other, problems);
  await openChat(page, app, s);
  await openChat(other, app, s);

  await send(page, 'Set it up.');
  // The other tab sees the prompt, the streamed text and the question…
  await expect(other.locator('.prompt .bubble')).toHaveText('Set it up.');
  const question = other.getByRole('form', { name: "The agent's question" });
  await expect(question).toContainText('Which database should the service use?');
  await expect(page.getByRole('form', { name: "The agent's question" })).toBeVisible();
  // …and answers it: the question goes away in both.
  await question.getByRole('radio', { name: /Postgres/ }).check();
  await question.getByRole('button', { name: 'Answer' }).click();
  await expect(page.getByRole('form', { name: "The agent's question" })).toHaveCount(0);
  for (const p of [page, other]) {
    await expect(p.locator('.answer').last()).toContainText('Thanks, I will go with your choice.');
    await expect(p.locator('[data-turn]').last()).toHaveAttribute('data-state', 'completed');
  }
  expect(await transcript(other)).toEqual(await transcript(page));
  expect((await seen(other)).cursors).toEqual((await seen(page)).cursors);
});

test('after the connection drops mid-turn, the page resumes from its cursor: every frame once, as a tab that stayed connected saw them', async ({ page, context, app, project, problems }) => {
  const proxy = await startProxy(app.url);
  try {
    // A turn long enough to outlast the outage whatever the machine's load
    // (about a minute); the test cancels it once the page has resumed.
    const s = await app.session(project.id, 'scripted/hello?deltas=1500&delay=40ms');
    const steady = await context.newPage();
    watch(steady, problems);
    // This tab reaches Clopen through the proxy; the steady one directly.
    await page.goto(proxy.url + app.chatPath(s));
    await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'open');
    await openChat(steady, app, s);

    await send(page, 'A long answer, please.');
    await expect(page.locator('[data-streaming]')).toBeVisible();
    await expect.poll(async () => (await seen(page)).cursors.length, { intervals: [50] }).toBeGreaterThan(20);
    const atDrop = (await seen(page)).cursors.length;
    proxy.drop();
    await expect(page.locator('[data-connection]')).not.toHaveAttribute('data-connection', 'open');
    // Cut off, the page gets nothing while the turn goes on…
    const cut = (await seen(page)).cursors.length;
    await page.waitForTimeout(700);
    expect((await seen(page)).cursors.length, 'frames while the connection is down').toBe(cut);
    // …until it reconnects and asks for what came after its cursor.
    proxy.restore();
    await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'open', { timeout: 30_000 });
    await expect.poll(async () => (await seen(page)).cursors.length).toBeGreaterThan(cut + 10);

    await app.api('POST', `/v1/sessions/${s.id}/cancel`, {});
    for (const p of [page, steady]) await expect(p.locator('[data-turn]').last()).toHaveAttribute('data-state', 'cancelled');
    const a = await seen(page);
    const b = await seen(steady);
    expect(b.cursors.length, 'the steady tab saw frames the other missed').toBeGreaterThan(atDrop + 10);
    expect(a.cursors, 'the resumed tab got exactly the frames the steady one did').toEqual(b.cursors);
    expect(a.types).toEqual(b.types);
    expect(new Set(a.cursors).size, 'no frame twice').toBe(a.cursors.length);
    expect(a.snapshots, 'resumed from the cursor, not from a new snapshot').toBe(1);
    expect(a.reloads).toBe(0);
    expect(await transcript(page)).toEqual(await transcript(steady));
  } finally {
    await proxy.close();
  }
});

test("a cursor the server no longer holds: the page reloads from a snapshot, and goes on", async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/tools');
  await openChat(page, app, s);
  await send(page, 'First turn.');
  await expect(page.locator('[data-turn]').last()).toHaveAttribute('data-state', 'completed');
  const before = await transcript(page);
  // A cursor the server's buffer does not reach (as after a long sleep, or
  // a buffer that aged out) — then the connection drops.
  await page.evaluate(() => {
    const w = window as unknown as { __clopen: { session: { stream: { cursor: number } }; socket: { drop(r: string): void } } };
    w.__clopen.session.stream.cursor = 9_000_000_000;
    w.__clopen.socket.drop('test: a stale cursor');
  });
  await expect.poll(async () => (await seen(page)).reloads).toBe(1);
  await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'open');
  expect(await transcript(page)).toEqual(before);
  expect((await seen(page)).cursor, 'the snapshot set a real cursor').toBeLessThan(9_000_000_000);
  await send(page, 'Second turn.');
  await expect(page.locator('[data-turn]')).toHaveCount(2);
  await expect(page.locator('[data-turn]').last()).toHaveAttribute('data-state', 'completed');
});
