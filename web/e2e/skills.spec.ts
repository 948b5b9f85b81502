import { expect, openChat, saved, send, shot, test } from './fixtures';

const unique = () => Math.random().toString(36).slice(2, 8);

test('the / picker lists the skills the session may invoke, with their argument hints', async ({ page, app, project }) => {
  const slug = `deploy-${unique()}`;
  await app.api('POST', '/v1/skills', { slug, document: `---\nname: ${slug}\ndescription: Deploy to an environment\nargument-hint: <environment>\ntriggers: slash\n---\nDeploy to $ARGUMENTS.\n` });
  const s = await app.session(project.id, 'scripted/hello');
  await openChat(page, app, s);
  await page.locator('#prompt').fill('/');
  const picker = page.getByRole('listbox', { name: 'Skills' });
  await expect(picker.getByRole('option', { name: new RegExp(slug) })).toContainText('<environment>');
  await page.locator('#prompt').fill(`/${slug.slice(0, 9)}`);
  await expect(picker.getByRole('option')).toHaveCount(1);
  await expect(page.locator('#prompt')).toHaveAttribute('aria-activedescendant', `skill-${slug}`);
  await shot(page, 'skill-picker');
  await page.locator('#prompt').press('Enter');
  await expect(page.locator('#prompt')).toHaveValue(`/${slug} `);
  await expect(picker).toHaveCount(0);
  await expect(page.locator('#composer-status')).toContainText(`/${slug} <environment>`);
});

test('a skill written in settings is what the next turn runs', async ({ page, app, project }) => {
  const slug = `secret-${unique()}`;
  const word = `PINEAPPLE-${unique()}`;
  await page.goto(`${app.url}/settings/skills`);
  await page.getByRole('button', { name: 'New skill' }).click();
  await page.getByLabel('Name to invoke it by (/name)').fill(slug);
  await page.getByLabel('SKILL.md of the new skill').fill(`---\nname: ${slug}\ndescription: Says the secret word\nargument-hint: <whom to tell>\ntriggers: auto, slash\n---\nSay the secret word ${word} to $ARGUMENTS.\n`);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(saved(page)).toContainText(`Saved /${slug}.`);
  await expect(page.getByRole('row', { name: new RegExp(slug) })).toContainText('enabled');
  await shot(page, 'settings-skills');
  // Edited as one document: what the editor shows reads back as the skill.
  await page.getByRole('row', { name: new RegExp(slug) }).getByRole('button', { name: 'Edit' }).click();
  const doc = page.getByLabel(`SKILL.md of /${slug}`);
  await expect(doc).toHaveValue(/argument-hint: "<whom to tell>"/);
  await doc.fill((await doc.inputValue()).replace(word, `${word}-v2`));
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(saved(page)).toContainText(`Saved /${slug}.`);

  // The next turn, in any session, invokes it: the engine gets the skill's
  // text (the scripted engine reports the prompt it received).
  const s = await app.session(project.id, 'scripted/artifacts');
  await openChat(page, app, s);
  await send(page, `/${slug} the team`);
  const notice = page.getByRole('list', { name: 'Notices' });
  await expect(notice).toContainText(`Say the secret word ${word}-v2 to the team.`);
  // The saved prompt stays what the user typed.
  await expect(page.locator('.prompt .bubble')).toHaveText(`/${slug} the team`);
});

test('legacy commands are imported as slash skills', async ({ page, app }) => {
  const slug = `legacy-${unique()}`;
  await page.goto(`${app.url}/settings/skills`);
  await page.getByRole('button', { name: 'Import a legacy command' }).click();
  await page.getByLabel('Command name').fill(slug);
  await page.getByLabel('Description').fill('An old command');
  await page.getByLabel('Body (commands/<name>.md)').fill('Do the old thing with $ARGUMENTS.');
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  await expect(saved(page)).toContainText(`${slug} → /`);
  await expect(page.getByRole('row', { name: new RegExp(slug) })).toBeVisible();
});
