"""`[resources]`: what the engine does when the machine or the providers are short of capacity,
decided before each run starts (docs/configuration.md).

    [resources]
    probe_s = 5                    # how often CPU, memory, disk and the pool are probed
    disk_free_gb_min = 1.0         # below: on_disk (default reject: new runs are refused)
    memory_percent_max = 85        # above: on_memory (default queue)
    cpu_percent_max = 80           # above: on_cpu (default queue, briefly: cpu_queue_s)
    capacity_percent_min = 20      # the pool's free share below it: on_capacity (default queue)
    queue_max_s = 30               # a queued run starts anyway after this (a decision says so)
    cpu_queue_s = 2

Each `on_*` is one of execute (ignore the rule), queue (wait for the resource, re-probing),
pause (the run pauses, resumable), degrade (the run's model calls go to `[pool] degrade_to`),
reject (the run fails before it starts, saying why).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from plait.config.providers import Strict

Action = Literal["execute", "queue", "pause", "degrade", "reject"]
Seconds = Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)]
Percent = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]


class ResourcesConfig(Strict):
    """`[resources]`: thresholds and what each one does."""

    enabled: bool = True
    probe_s: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] = 5.0
    disk_free_gb_min: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0
    memory_percent_max: Percent = 85.0
    cpu_percent_max: Percent = 80.0
    capacity_percent_min: Percent = 20.0
    on_disk: Action = "reject"
    on_memory: Action = "queue"
    on_cpu: Action = "queue"
    on_capacity: Action = "queue"
    queue_max_s: Seconds = 30.0
    cpu_queue_s: Seconds = 2.0
