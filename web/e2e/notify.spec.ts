import { expect, openChat, send, test } from './fixtures';

// The browser's own notifications, while the tab is hidden: a turn that
// finishes, and one that waits for the user's answer.
test('a hidden tab is notified when a turn finishes or waits for an answer', async ({ page, context, app, project }) => {
  await context.grantPermissions(['notifications'], { origin: app.url });
  await page.addInitScript(() => {
    const w = window as unknown as { __notes: { title: string; body: string }[]; __hidden: boolean };
    w.__notes = [];
    w.__hidden = false;
    Object.defineProperty(document, 'visibilityState', { get: () => (w.__hidden ? 'hidden' : 'visible') });
    const Native = window.Notification;
    class Recording extends Native {
      constructor(title: string, options?: NotificationOptions) {
        super(title, options);
        w.__notes.push({ title, body: options?.body ?? '' });
      }
    }
    Object.defineProperty(window, 'Notification', { value: Recording });
  });
  const s = await app.session(project.id, 'scripted/hello');
  await openChat(page, app, s);
  await send(page, 'Say hello');
  await expect(page.locator('[data-turn]').last()).toHaveAttribute('data-state', 'completed');
  const notes = () => page.evaluate(() => (window as unknown as { __notes: { title: string; body: string }[] }).__notes);
  expect(await notes(), 'nothing while the tab is visible').toEqual([]);

  await page.evaluate(() => {
    (window as unknown as { __hidden: boolean }).__hidden = true;
    document.dispatchEvent(new Event('visibilitychange'));
  });
  // A turn sent from elsewhere (the API, another device) ends while hidden.
  await app.api('POST', `/v1/sessions/${s.id}/messages`, { text: 'Again, from elsewhere' });
  await expect.poll(notes).toContainEqual(expect.objectContaining({ body: 'The turn finished.' }));

  await app.api('POST', `/v1/sessions/${s.id}/messages`, { text: 'Ask me', model: 'scripted/ask' });
  await expect.poll(notes).toContainEqual(expect.objectContaining({ body: 'Waiting for your answer.' }));
  await app.api('POST', `/v1/sessions/${s.id}/cancel`, {});
});
