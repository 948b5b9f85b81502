import { expect, lastTurn, openChat, send, shot, test, tool } from './fixtures';

test('a scripted turn streams into the page delta by delta, appended, never re-rendered', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/hello?deltas=60&delay=100ms');
  await openChat(page, app, s);
  // Watch the streaming element: each delta should be appended to its one
  // text node (a characterData change), not replace its content.
  await page.evaluate(() => {
    const w = window as unknown as { __stream: { lengths: number[]; replaced: number; nodes: Set<Node> } };
    w.__stream = { lengths: [], replaced: 0, nodes: new Set() };
    new MutationObserver((muts) => {
      for (const m of muts) {
        const el = (m.target.nodeType === Node.TEXT_NODE ? m.target.parentElement : m.target) as Element | null;
        if (!el?.closest?.('[data-streaming]')) continue;
        if (m.type === 'characterData') {
          w.__stream.nodes.add(m.target);
          w.__stream.lengths.push((m.target as Text).length);
        } else if (m.type === 'childList' && m.target instanceof Element && m.target.matches('[data-streaming]') && m.removedNodes.length) {
          w.__stream.replaced++;
        }
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await send(page, 'hello');
  await expect(page.locator('.answer').last()).toContainText('I replay scenarios so you can try Clopen without any model account.');
  await expect(page.locator('[data-streaming]')).toHaveCount(0);
  const seen = await page.evaluate(() => {
    const w = window as unknown as { __stream: { lengths: number[]; replaced: number; nodes: Set<Node> } };
    return { lengths: w.__stream.lengths, replaced: w.__stream.replaced, nodes: w.__stream.nodes.size };
  });
  expect(seen.lengths.length, 'text changes while streaming').toBeGreaterThanOrEqual(5);
  expect(seen.lengths, 'the text only grows').toEqual([...seen.lengths].sort((a, b) => a - b));
  expect(seen.nodes, 'one text node took every delta').toBe(1);
  expect(seen.replaced, 'the streaming text was never replaced').toBe(0);
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'completed');
});

test('a tool turn: reasoning folded under its answer, the command and its output, usage and cost', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/tools');
  await openChat(page, app, s);
  // The scripted models have no reasoning control: no effort picker. An
  // engine no worker offers is listed with what to do about it.
  await expect(page.getByLabel('Model')).toHaveValue('scripted/tools');
  await expect(page.getByLabel('Reasoning effort')).toHaveCount(0);
  await expect(page.getByLabel('Engine').locator('option[value="cursor"]')).toBeDisabled();
  await page.locator('details.why summary').click();
  await expect(page.locator('details.why')).toContainText("cursor: not-installed: Cursor's agent CLI is not installed");
  await page.locator('details.why summary').click();
  await send(page, 'What is in the project?');
  await expect(page.locator('.answer').last()).toContainText('the README calls it a demo project');
  const reasoning = page.locator('details.reasoning').first();
  await expect(reasoning).not.toHaveAttribute('open');
  await reasoning.locator('summary').click();
  await expect(reasoning).toContainText('I will list the files, then read the README.');

  const bash = tool(page, 'Bash');
  await expect(bash).toHaveAttribute('data-status', 'done');
  await expect(bash).toContainText('ls');
  await bash.getByRole('button').first().click();
  await expect(bash.locator('pre.command')).toHaveText('$ ls');
  await expect(bash).toContainText('README.md');
  await expect(bash).toContainText('main.go');
  await expect(tool(page, 'Read')).toContainText('README.md');

  const footer = lastTurn(page);
  await expect(footer).toHaveAttribute('data-state', 'completed');
  await expect(footer).toContainText('1,200 in');
  await expect(footer).toContainText('85 out');
  await expect(footer).toContainText('$0.0042');
});

test('every canonical tool is shown for what it is', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/gallery');
  await openChat(page, app, s);
  await send(page, 'Show me every tool.');
  await expect(page.locator('.answer').last()).toContainText('That was all of them.');

  const edit = tool(page, 'Edit');
  await expect(edit.locator('.l.del')).toContainText('println("hi")');
  await expect(edit.locator('.l.add')).toContainText('println("hello")');
  await expect(edit.locator('.file')).toContainText('+1');
  await expect(tool(page, 'Write').locator('.l.add')).toHaveCount(2);
  const glob = tool(page, 'Glob');
  await glob.getByRole('button').first().click();
  await expect(glob.locator('li')).toHaveText(['main.go', 'main_test.go']);
  const grep = tool(page, 'Grep');
  await grep.getByRole('button').first().click();
  await expect(grep).toContainText('main.go:3:func main() {');
  const fetchCall = tool(page, 'WebFetch');
  await fetchCall.getByRole('button').first().click();
  await expect(fetchCall.getByRole('link', { name: 'https://example.com/spec' })).toHaveAttribute('rel', /noopener/);
  const todos = tool(page, 'TodoWrite').locator('.todos li');
  await expect(todos).toHaveCount(3);
  await expect(todos.nth(0)).toHaveClass(/completed/);
  await expect(todos.nth(1)).toHaveClass(/in_progress/);
  await expect(todos.nth(1)).toContainText('Changing the greeting');
  await expect(tool(page, 'mcp__github__create_issue')).toContainText('github › create_issue');
  await expect(tool(page, 'Unknown:frobnicate')).toContainText('Unknown tool: frobnicate');
  await expect(tool(page, 'Bash')).toHaveAttribute('data-status', 'error');
  await page.locator('.answer').first().scrollIntoViewIfNeeded();
  await shot(page, 'chat-tools');
});

test("a sub-agent's work is grouped under the call that started it", async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/agent');
  await openChat(page, app, s);
  await send(page, 'Survey the tests.');
  await expect(page.locator('.answer').last()).toContainText('The sub-agent found one test file');
  const agent = tool(page, 'Agent');
  await expect(agent).toHaveAttribute('data-status', 'done');
  await agent.getByRole('button').first().click();
  const activity = agent.getByRole('list', { name: 'Sub-agent activity' });
  await expect(activity).toContainText('Looking for test files.');
  await expect(activity).toContainText('Glob');
  await expect(activity).toContainText('main_test.go');
  // The sub-agent's own messages are not in the main transcript.
  await expect(page.locator('.answer', { hasText: 'Looking for test files.' })).toHaveCount(0);
  await expect(page.locator('[data-tool="Glob"]')).toHaveCount(0);
});

test('a failed turn is saved as an error message', async ({ page, app, project }) => {
  const s = await app.session(project.id, 'scripted/error');
  await openChat(page, app, s);
  await send(page, 'Try.');
  await expect(page.locator('.error-box')).toContainText('provider overloaded (status 529)');
  await expect(lastTurn(page)).toHaveAttribute('data-state', 'failed');
  await page.reload();
  await expect(page.locator('.error-box')).toContainText('provider overloaded (status 529)');
});
