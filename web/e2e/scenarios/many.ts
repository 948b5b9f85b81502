// manyScenario is a turn that leaves n saved messages (with its prompt): a
// tool call and its result are two messages each, and a closing answer is
// one. The browser suite opens such a session to measure a long one.
export function manyScenario(n: number): object {
  const calls = Math.max(0, Math.floor((n - 2) / 2));
  const steps: object[] = [];
  for (let i = 0; i < calls; i++) {
    steps.push({ tool: { name: i % 2 ? 'Read' : 'Bash', input: i % 2 ? { filePath: `src/file${i}.go` } : { command: `echo step ${i}` }, result: `result of step ${i}\n` } });
  }
  steps.push({ text: { text: `Done after ${calls} tool calls.`, chunk: 64 } });
  return { name: 'many', description: `A turn of ${calls * 2 + 2} saved messages, for the web app's long-session test.`, steps };
}
