import { expect, openChat, send, shot, test } from './fixtures';

const unique = () => Math.random().toString(36).slice(2, 8);

test('projects: created, renamed, and deleted after a confirmation', async ({ page, app }) => {
  const name = `Project ${unique()}`;
  await page.goto(`${app.url}/projects`);
  await page.getByLabel("New project's name").fill(name);
  await page.getByRole('button', { name: 'Create' }).click();
  const card = page.locator('li.card', { hasText: name });
  await expect(card).toBeVisible();
  await card.getByRole('button', { name: 'Rename' }).click();
  await page.getByLabel('New name').fill(`${name} renamed`);
  await page.getByRole('button', { name: 'Save' }).click();
  const renamed = page.locator('li.card', { hasText: `${name} renamed` });
  await expect(renamed).toBeVisible();
  await renamed.getByRole('button', { name: 'Delete' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText('every one of its sessions will be deleted');
  await dialog.getByRole('button', { name: 'Keep it' }).click();
  await expect(renamed).toBeVisible();
  await renamed.getByRole('button', { name: 'Delete' }).click();
  await dialog.getByRole('button', { name: 'Delete project' }).click();
  await expect(renamed).toHaveCount(0);
  const all = await app.api('GET', '/v1/projects');
  expect(all.projects.map((p: { name: string }) => p.name)).not.toContain(`${name} renamed`);
});

test('sessions: newest first with head title and summary, searched by title, renamed, deleted', async ({ page, app, project }) => {
  const a = await app.session(project.id, 'scripted/hello');
  await app.api('PATCH', `/v1/sessions/${a.id}`, { title: 'Fix the parser' });
  const b = await app.session(project.id, 'scripted/hello');
  await openChat(page, app, b);
  await send(page, 'Explain the tokenizer');
  await app.waitIdle(b.id);
  const list = page.getByRole('list', { name: /Sessions of/ });
  await expect(list.getByRole('listitem')).toHaveCount(2);
  const first = list.getByRole('listitem').first();
  await expect(first).toContainText('Explain the tokenizer'); // the newest, by its head title
  await expect(first).toContainText('I am the scripted engine'); // and its summary
  await expect(list.getByRole('listitem').nth(1)).toContainText('Fix the parser');
  await shot(page, 'sessions');

  await page.getByLabel('Search sessions by title').fill('PARSER');
  await expect(list.getByRole('listitem')).toHaveCount(1);
  await expect(list).toContainText('Fix the parser');
  await page.getByLabel('Search sessions by title').fill('tokenizer');
  await expect(list.getByRole('listitem')).toHaveCount(1);
  await expect(list).toContainText('Explain the tokenizer');
  await page.getByLabel('Search sessions by title').fill('');
  await expect(list.getByRole('listitem')).toHaveCount(2);

  await list.getByRole('listitem').filter({ hasText: 'Fix the parser' }).hover();
  await list.getByRole('button', { name: 'Rename Fix the parser' }).click();
  await list.getByLabel('New title').fill('Fix the lexer');
  await list.getByLabel('New title').press('Enter');
  await expect(list).toContainText('Fix the lexer');
  await list.getByRole('listitem').filter({ hasText: 'Fix the lexer' }).hover();
  await list.getByRole('button', { name: 'Delete Fix the lexer' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete session' }).click();
  await expect(list.getByRole('listitem')).toHaveCount(1);
  await expect((await app.api('GET', `/v1/projects/${project.id}/sessions`)).sessions).toHaveLength(1);
});
