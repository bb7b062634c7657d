import { useState } from "react";
import { ErrorView } from "../../components/ErrorView";
import { useApi } from "../../components/useApi";
import { NODE_DESCRIPTIONS, NODE_TYPES } from "../../graph/edit";
import { type GraphNodeDef, NODE_MIME } from "../../graph/model";
import { listSkills, skillHref, skillNode } from "../skills/types";

/** The node types a graph is built from, each with what it does in one line; choosing one adds
 * a node of that type where the canvas has room in view. Below them the stored skills: dragged
 * onto the canvas (or chosen) each becomes a SKILL node pinned to its version. */
export function Palette({ onAdd }: { onAdd: (type: string, fields?: Partial<GraphNodeDef>) => void }) {
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
      <Skills onAdd={onAdd} />
    </nav>
  );
}

function Skills({ onAdd }: { onAdd: (type: string, fields?: Partial<GraphNodeDef>) => void }) {
  const skills = useApi(() => listSkills(), []);
  const [search, setSearch] = useState("");
  const shown = (skills.data ?? []).filter((s) =>
    `${s.name} ${s.description ?? ""} ${s.tags.join(" ")} ${s.category ?? ""}`.toLowerCase().includes(search.trim().toLowerCase()),
  );
  return (
    <section className="palette-skills" aria-labelledby="palette-skills">
      <h2 id="palette-skills">Skills</h2>
      <ErrorView error={skills.error} />
      {skills.data && skills.data.length > 5 ? (
        <input aria-label="Find a skill" placeholder="find a skill" value={search} onChange={(e) => setSearch(e.target.value)} />
      ) : null}
      {skills.data && skills.data.length === 0 ? (
        <p className="muted">
          No stored skill yet (<code>plait skills add</code>).
        </p>
      ) : null}
      <ul aria-label="Stored skills">
        {shown.map((skill) => {
          const node = skillNode(skill);
          const { type, ...fields } = node;
          return (
            <li
              key={skill.name}
              data-skill={skill.name}
              draggable
              onDragStart={(event) => {
                event.dataTransfer.setData(NODE_MIME, JSON.stringify(node));
                event.dataTransfer.effectAllowed = "copy";
              }}
            >
              <button type="button" aria-label={`Add skill ${skill.name}`} aria-describedby={`palette-skill-${skill.name}`} onClick={() => onAdd(type, fields)}>
                <strong>
                  {skill.name} <span className="muted">v{skill.version}</span>
                </strong>
                <span className="muted" id={`palette-skill-${skill.name}`}>
                  {skill.description || "no description"}
                </span>
              </button>
              <a className="palette-link" href={skillHref(skill.name)}>
                about {skill.name}
              </a>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
