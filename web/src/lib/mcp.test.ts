import { describe, expect, it } from 'vitest';
import { args, fieldOf, record } from './mcp';

describe('mcp settings', () => {
  it('finds the field an API refusal names', () => {
    expect(fieldOf('server.url "http://example.com/mcp": plain http is allowed only to hosts the operator lists')).toBe('url');
    expect(fieldOf('invalid: server.slug "A b": lowercase letters, digits and single hyphens, at most 64')).toBe('slug');
    expect(fieldOf('invalid: server.command and server.args are for stdio servers')).toBe('command');
    expect(fieldOf('invalid: headers Host: set by the bridge, not configurable')).toBe('headers');
    expect(fieldOf('invalid: env is for stdio servers; an http server takes headers')).toBe('env');
    expect(fieldOf('MCP server "docs" already exists; PUT replaces it')).toBeUndefined();
    expect(fieldOf('the environment is not set')).toBeUndefined();
  });

  it('makes the env or headers map of the named rows', () => {
    expect(record([{ name: ' Authorization ', value: 'Bearer x' }, { name: '', value: 'dropped' }, { name: 'X-A', value: '1' }, { name: 'X-A', value: '2' }]))
      .toEqual({ Authorization: 'Bearer x', 'X-A': '2' });
    expect(record([])).toEqual({});
  });

  it('reads one argument a line', () => {
    expect(args('-y\n@scope/pkg --flag\r\n\n  \n')).toEqual(['-y', '@scope/pkg --flag']);
    expect(args('')).toEqual([]);
  });
});
