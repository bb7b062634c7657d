"""Plait: prompt graphs with typed edge contracts, recorded runs and human corrections.

The top-level package stays import-light: `plait validate` must start fast, so
submodules (store, API, providers) are imported only by what uses them.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("plait")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
