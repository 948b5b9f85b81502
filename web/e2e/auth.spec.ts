import { expect, shot, test } from './fixtures';

test('clopen dev signs the browser in as the development user, without asking', async ({ page, app }) => {
  await page.goto(app.url);
  await expect(page.getByRole('navigation', { name: 'Sessions' })).toContainText('Developer');
  await expect(page.locator('[data-connection]')).toHaveAttribute('data-connection', 'open');
});

test('signing out, then in with an API key; the key is kept nowhere a script or the address can read', async ({ page, app }) => {
  const created = await app.api('POST', '/v1/api-keys', { name: 'browser test' });
  await page.goto(app.url);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in to Clopen' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Continue as the development user' })).toBeVisible();
  await shot(page, 'sign-in');

  // After a sign-out the development sign-in waits to be asked for again.
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Sign in to Clopen' })).toBeVisible();

  await page.getByLabel('API key').fill('clp_not_a_real_key_at_all_aaaaaaaaaaaaaaaaaaaaaa');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText('invalid api key');

  await page.getByLabel('API key').fill(created.key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect(page.getByRole('navigation', { name: 'Sessions' })).toContainText('Developer');

  const seen = await page.evaluate(() => ({
    url: location.href,
    cookie: document.cookie,
    local: JSON.stringify(localStorage),
    session: JSON.stringify(sessionStorage),
  }));
  for (const [where, value] of Object.entries(seen)) {
    expect(value, `the key in ${where}`).not.toContain(created.key);
    expect(value, `a session key in ${where}`).not.toMatch(/clp_[A-Za-z0-9_-]{20,}/);
  }
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'clopen_session');
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe('Strict');
  expect(session?.value).not.toBe(created.key);
  expect(session?.expires, 'a browser-session cookie').toBe(-1);

  // Signing out revokes the session's key on the server.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in to Clopen' })).toBeVisible();
  const r = await fetch(`${app.url}/v1/me`, { headers: { Authorization: `Bearer ${session!.value}` } });
  expect(r.status).toBe(401);
});
