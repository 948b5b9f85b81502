import { describe, expect, it } from 'vitest';
import { lineDiff } from './diff';

describe('lineDiff', () => {
  it('keeps common lines and marks the changed ones', () => {
    const d = lineDiff('a\nb\nc', 'a\nB\nc');
    expect(d).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
    ]);
  });
  it('writes a new file as all added', () => {
    expect(lineDiff('', 'x\ny')).toEqual([{ op: '+', text: 'x' }, { op: '+', text: 'y' }]);
  });
  it('folds unchanged stretches beyond the context', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const after = before.replace('l10', 'L10');
    const d = lineDiff(before, after, 2);
    expect(d.filter((l) => l.op === '@').map((l) => l.text)).toEqual(['8 unchanged lines', '7 unchanged lines']);
  });
  it('does not freeze on huge inputs', () => {
    const big = Array.from({ length: 5000 }, (_, i) => `x${i}`).join('\n');
    const d = lineDiff(big, big + '\nmore');
    expect(d.some((l) => l.op === '+')).toBe(true);
  });
});
