// What the chat knows about each canonical tool: how to name a call in one
// line, and which view shows it. Names are canonical (pkg/events): Bash,
// Read, Edit, …; mcp__<server>__<tool> for MCP tools; Unknown:<raw> for a
// tool the engine's adapter could not map, which is shown as such.

export type ToolView = 'bash' | 'read' | 'diff' | 'search' | 'web' | 'todo' | 'agent' | 'question' | 'mcp' | 'unknown' | 'generic';

export function viewOf(name: string): ToolView {
  if (name.startsWith('mcp__')) return 'mcp';
  if (name.startsWith('Unknown:')) return 'unknown';
  switch (name) {
    case 'Bash':
      return 'bash';
    case 'Read':
      return 'read';
    case 'Edit':
    case 'Write':
    case 'Patch':
      return 'diff';
    case 'Glob':
    case 'Grep':
    case 'List':
      return 'search';
    case 'WebFetch':
    case 'WebSearch':
      return 'web';
    case 'TodoWrite':
      return 'todo';
    case 'Agent':
    case 'Workflow':
      return 'agent';
    case 'AskUserQuestion':
      return 'question';
  }
  return 'generic';
}

/** mcpName splits mcp__<server>__<tool>. */
export function mcpName(name: string): { server: string; tool: string } {
  const rest = name.slice('mcp__'.length);
  const i = rest.indexOf('__');
  return i < 0 ? { server: rest, tool: '' } : { server: rest.slice(0, i), tool: rest.slice(i + 2) };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));

/** summary is a call's one-line description. */
export function summary(name: string, input: Record<string, unknown>): string {
  switch (viewOf(name)) {
    case 'bash':
      return str(input.command);
    case 'read': {
      const range = input.offset || input.limit ? ` (lines ${str(input.offset ?? 1)}–${input.limit ? Number(input.offset ?? 1) + Number(input.limit) - 1 : 'end'})` : '';
      return str(input.filePath) + range;
    }
    case 'diff':
      return str(input.filePath);
    case 'search':
      return name === 'List' ? str(input.path) || '.' : `${str(input.pattern)}${input.path ? ` in ${str(input.path)}` : ''}`;
    case 'web':
      return name === 'WebFetch' ? str(input.url) : str(input.query);
    case 'todo': {
      const todos = Array.isArray(input.todos) ? input.todos : [];
      const done = todos.filter((t) => (t as { status?: string }).status === 'completed').length;
      return `${done} of ${todos.length} done`;
    }
    case 'agent':
      return str(input.description) || str(input.name) || str(input.title);
    case 'question': {
      const qs = Array.isArray(input.questions) ? input.questions : [];
      return str((qs[0] as { question?: string } | undefined)?.question);
    }
    case 'mcp':
      return '';
    default:
      return str(input.description ?? input.filePath ?? input.path ?? input.query ?? input.skill ?? '');
  }
}

/** Question is one AskUserQuestion question. */
export interface Question {
  question: string;
  header: string;
  multiSelect: boolean;
  options: { label: string; description?: string }[];
}

export function questionsOf(input: Record<string, unknown>): Question[] {
  const qs = Array.isArray(input.questions) ? input.questions : [];
  return qs.map((q) => {
    const o = q as Partial<Question>;
    return {
      question: str(o.question),
      header: str(o.header),
      multiSelect: o.multiSelect === true,
      options: Array.isArray(o.options) ? o.options.map((x) => ({ label: str(x.label), description: str(x.description) })) : [],
    };
  });
}

/** Todo is one TodoWrite item. */
export interface Todo {
  content: string;
  status: 'pending' | 'in_progress' | 'completed' | string;
  activeForm?: string;
}

export function todosOf(input: Record<string, unknown>): Todo[] {
  const todos = Array.isArray(input.todos) ? input.todos : [];
  return todos.map((t) => {
    const o = t as Partial<Todo>;
    return { content: str(o.content), status: str(o.status) || 'pending', activeForm: str(o.activeForm) };
  });
}
