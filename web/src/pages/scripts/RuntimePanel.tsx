/** Expert mode: what the runtime gives a script and holds it to, and the exact request the
 * preview and the generation send. The script always runs on the server, in the sandbox: expert
 * mode shows more, it allows nothing more. */
export function RuntimePanel({ body }: { body: () => Record<string, unknown> }) {
  let request: string;
  try {
    request = JSON.stringify(body(), null, 2);
  } catch (cause) {
    request = `(not sendable: ${(cause as Error).message})`;
  }
  return (
    <section className="pane runtime" aria-label="Runtime" data-testid="runtime-panel">
      <h2>Runtime</h2>
      <dl>
        <dt>
          <code>await getVar(path)</code>
        </dt>
        <dd>a value the node can read: input.…, nodes.ID.…, current.… (16 KB of JSON at most, cut with a marker)</dd>
        <dt>
          <code>await getSchemaHint(id)</code>
        </dt>
        <dd>a schema of the graph (or output: the node's own contract) described for a prompt</dd>
        <dt>
          <code>await readRoute(route, params)</code>
        </dt>
        <dd>a read-only answer of a Plait route this server allows</dd>
        <dt>
          <code>console.log / warn / error</code>
        </dt>
        <dd>shown in the console, live; each entry cut at 1 KB</dd>
        <dt>limits</dt>
        <dd>preview: 3 s, then stopped at 5 s; generation: 5 s / 8 s; memory and host calls capped; no network, no files</dd>
      </dl>
      <h3>Request sent</h3>
      <pre aria-label="Request sent">{request}</pre>
    </section>
  );
}
