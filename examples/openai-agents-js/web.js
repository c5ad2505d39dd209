// The executor's web tools, on the sim web (or any Serper-shaped search and
// plain pages): search returns Serper's JSON as it came, visit the pages'
// text without tags.
const WEB = (process.env.SIM_WEB_URL || 'http://127.0.0.1:18001').replace(/\/$/, '');

// list accepts a list of strings or one string.
function list(v) {
  if (Array.isArray(v)) return v.filter((x) => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}

export async function search(args) {
  const out = [];
  for (const q of list(args?.query)) {
    const resp = await fetch(`${WEB}/search`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ q }),
    });
    out.push(await resp.text());
  }
  return out.length ? out.join('\n\n') : 'search needs {"query": ["…"]}';
}

export async function visit(args) {
  const out = [];
  for (const url of list(args?.url)) {
    try {
      const resp = await fetch(url);
      const html = await resp.text();
      out.push(html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
    } catch (err) {
      out.push(`visit ${url} failed: ${err.message}`);
    }
  }
  return out.length ? out.join('\n\n') : 'visit needs {"url": ["…"], "goal": "…"}';
}

// The tools' JSON schemas, as the sim's policy expects them (see
// docs/gateway.md): search {query: [string]}, visit {url: [string], goal}.
export const searchSchema = {
  type: 'object',
  properties: { query: { type: 'array', items: { type: 'string' }, description: 'search queries' } },
  required: ['query'],
  additionalProperties: false,
};
export const visitSchema = {
  type: 'object',
  properties: {
    url: { type: 'array', items: { type: 'string' }, description: 'pages to read' },
    goal: { type: 'string', description: 'what to look for' },
  },
  required: ['url', 'goal'],
  additionalProperties: false,
};
