"""The machine a bench ran on, recorded beside its figures: a figure means little without it."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """The CPU's model name, its cores, the Python version and the load averages now."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()}
