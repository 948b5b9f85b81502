import { expect, openChat, saved, send, shot, test, tool } from './fixtures';

const unique = () => Math.random().toString(36).slice(2, 8);

test("a project's permission layer: the effective result shows it, and the next turn is held to it", async ({ page, app, project }) => {
  await page.goto(`${app.url}/settings/permissions`);
  await page.getByLabel('Layer').selectOption('project');
  await page.locator('#perm-project').selectOption(project.id);
  await page.getByLabel('Deny (one rule a line)').fill('Bash');
  await page.getByRole('button', { name: 'Save layer' }).click();
  await expect(saved(page)).toContainText('Saved the project layer.');
  await page.locator('#eff-project').selectOption(project.id);
  await expect(page.locator('[data-effective]')).toContainText('Bash');
  await shot(page, 'settings-permissions');

  const s = await app.session(project.id, 'scripted/artifacts');
  await openChat(page, app, s);
  await send(page, 'Clean up.');
  const bash = tool(page, 'Bash');
  await expect(bash).toHaveAttribute('data-status', 'error');
  await bash.getByRole('button').first().click();
  await expect(bash).toContainText('denied');
  await expect(tool(page, 'Read')).toHaveAttribute('data-status', 'done');
});

test("a project's instructions reach its next turn", async ({ page, app, project }) => {
  const word = `MANGO-${unique()}`;
  await page.goto(`${app.url}/settings/instructions`);
  await page.locator('#instr-project-id').selectOption(project.id);
  await page.getByLabel("This project's, after the global ones").fill(`Always mention ${word}.`);
  await page.getByRole('button', { name: 'Save for the project' }).click();
  await expect(saved(page)).toContainText("Saved the project's instructions.");
  const s = await app.session(project.id, 'scripted/artifacts');
  await openChat(page, app, s);
  await send(page, 'Report.');
  await expect(page.getByRole('list', { name: 'Notices' })).toContainText(`Always mention ${word}.`);
});

test('providers and accounts: a credential goes in and never comes out', async ({ page, app }) => {
  const slug = `prov-${unique()}`;
  const secret = `sk-test-${unique()}${unique()}SECRET`;
  await page.goto(`${app.url}/settings/providers`);
  await page.getByRole('button', { name: 'New provider' }).click();
  await page.getByLabel('Engine').selectOption('codex');
  await page.locator('#pv-name').fill(`Provider ${slug}`);
  await page.locator('#pv-slug').fill(slug);
  await page.getByRole('button', { name: 'Add provider' }).click();
  await expect(saved(page)).toContainText('Added the provider.');
  const card = page.locator('.provider', { hasText: `Provider ${slug}` });
  await card.getByLabel('Account name').fill('work');
  await card.getByLabel('Credential').fill(secret);
  await card.getByRole('button', { name: 'Add account' }).click();
  await expect(saved(page)).toContainText('its credential is stored sealed');
  await expect(card.getByRole('row', { name: 'work' })).toContainText('set');
  expect(await page.content()).not.toContain(secret);
  const providers = await app.api('GET', '/v1/providers');
  const p = providers.providers.find((x: { slug: string }) => x.slug === slug);
  const accounts = JSON.stringify(await app.api('GET', `/v1/providers/${p.id}/accounts`));
  expect(accounts).not.toContain(secret);
  expect(accounts).toContain('"hasCredential":true');
  await shot(page, 'settings-providers');

  await card.getByRole('button', { name: 'Delete' }).first().click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete provider' }).click();
  await expect(page.locator('.provider', { hasText: `Provider ${slug}` })).toHaveCount(0);
});

test('subagents and profiles are created, and a project takes a default profile', async ({ page, app, project }) => {
  const sa = `reviewer-${unique()}`;
  await page.goto(`${app.url}/settings/subagents`);
  await page.getByRole('button', { name: 'New subagent' }).click();
  await page.locator('#sa-slug').fill(sa);
  await page.locator('#sa-name').fill(`Reviewer ${sa}`);
  await page.getByLabel('When to use it').fill('Reviews a change');
  await page.getByLabel('Instructions').fill('Review carefully.');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('row', { name: new RegExp(sa) })).toBeVisible();

  const name = `Profile ${unique()}`;
  await page.goto(`${app.url}/settings/profiles`);
  await page.getByRole('button', { name: 'New profile' }).click();
  await page.locator('#pr-name').fill(name);
  await page.getByRole('checkbox', { name: `Reviewer ${sa}` }).check();
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('row', { name: new RegExp(name) })).toContainText(`subagent ${sa}`);
  await page.locator('#default-project').selectOption(project.id);
  await page.getByLabel('Default', { exact: true }).selectOption({ label: name });
  await expect(saved(page)).toContainText('Saved the default profile.');
  const d = await app.api('GET', `/v1/projects/${project.id}/default-profile`);
  expect(d.profileId).not.toBe('');
});

test("the engines' readiness: ready ones with their versions, the others with why", async ({ page, app }) => {
  await page.goto(`${app.url}/settings/engines`);
  await expect(page.locator('[data-engine="scripted"]')).toContainText('ready');
  // The worker checked cursor and says why it is not offered, and what to do.
  await expect(page.locator('[data-engine="cursor"]')).toContainText('not ready');
  await expect(page.locator('[data-engine="cursor"]')).toContainText("not-installed: Cursor's agent CLI is not installed");
  await shot(page, 'settings-engines');
});
