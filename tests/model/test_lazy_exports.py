"""`plait.model` loads its names on first use: importing a cheap name must not build the graph models."""

from __future__ import annotations

import subprocess
import sys

import pytest

import plait.model


def test_every_public_name_loads_from_where_it_is_declared() -> None:
    assert sorted(plait.model.__all__) == sorted(plait.model._HOME)
    for name in plait.model.__all__:
        value = getattr(plait.model, name)
        assert value is getattr(sys.modules[plait.model._HOME[name]], name)
    assert set(plait.model.__all__) <= set(dir(plait.model))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchType'"):
        plait.model.NoSuchType  # noqa: B018


def test_importing_an_enum_builds_no_pydantic_model() -> None:
    script = (
        "import sys\n"
        "from plait.model import SourceType\n"
        "from plait.model.enums import FreezePolicy\n"
        "import plait.store\n"
        "print(sorted(m for m in sys.modules if m.startswith(('plait.model.', 'pydantic.main'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "['plait.model.enums']"
