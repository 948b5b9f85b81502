// A line diff for Edit and Write calls: the longest common subsequence of
// the two texts' lines, as unified hunks with a few lines of context. Texts
// too large for the quadratic table are shown as all removed, then all
// added, rather than freezing the tab.

export interface DiffLine {
  op: ' ' | '-' | '+' | '@';
  text: string;
}

const maxCells = 4_000_000;

/** lineDiff returns the lines of a unified diff from before to after. */
export function lineDiff(before: string, after: string, context = 3): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  const ops = a.length * b.length > maxCells ? naive(a, b) : lcs(a, b);
  return hunks(ops, context);
}

// lines splits text into its lines; a final newline ends the last line
// rather than starting an empty one.
function lines(text: string): string[] {
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

function naive(a: string[], b: string[]): DiffLine[] {
  return [...a.map((text) => ({ op: '-' as const, text })), ...b.map((text) => ({ op: '+' as const, text }))];
}

function lcs(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const t = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      t[i * w + j] = a[i] === b[j] ? t[(i + 1) * w + j + 1]! + 1 : Math.max(t[(i + 1) * w + j]!, t[i * w + j + 1]!);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (t[(i + 1) * w + j]! >= t[i * w + j + 1]!) {
      out.push({ op: '-', text: a[i++]! });
    } else {
      out.push({ op: '+', text: b[j++]! });
    }
  }
  while (i < n) out.push({ op: '-', text: a[i++]! });
  while (j < m) out.push({ op: '+', text: b[j++]! });
  return out;
}

// hunks keeps the changed lines with context around them, marking each
// gap with an '@' line.
function hunks(lines: DiffLine[], context: number): DiffLine[] {
  const keep = new Uint8Array(lines.length);
  lines.forEach((l, i) => {
    if (l.op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++) keep[k] = 1;
  });
  const out: DiffLine[] = [];
  let skipped = 0;
  lines.forEach((l, i) => {
    if (keep[i]) {
      if (skipped) out.push({ op: '@', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
      skipped = 0;
      out.push(l);
    } else {
      skipped++;
    }
  });
  if (skipped && out.length) out.push({ op: '@', text: `${skipped} unchanged line${skipped === 1 ? '' : 's'}` });
  return out;
}
