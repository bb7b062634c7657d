"""`[resources]`: what the engine does when the machine or the providers are short of capacity,
decided before each new run and before each node executes (docs/configuration.md).

    [resources]
    probe_s = 5                    # how often CPU, memory, disk, the pool and the network are probed
    disk_free_gb_min = 1.0         # below: on_disk (default reject: new runs are refused)
    memory_percent_max = 85        # above: on_memory (default queue; priority 8+ passes)
    cpu_percent_max = 80           # above: on_cpu (default queue, 5-15 s; TRANSFORM, CODE... nodes)
    capacity_percent_min = 20      # the pool's free share below it: on_capacity (priority 7+ passes)
    on_exhausted = "pause"         # no provider can take a call: the run pauses, resumable
    queue_max_s = 30               # a queued run or node starts anyway after this (a decision says so)
    cpu_queue_min_s = 5            # a node queued for the CPU waits at least this: the breather
    cpu_queue_max_s = 15           # ... and at most this (`cpu_queue_s`, its earlier name, is still read)
    max_concurrent_nodes = 3       # nodes of one run executing at once

Each `on_*` is one of execute (ignore the rule), queue (wait for the resource, re-probing),
pause (the run pauses, resumable), degrade (the run's model calls go to `[pool] degrade_to`),
reject (the run fails before it starts, saying why; a run already executing pauses instead).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

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
    on_exhausted: Action = "pause"
    queue_max_s: Seconds = 30.0
    cpu_queue_min_s: Seconds = 5.0
    cpu_queue_max_s: Seconds = 15.0
    max_concurrent_nodes: Annotated[int, Field(ge=1, le=10_000)] = 3

    @model_validator(mode="before")
    @classmethod
    def _single_cpu_wait(cls, data: Any) -> Any:
        """`cpu_queue_s`, the one wait of earlier releases, is still read (a deployer's file keeps
        working): it is the window's end, and its start when shorter than the default start."""
        if isinstance(data, dict) and "cpu_queue_s" in data:
            data = dict(data)
            longest = data.pop("cpu_queue_s")
            data.setdefault("cpu_queue_max_s", longest)
            if isinstance(longest, int | float) and not isinstance(longest, bool):
                data.setdefault("cpu_queue_min_s", min(5.0, float(longest)))
        return data

    @model_validator(mode="after")
    def _window(self) -> ResourcesConfig:
        if self.cpu_queue_min_s > self.cpu_queue_max_s:
            raise ValueError(
                f"[resources] cpu_queue_min_s ({self.cpu_queue_min_s:g}) is over cpu_queue_max_s "
                f"({self.cpu_queue_max_s:g}): make the least wait at most the longest"
            )
        return self
