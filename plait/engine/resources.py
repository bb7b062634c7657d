"""Resource-aware decisions: before a new run starts, the machine (CPU, memory, disk) and the
provider pool's free capacity are probed (at most every `probe_s`) and `[resources]` decides:
execute, queue (wait, re-probing, at most `queue_max_s`, CPU at most `cpu_queue_s`), pause the
run, degrade its model calls to `[pool] degrade_to`, or reject it. Every decision but a plain
execute is recorded on the run (`run_decision`), with the probe it was made on.

The rules are looked at in order: disk, memory, provider capacity, CPU. The CPU rule only
queues while this engine has runs in flight (an idle engine waiting for the CPU helps nobody;
the load is someone else's). The capacity rule keeps an unbounded stream of new runs (a
server's) from piling up on busy providers; it is not applied to a run whose caller bounds its
runs in flight itself (`bounded`: a batch's `--concurrency`, a worker's places): such a run
would only trade its place in the pool's queue, where slots are handed over as they free up,
for re-probes at the gate, and a batch that keeps its provider at the limit would have every
record queued.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from plait.config import ResourcesConfig
from plait.llm.provider import Provider
from plait.store import Store
from plait.store.decisions import Decision

RECHECK_S = 0.25


@dataclass(frozen=True, slots=True)
class Probe:
    """The machine and the pool at one moment."""

    cpu_percent: float
    memory_percent: float
    disk_free_gb: float
    capacity_percent: float | None
    """The provider pool's free slots as a share of its `max_concurrency` (None: no pool)."""
    at: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def probe(disk_path: str, provider: Provider | None) -> Probe:
    import psutil

    load = getattr(provider, "load", None)
    capacity: float | None = None
    if callable(load):
        rows = [r for r in load() if r.get("usable")]
        total = sum(int(r["max_concurrency"]) for r in rows)
        used = sum(int(r["in_flight"]) + int(r["queued"]) for r in rows)
        capacity = max(0.0, 100.0 * (total - used) / total) if total else None
    return Probe(
        cpu_percent=float(psutil.cpu_percent(interval=None)),
        memory_percent=float(psutil.virtual_memory().percent),
        disk_free_gb=psutil.disk_usage(disk_path).free / 2**30,
        capacity_percent=capacity,
        at=time.time(),
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    action: str
    rule: str
    reason: str


class ResourceGate:
    """Decides, for each new run, whether and how it starts."""

    def __init__(self, config: ResourcesConfig, store: Store, provider: Provider | None,
                 in_flight: Callable[[], int], disk_path: str | None = None):  # fmt: skip
        self.config, self.store, self.provider, self.in_flight = config, store, provider, in_flight
        self.disk_path = disk_path or _store_folder(store)
        self._last: Probe | None = None
        import psutil

        psutil.cpu_percent(interval=None)  # the first reading is meaningless: start the measure

    def probe(self) -> Probe:
        if self._last is None or time.time() - self._last.at >= self.config.probe_s:
            self._last = probe(self.disk_path, self.provider)
        return self._last

    def verdict(self, seen: Probe, *, bounded: bool = False) -> Verdict | None:
        """The first rule that fires on `seen`, or None: execute. `bounded`: the caller bounds
        its runs in flight itself; the provider capacity rule does not apply."""
        c = self.config
        if seen.disk_free_gb < c.disk_free_gb_min:
            reason = f"{seen.disk_free_gb:.2f} GB of disk free, under {c.disk_free_gb_min:g} GB"
            return Verdict(c.on_disk, "disk", reason)
        if seen.memory_percent > c.memory_percent_max:
            reason = f"memory {seen.memory_percent:.0f} % used, over {c.memory_percent_max:g} %"
            return Verdict(c.on_memory, "memory", reason)
        if not bounded and seen.capacity_percent is not None and seen.capacity_percent < c.capacity_percent_min:
            free, least = seen.capacity_percent, c.capacity_percent_min
            reason = f"the providers have {free:.0f} % of their capacity free, under {least:g} %"
            return Verdict(c.on_capacity, "capacity", reason)
        if seen.cpu_percent > c.cpu_percent_max and self.in_flight() > 0:
            return Verdict(c.on_cpu, "cpu", f"CPU {seen.cpu_percent:.0f} % busy, over {c.cpu_percent_max:g} %")
        return None

    async def admit(self, run_id: str, *, bounded: bool = False) -> Verdict:
        """How run `run_id` starts: execute (after queueing, if it had to), pause, degrade or
        reject, and why; each decision but a plain execute is recorded on the run."""
        started = time.monotonic()
        queued: Verdict | None = None
        while True:
            seen = await asyncio.to_thread(self.probe)
            found = self.verdict(seen, bounded=bounded)
            if found is None or found.action == "execute":
                if queued is None:
                    return found or Verdict("execute", "", "capacity is there")
                waited = time.monotonic() - started
                return await self._record(
                    run_id, Verdict("execute", queued.rule, f"started after queueing {waited:.1f} s"), seen
                )
            if found.action != "queue":
                return await self._record(run_id, found, seen)
            if queued is None:
                queued = await self._record(run_id, found, seen)
            limit = self.config.cpu_queue_s if found.rule == "cpu" else self.config.queue_max_s
            if time.monotonic() - started >= limit:
                reason = f"started after queueing {limit:g} s, the most a run waits: {found.reason}"
                return await self._record(run_id, Verdict("execute", found.rule, reason), seen)
            await asyncio.sleep(min(RECHECK_S, self.config.probe_s))
            self._last = None if found.rule != "cpu" else self._last

    async def _record(self, run_id: str, verdict: Verdict, seen: Probe) -> Verdict:
        """`verdict`, recorded on the run with the probe it was made on."""
        decision = Decision(run_id, verdict.action, verdict.rule, verdict.reason, seen.as_json(), at=time.time())
        await asyncio.to_thread(self.store.decisions.add, decision)
        return verdict


def _store_folder(store: Store) -> str:
    """Where the store's data lives, for the disk probe (a SQLite file's folder; else the
    working directory: a PostgreSQL server's disk is not this machine's)."""
    url = store.url
    if url.startswith("sqlite") and ":///" in url:
        folder = os.path.dirname(os.path.abspath(url.split(":///", 1)[1].split("?", 1)[0]))
        if os.path.isdir(folder):
            return folder
    return os.getcwd()
