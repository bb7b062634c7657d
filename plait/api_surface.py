"""Deprecated home of `GraphInvalid`, `validate` and `load_graph`: they are `plait.compile` now
(and `plait.validate`, `plait.load_graph`; docs/changes.md)."""

import warnings

from plait.compile import GraphInvalid, load_graph, validate

warnings.warn("`plait.api_surface` is deprecated: import from `plait.compile`", DeprecationWarning, stacklevel=2)

__all__ = ["GraphInvalid", "load_graph", "validate"]
