import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, openChat, test } from './fixtures';

// axe-core's scan of each main view: no serious or critical violation.
async function scan(page: Page, view: string): Promise<void> {
  const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')}`), `${view}`).toEqual([]);
}

// Each scan takes seconds on a busy machine: the views are split over
// three tests, which run in parallel.
test.describe('axe: no serious violations', () => {
  test.describe.configure({ timeout: 180_000 });

  test('in the chat, with every tool, the skill picker and a question', async ({ page, app, project }) => {
    const s = await app.session(project.id, 'scripted/gallery');
    await openChat(page, app, s);
    await page.locator('#prompt').fill('Show me every tool.');
    await page.locator('#prompt').press('Enter');
    await expect(page.locator('.answer').last()).toContainText('That was all of them.');
    await scan(page, 'chat');

    const q = await app.session(project.id, 'scripted/ask');
    await openChat(page, app, q);
    await page.locator('#prompt').fill('/');
    await expect(page.getByRole('listbox', { name: 'Skills' })).toBeVisible();
    await scan(page, 'chat with the skill picker open');
    await page.locator('#prompt').fill('Ask me.');
    await page.locator('#prompt').press('Enter');
    await expect(page.getByRole('form', { name: "The agent's question" })).toBeVisible();
    await scan(page, 'chat with a question');
  });

  test('in the settings', async ({ page, app }) => {
    for (const section of ['skills', 'mcp-servers', 'permissions', 'providers', 'engines']) {
      await page.goto(`${app.url}/settings/${section}`);
      await expect(page.getByRole('heading', { level: 2 })).toBeVisible();
      await scan(page, `settings/${section}`);
    }
    await page.goto(`${app.url}/settings/mcp-servers`);
    await page.getByRole('button', { name: 'New server' }).click();
    await page.getByRole('button', { name: 'Add header' }).click();
    await scan(page, 'settings/mcp-servers with the form open');
  });

  test('on the projects page and the sign-in', async ({ page, app }) => {
    await page.goto(`${app.url}/projects`);
    await expect(page.getByRole('heading', { name: 'Projects' })).toBeVisible();
    await scan(page, 'projects');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in to Clopen' })).toBeVisible();
    await scan(page, 'sign-in');
  });
});

/** tabTo presses Tab until the focused element matches selector. */
async function tabTo(page: Page, selector: string, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((sel) => document.activeElement?.matches(sel) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

async function focusVisible(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    return !!el && getComputedStyle(el).outlineStyle !== 'none';
  });
}

test('the keyboard alone sends, answers and cancels', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/ask');
  await openChat(page, app, s);
  await page.locator('body').click({ position: { x: 1, y: 1 } });

  // Send.
  await tabTo(page, '#prompt');
  await page.keyboard.type('Set up the service.');
  await page.keyboard.press('Enter');
  const form = page.getByRole('form', { name: "The agent's question" });
  await expect(form).toBeVisible();

  // Answer: to the options, pick the second with an arrow key, then to the button.
  await tabTo(page, 'input[type="radio"]');
  expect(await focusVisible(page), 'focus is visible on the option').toBe(true);
  await page.keyboard.press('Space');
  await page.keyboard.press('ArrowDown');
  await expect(form.getByRole('radio', { name: /SQLite/ })).toBeChecked();
  await tabTo(page, 'form[aria-label="The agent\'s question"] button[type="submit"]');
  await page.keyboard.press('Enter');
  await expect(page.locator('.answer').last()).toContainText('Thanks, I will go with your choice.');
  await expect(page.locator('[data-turn]').last()).toHaveAttribute('data-state', 'completed');

  // Cancel a long turn.
  await page.getByLabel('Model').focus();
  await page.keyboard.press('End'); // the last scenario in the list
  await page.getByLabel('Model').selectOption('scripted/slow');
  await tabTo(page, '#prompt');
  await page.keyboard.type('Take your time.');
  await page.keyboard.press('Enter');
  await expect(page.locator('[data-streaming]')).toBeVisible();
  await tabTo(page, '.composer button.danger');
  expect(await focusVisible(page), 'focus is visible on Cancel').toBe(true);
  await page.keyboard.press('Enter');
  await expect(page.locator('[data-turn]').last()).toHaveAttribute('data-state', 'cancelled');
});
