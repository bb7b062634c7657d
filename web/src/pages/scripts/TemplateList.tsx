import { href } from "../../router";
import type { Template } from "./model";

/** The stored templates by category (the list comes sorted by category, then name): system
 * templates marked read-only, user templates with the template they were based on. */
export function TemplateList({
  templates,
  selected,
  lastUsed,
  onNew,
}: {
  templates: Template[];
  selected: string | null;
  lastUsed: Record<string, string | null>;
  onNew: () => void;
}) {
  const categories = [...new Set(templates.map((t) => t.category))];
  return (
    <nav className="template-list" aria-label="Templates">
      <div className="row">
        <h1>Scripts</h1>
        <button type="button" onClick={onNew}>
          New
        </button>
      </div>
      {categories.map((category) => (
        <section key={category} aria-label={`Category ${category}`} data-category={category}>
          <h2>{category}</h2>
          <ul>
            {templates
              .filter((t) => t.category === category)
              .map((t) => (
                <li key={t.id} data-template={t.id} data-source={t.source_type}>
                  <a href={href("scripts", t.id)} aria-current={t.id === selected ? "page" : undefined}>
                    {t.name}
                  </a>{" "}
                  <code>{t.id}</code>
                  <div>
                    <SourceBadge template={t} />
                    {t.based_on_template_id ? (
                      <span className="muted based-on">based on {t.based_on_template_id}</span>
                    ) : null}
                    {lastUsed[category] === t.id ? <span className="badge">last used</span> : null}
                  </div>
                </li>
              ))}
          </ul>
        </section>
      ))}
      {templates.length === 0 ? <p className="muted">No template stored yet.</p> : null}
    </nav>
  );
}

export function SourceBadge({ template }: { template: Template }) {
  return template.source_type === "system" ? (
    <span className="badge system" title="Shipped with Plait: save an edited copy as your own">
      system · read-only
    </span>
  ) : (
    <span className="badge user">user</span>
  );
}
