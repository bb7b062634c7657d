import { NODE_DESCRIPTIONS, NODE_TYPES } from "../../graph/edit";

/** The node types a graph is built from, each with what it does in one line; choosing one adds
 * a node of that type where the canvas has room in view. */
export function Palette({ onAdd }: { onAdd: (type: string) => void }) {
  return (
    <nav className="palette" aria-label="Node types">
      <h2>Add a node</h2>
      <ul>
        {NODE_TYPES.map((type) => (
          <li key={type}>
            <button type="button" aria-label={`Add ${type}`} aria-describedby={`palette-${type}`} onClick={() => onAdd(type)}>
              <strong>{type}</strong>
              <span className="muted" id={`palette-${type}`}>
                {NODE_DESCRIPTIONS[type]}
              </span>
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
