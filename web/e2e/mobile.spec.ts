import { expect, openChat, send, shot, test } from './fixtures';

test.use({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });

test('on a phone: the sessions are a drawer, the chat has the screen', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/tools');
  await openChat(page, app, s);
  const drawer = page.locator('#sidebar');
  await expect(drawer).not.toBeInViewport();
  await send(page, 'What is in the project?');
  await expect(page.locator('.answer').last()).toContainText('the README calls it a demo project');
  const box = await page.locator('#prompt').boundingBox();
  expect(box!.width, 'the prompt spans the screen').toBeGreaterThan(330);
  await shot(page, 'mobile-chat');

  await page.getByRole('button', { name: 'Sessions' }).tap();
  await expect(drawer).toBeInViewport();
  await expect(drawer.getByRole('link', { name: /What is in the project/ })).toBeVisible();
  await shot(page, 'mobile-sessions');
  await drawer.getByRole('link', { name: /What is in the project/ }).tap();
  await expect(drawer).not.toBeInViewport();
});
