"""Plait: prompt graphs with typed edge contracts, recorded runs and human corrections.

The top-level package stays import-light: `plait validate` must start fast, so
submodules (store, API, providers) are imported only by what uses them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
