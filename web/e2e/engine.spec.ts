import { expect, lastTurn, openChat, send, shot, test, tool } from './fixtures';

// One real engine: Claude Code's own CLI (installed at its pinned version),
// in its sandbox, talking to the mock LLM `clopen dev --fakellm` started.
test('a real Claude Code turn: the CLI streams its answer and runs a tool in the session workspace', async ({ page, app, project }) => {
  test.setTimeout(180_000);
  const engines = await app.api('GET', '/v1/engines');
  const claude = engines.engines.find((e: { engine: string }) => e.engine === 'claude-code');
  expect(claude?.ready, `claude-code is not ready: ${claude?.message}; scripts/test.sh installs it`).toBe(true);
  const models = await app.api('GET', '/v1/models?engine=claude-code');
  expect(models.models.length, models.message).toBeGreaterThan(0);

  const s = await app.session(project.id, models.models[0].id, 'claude-code');
  await openChat(page, app, s);
  await expect(page.getByLabel('Engine')).toHaveValue('claude-code');
  // Its models carry a reasoning control: the effort picker shows, with
  // the model's levels.
  if (models.models[0].capabilities.reasoningControl) {
    await expect(page.getByLabel('Reasoning effort')).toBeVisible();
    await expect(page.getByLabel('Reasoning effort').locator('option')).toHaveCount(models.models[0].capabilities.reasoningControl.levels.length);
  }
  await send(page, 'Say hello.');
  await expect(page.locator('.answer').last()).toContainText('Hello from fakellm.', { timeout: 120_000 });
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed', { timeout: 60_000 });

  await send(page, '@@TOOL@@ Run the command.');
  await expect(page.locator('.answer').last()).toContainText('Tool finished. Result: ok', { timeout: 120_000 });
  await expect(page.locator('[data-tool]').first()).toHaveAttribute('data-status', 'done');
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed');
  await shot(page, 'chat-claude-code');
});
