"""Storing prompt-script templates as every surface does: a script is checked before anything is
stored, and a template made from another takes from it each field it was not given.

Kept apart from `templates.py` (previews, which rebuild a run's state) so that creating or
changing a template loads no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from plait.errors import PlaitError, Refusal

if TYPE_CHECKING:
    from plait.store import Store
    from plait.store.templates import TemplateRecord

PREVIEW_HINT = "fix it; `plait templates preview` runs it"


class TemplateRefused(PlaitError):
    """A template cannot be stored as asked: it has no script, or its script does not parse."""

    kind = Refusal.INVALID
    code = "template_invalid"


def check_script(code: str, what: str = "the script") -> None:
    """Refuse a script that does not parse; `what` names it in the message (a surface says where
    the script came from: a file, a field)."""
    from plait.sandbox import JsSyntaxError, check_syntax

    try:
        check_syntax(code, kind="script")
    except JsSyntaxError as exc:
        where = f" at line {exc.line}, column {exc.column}" if exc.line is not None else ""
        raise TemplateRefused(f"{what} does not parse: {exc.message}{where}", PREVIEW_HINT) from None


def create_template(
    store: Store,
    template_id: str,
    script: str | None = None,
    *,
    base: str | None = None,
    name: str | None = None,
    category: str | None = None,
    description: str | None = None,
    schema_target: str | None = None,
    what: str = "the script",
) -> TemplateRecord:
    """A new user template with `script`, or a copy of `base`'s script (both: `script` is stored
    and `base` recorded as what it is based on). A field not given is `base`'s, else its default."""
    origin = store.templates.get(base) if base is not None else None
    if script is not None:
        check_script(script, what)
        code = script
    elif origin is not None:
        check_script(origin.script_code, f"the script of template '{origin.id}'")
        code = origin.script_code
    else:
        raise TemplateRefused("a template needs a script: give one, or a template to start from")
    return store.templates.create(
        template_id,
        name=name or (origin.name if origin else template_id),
        script_code=code,
        category=category or (origin.category if origin else "general"),
        description=description if description is not None else (origin.description if origin else None),
        schema_target=schema_target if schema_target is not None else (origin.schema_target if origin else None),
        based_on_template_id=base,
    )


def update_template(
    store: Store,
    template_id: str,
    *,
    script: str | None = None,
    name: str | None = None,
    category: str | None = None,
    description: str | None = None,
    schema_target: str | None = None,
    what: str = "the script",
) -> TemplateRecord:
    """Change the fields given of a user template (a system template is read-only)."""
    if script is not None:
        check_script(script, what)
    return store.templates.update(
        template_id,
        script_code=script,
        name=name,
        category=category,
        description=description,
        schema_target=schema_target,
    )
