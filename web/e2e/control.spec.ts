import type { Page } from '@playwright/test';
import { expect, lastTurn, openChat, send, shot, test, tool } from './fixtures';

/** statusesSeen records every text the composer's status line shows. */
async function recordStatuses(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __statuses: string[] };
    w.__statuses = [];
    const el = document.getElementById('composer-status')!;
    new MutationObserver(() => w.__statuses.push(el.textContent?.trim() ?? '')).observe(el, { subtree: true, childList: true, characterData: true });
  });
}

async function frames(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    (window as unknown as { __clopen: { session: { stream: { frames: { type: string }[] } } } }).__clopen.session.stream.frames.map((f) => f.type),
  );
}

test('AskUserQuestion: its options answered from the page', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/ask');
  await openChat(page, app, s);
  await send(page, 'Set up the service.');
  const form = page.getByRole('form', { name: "The agent's question" });
  await expect(form).toContainText('Which database should the service use?');
  await expect(page.locator('#composer-status')).toContainText('Waiting for your answer');
  await shot(page, 'chat-question');
  await form.getByRole('radio', { name: /SQLite/ }).check();
  await form.getByRole('button', { name: 'Answer' }).click();
  await expect(form).toHaveCount(0);
  await expect(page.locator('.answer').last()).toContainText('Thanks, I will go with your choice.');
  await expect(tool(page, 'AskUserQuestion')).toContainText('"Which database should the service use?"="SQLite"');
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed');
});

test('a question that takes several answers gets them all', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/ask_multi');
  await openChat(page, app, s);
  await send(page, 'Check it.');
  const form = page.getByRole('form', { name: "The agent's question" });
  await expect(form.getByRole('checkbox')).toHaveCount(3);
  await form.getByRole('checkbox', { name: /Unit tests/ }).check();
  await form.getByRole('checkbox', { name: /Fuzz/ }).check();
  await form.getByRole('button', { name: 'Answer' }).click();
  await expect(page.locator('.answer').last()).toContainText('Running the checks you picked.');
  await expect(tool(page, 'AskUserQuestion')).toContainText('"Which checks should run?"="Unit tests, Fuzz"');
});

test('a permission prompt denied: the call is refused and the turn goes on', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/permission');
  await openChat(page, app, s);
  await send(page, 'Run the tests.');
  const bash = tool(page, 'Bash');
  const prompt = bash.getByRole('group', { name: 'Permission for Bash' });
  await expect(prompt).toContainText('go test ./...');
  await prompt.getByRole('button', { name: 'Deny' }).click();
  await expect(bash).toHaveAttribute('data-status', 'error');
  await bash.getByRole('button').first().click();
  await expect(bash).toContainText('Permission denied: the user declined this tool call');
  await expect(page.locator('.answer').last()).toContainText('Done.');
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed');
});

test('cancel: the turn shows cancelling, then cancelled', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/slow');
  await openChat(page, app, s);
  await recordStatuses(page);
  await send(page, 'Take your time.');
  await expect(page.locator('[data-streaming]')).toContainText('one word at a time');
  await page.getByRole('button', { name: 'Cancel' }).click();
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'cancelled');
  await expect(lastTurn(page)).toContainText('Cancelled');
  const seen = await frames(page);
  const cancelling = seen.indexOf('chat:run-state:cancelling');
  expect(cancelling, `frames ${seen.join(' ')}`).toBeGreaterThan(0);
  expect(seen.indexOf('chat:cancelled')).toBeGreaterThan(cancelling);
  const statuses = await page.evaluate(() => (window as unknown as { __statuses: string[] }).__statuses);
  expect(statuses).toContain('Cancelling…');
  await expect(page.getByRole('button', { name: 'Cancel' })).toHaveCount(0);
  // The text streamed before the cancel is kept, marked interrupted.
  await expect(page.locator('.answer').last()).toContainText('one word at a time');
});

test('interrupt: the turn stops, and the session takes the next prompt', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/slow');
  await openChat(page, app, s);
  await send(page, 'Take your time.');
  await expect(page.locator('[data-streaming]')).toContainText('one word at a time');
  await page.getByRole('button', { name: 'Interrupt' }).click();
  await expect(lastTurn(page)).toContainText('Interrupted');
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed');
  await page.getByLabel('Model').selectOption('scripted/hello');
  await send(page, 'Now something short.');
  await expect(page.locator('.answer').last()).toContainText('I am the scripted engine');
});

test('a prompt sent while a turn runs is queued, shown, and runs after it', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/slow');
  await openChat(page, app, s);
  await send(page, 'Take your time.');
  await expect(page.locator('[data-streaming]')).toBeVisible();
  await page.locator('#prompt').fill('And then this, please.');
  await expect(page.getByRole('button', { name: 'Queue' })).toBeVisible();
  await page.locator('#prompt').press('Enter');
  const queued = page.getByRole('list', { name: 'Queued prompts' });
  await expect(queued).toContainText('And then this, please.');
  await shot(page, 'chat-queued');
  await page.getByRole('button', { name: 'Interrupt' }).click();
  await expect(queued).toHaveCount(0);
  await expect(page.locator('.prompt .bubble').last()).toHaveText('And then this, please.');
  await page.getByRole('button', { name: 'Cancel' }).click();
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'cancelled');
});
