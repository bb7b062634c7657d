"""The bodies of /api/schedules (cron schedules of graphs, docs/schedules.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ScheduleIn(BaseModel):
    """A new schedule: the stored graph to run, when, with which input."""

    model_config = ConfigDict(extra="forbid")

    graph: str = Field(min_length=1, max_length=200, description="A stored graph's id or slug.")
    cron: str = Field(min_length=1, max_length=200, description="Five cron fields, e.g. `*/5 * * * *`.")
    input: dict[str, Any] = Field(default_factory=dict, description="The run input of every firing.")
    catch_up: Literal["none", "one", "all"] = Field("one", description="Firings missed while no scheduler ran.")
    timezone: str = Field("UTC", min_length=1, max_length=64, description="The cron's time zone (IANA name).")


class FiringOut(BaseModel):
    fire_at: float
    run_id: str


class ScheduleOut(BaseModel):
    """A schedule; `firings` (newest first) where one schedule is read."""

    id: str
    graph_id: str
    cron: str
    timezone: str
    input: dict[str, Any]
    catch_up: str
    status: str = Field(description="`active` or `paused`.")
    next_fire_at: float
    last_fired_at: float | None
    last_run_id: str | None
    created_at: float
    updated_at: float
    firings: list[FiringOut] | None = None
