// What the MCP servers' settings page makes of its form and of the API's
// answers: name/value rows become the env or headers map the API takes,
// and a refusal is placed next to the field it names.

/** Pair is one name/value row of a server's env or headers. */
export interface Pair {
  name: string;
  value: string;
}

/** Field is a form field the API's validation may name. */
export type Field = 'slug' | 'name' | 'transport' | 'url' | 'command' | 'args' | 'headers' | 'env';

/** record makes the map of the rows that have a name; a name given twice
 *  keeps its last value. */
export function record(pairs: Pair[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const name = p.name.trim();
    if (name) out[name] = p.value;
  }
  return out;
}

/** args splits the arguments field, one argument a line, blank lines
 *  dropped (an argument keeps its spaces). */
export function args(text: string): string[] {
  return text.split('\n').map((a) => a.replace(/\r$/, '')).filter((a) => a.trim() !== '');
}

// The API names the field at fault first: "server.url …", "headers X: …",
// "env X: …" (after a code such as "invalid: ").
const named = /(?:^|[\s:])(?:server\.(slug|name|transport|url|command|args)|(headers|env))\b/;

/** fieldOf is the form field an API message is about, or undefined when
 *  it names none. */
export function fieldOf(message: string): Field | undefined {
  const m = named.exec(message);
  return (m?.[1] ?? m?.[2]) as Field | undefined;
}
