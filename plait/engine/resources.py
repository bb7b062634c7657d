"""Resource-aware decisions: the machine (CPU, memory, disk), the provider pool (free capacity,
each provider's state) and the network (can each remote provider be reached) are probed, at
most every `probe_s`, by a `ProbeFn` (injectable: tests pass values, the default reads this
machine), and `[resources]` decides, before a new run starts and before each node executes:
execute, queue (wait, re-probing), pause the run, degrade its model calls to `[pool] degrade_to`,
or reject it. Every decision but a plain execute is recorded (`run_decision`), on the node run
when it was made for a node, with the probe it was made on.

The rules are looked at in order (`decide`, pure): disk, memory, providers exhausted, provider
capacity, CPU. Which apply depends on what is decided (`Subject`):
- a node that calls a model (LLM_CALL, a CONDITION with `condition_llm`) is not held for the
  CPU (its call waits on the provider pool anyway); when no provider can take a call at all
  (each unusable or unreachable) its run pauses instead of failing it;
- a node whose work is the CPU's (`CPU_WORK`) is held for the CPU, for a breather of
  `cpu_queue_min_s` to `cpu_queue_max_s`, only while this engine executes other such nodes (an
  engine whose own work is done holds back nothing by waiting: the load is someone else's);
- priority 8 and above passes the memory and CPU rules, 7 and above the capacity rule;
- neither the capacity nor the CPU rule holds the nodes of runs whose caller bounds their runs
  in flight itself (`bounded`: a batch's `--concurrency`, a worker's places, a MAP's
  `max_concurrency`): they would only trade their place in the pool's queue, where slots are
  handed over as they free up, for re-probes at the gate, and the work they pile on the CPU is
  the amount their caller chose.
A new run is decided once before it starts (`ResourceGate.admit`: disk, memory, capacity; the
CPU is decided node by node); its nodes are decided by `plait.engine.node_gate`.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from plait.config import ResourcesConfig
from plait.llm.provider import Provider
from plait.store import Store
from plait.store.decisions import Decision

RECHECK_S = 0.25
REACH_TIMEOUT_S = 1.0
"""How long the network probe waits for a provider's TCP connect."""
PASSES_MEMORY = 8
"""The least priority that passes the memory and CPU rules (the pool's critical priorities)."""
PASSES_CAPACITY = 7
"""The least priority that passes the provider capacity rule."""
CPU_WORK = frozenset({"CODE", "TOOL", "PARSE", "CHUNK", "INDEX", "RETRIEVE"})
"""The node types whose work is this machine's CPU (a JavaScript or Python program, a parse, an
embedding), which the CPU rule may hold; a MERGE, a TRANSFORM's or a CONDITION's expression is
too little work to hold back (a graph of forty TRANSFORMs would otherwise wait minutes on a busy
machine for work of milliseconds)."""
OK = "ok"


@dataclass(frozen=True, slots=True)
class Probe:
    """The machine, the pool and the network at one moment."""

    cpu_percent: float
    memory_percent: float
    disk_free_gb: float
    capacity_percent: float | None
    """The provider pool's free slots as a share of its `max_concurrency` (None: no pool)."""
    at: float
    providers: dict[str, str] | None = None
    """Each configured provider's state: `ok`, `unusable`, `rpm`, `tpm` (its minute used up) or
    `unreachable` (None: no pool)."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def exhausted(self) -> str | None:
        """Why no provider can take a call, or None (one can, or there is no pool). A provider
        whose rpm or tpm minute is used up is not exhausted: the pool holds the call until its
        window frees, which is seconds, not a reason to stop a run."""
        if not self.providers or any(state in WAITING for state in self.providers.values()):
            return None
        return ", ".join(f"{pid} {_STATE_WORDS[state]}" for pid, state in sorted(self.providers.items()))


WAITING = frozenset({OK, "rpm", "tpm"})
"""Provider states in which a call still gets served (at once, or when the minute's window frees)."""
_STATE_WORDS = {"unusable": "unusable here", "rpm": "out of its rpm", "tpm": "out of its tpm",
                "unreachable": "unreachable"}  # fmt: skip

ProbeFn = Callable[[], Probe]
"""Takes a probe now (the strategy a gate is given; `MachineProbe` reads this machine)."""


def read_machine(disk_path: str) -> tuple[float, float, float]:
    """CPU and memory in use (percent) and the disk's free GB at `disk_path`, on this machine."""
    import psutil

    return (float(psutil.cpu_percent(interval=None)), float(psutil.virtual_memory().percent),
            psutil.disk_usage(disk_path).free / 2**30)  # fmt: skip


machine_reader: Callable[[str], tuple[float, float, float]] = read_machine
"""What `MachineProbe` reads the machine with (a test suite that must not depend on the load of
the machine it runs on replaces it)."""


def reachable(base_url: str, timeout_s: float = REACH_TIMEOUT_S) -> bool:
    """Whether a TCP connection to `base_url`'s host and port opens within `timeout_s`."""
    parts = urlsplit(base_url)
    if not parts.hostname:
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def provider_states(provider: Provider | None, reach: Callable[[str], bool] = reachable) -> dict[str, str] | None:
    """Each of the pool's providers' state (see `Probe.providers`); None without a pool. Only
    enabled remote (`openai`) providers are probed on the network: local and scripted ones are
    always reachable."""
    load = getattr(provider, "load", None)
    config = getattr(provider, "config", None)
    if not callable(load) or config is None:
        return None
    remote = {p.id: p.base_url for p in config.providers if p.kind == "openai" and p.enabled and p.base_url}
    states: dict[str, str] = {}
    for row in load():
        rpm, tpm = row.get("rpm"), row.get("tpm")
        if not row.get("usable"):
            states[row["id"]] = "unusable"
        elif rpm and int(row.get("requests_last_minute", 0)) >= int(rpm):
            states[row["id"]] = "rpm"
        elif tpm and int(row.get("tokens_last_minute", 0)) >= int(tpm):
            states[row["id"]] = "tpm"
        elif row["id"] in remote and not reach(remote[row["id"]]):
            states[row["id"]] = "unreachable"
        else:
            states[row["id"]] = OK
    return states


def pool_capacity(provider: Provider | None) -> float | None:
    """The pool's free slots as a share of its usable providers' `max_concurrency` (None: no pool)."""
    load = getattr(provider, "load", None)
    if not callable(load):
        return None
    rows = [r for r in load() if r.get("usable")]
    total = sum(int(r["max_concurrency"]) for r in rows)
    used = sum(int(r["in_flight"]) + int(r["queued"]) for r in rows)
    return max(0.0, 100.0 * (total - used) / total) if total else None


@dataclass(frozen=True, slots=True)
class MachineProbe:
    """The default `ProbeFn`: this machine (psutil), the pool's load and the network."""

    disk_path: str
    provider: Provider | None
    reach: Callable[[str], bool] = reachable

    @property
    def slow(self) -> bool:
        """Whether probing waits for the network (the pool has remote providers): then it is
        taken off the event loop."""
        config = getattr(self.provider, "config", None)
        return config is not None and any(p.kind == "openai" and p.enabled for p in config.providers)

    def __call__(self) -> Probe:
        cpu, memory, disk = machine_reader(self.disk_path)
        return Probe(cpu, memory, disk, pool_capacity(self.provider), time.time(),
                     provider_states(self.provider, self.reach))  # fmt: skip


def probe(disk_path: str, provider: Provider | None) -> Probe:
    """This machine, the pool and the network now."""
    return MachineProbe(disk_path, provider)()


@dataclass(frozen=True, slots=True)
class Subject:
    """What is decided: a new `run`, a node calling a `model`, a node whose work is the CPU's
    (`work`: `CPU_WORK`), or another node (`light`: a MERGE, a CONDITION's expression); its
    priority; whether its caller bounds its runs in flight (`bounded`); and `busy`, for a `work`
    node the other `work` nodes this engine executes now."""

    kind: Literal["run", "model", "work", "light"]
    priority: int = 5
    bounded: bool = False
    busy: int = 0


@dataclass(frozen=True, slots=True)
class Verdict:
    action: str
    rule: str
    reason: str


def decide(config: ResourcesConfig, seen: Probe, subject: Subject) -> Verdict | None:
    """The first rule that fires on `seen` for `subject`, or None: execute (module docstring)."""
    c = config
    if not c.enabled:
        return None
    if seen.disk_free_gb < c.disk_free_gb_min:
        reason = f"{seen.disk_free_gb:.2f} GB of disk free, under {c.disk_free_gb_min:g} GB"
        return Verdict(c.on_disk, "disk", reason)
    if seen.memory_percent > c.memory_percent_max and subject.priority < PASSES_MEMORY:
        reason = f"memory {seen.memory_percent:.0f} % used, over {c.memory_percent_max:g} %"
        return Verdict(c.on_memory, "memory", reason)
    exhausted = seen.exhausted() if subject.kind == "model" else None
    if exhausted is not None:
        return Verdict(c.on_exhausted, "providers", f"no provider can take a call: {exhausted}")
    free = seen.capacity_percent
    tight = free is not None and free < c.capacity_percent_min
    if tight and subject.kind in ("run", "model") and not subject.bounded and subject.priority < PASSES_CAPACITY:
        reason = f"the providers have {free:.0f} % of their capacity free, under {c.capacity_percent_min:g} %"
        return Verdict(c.on_capacity, "capacity", reason)
    held = subject.kind == "work" and not subject.bounded and subject.priority < PASSES_MEMORY
    if held and seen.cpu_percent > c.cpu_percent_max and subject.busy > 0:
        return Verdict(c.on_cpu, "cpu", f"CPU {seen.cpu_percent:.0f} % busy, over {c.cpu_percent_max:g} %")
    return None


@dataclass(frozen=True, slots=True)
class Queued:
    """A run or node waiting at the gate: since when, and the verdict that queued it (recorded)."""

    since: float
    first: Verdict


class ResourceGate:
    """Probes (cached `probe_s`) and decides, for each new run whether and how it starts; for
    each node, through `plait.engine.node_gate`, whether it executes now.

    `config`: the settings, or a callable giving the ones in force at each decision.
    `probe`: the `ProbeFn` (default: `MachineProbe` of this machine and `provider`).
    `clock`, `sleep`: how queueing measures and waits (tests pass their own)."""

    def __init__(
        self,
        config: ResourcesConfig | Callable[[], ResourcesConfig],
        store: Store,
        provider: Provider | None,
        in_flight: Callable[[], int],
        disk_path: str | None = None,
        *,
        probe: ProbeFn | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.settings: Callable[[], ResourcesConfig] = config if callable(config) else (lambda: config)
        self.store, self.provider, self.in_flight = store, provider, in_flight
        self.prober: ProbeFn = probe or MachineProbe(disk_path or _store_folder(store), provider)
        self.clock, self.sleep = clock, sleep
        self.working = 0
        """Model-free nodes this engine executes now (the CPU rule's measure of its own load)."""
        self._last: Probe | None = None
        self._taken_at = 0.0
        self._taking: asyncio.Future[Probe] | None = None
        if probe is None:
            import psutil

            psutil.cpu_percent(interval=None)  # the first reading is meaningless: start the measure

    @property
    def config(self) -> ResourcesConfig:
        """The settings in force (the one place the gate reads them)."""
        return self.settings()

    def probe(self) -> Probe:
        """The probe, taken again once `probe_s` has passed since the last."""
        if self._last is None or self.clock() - self._taken_at >= self.config.probe_s:
            self._last, self._taken_at = self.prober(), self.clock()
        return self._last

    async def probed(self) -> Probe:
        """`probe` without blocking the event loop: a cached probe at once; a new one that waits
        for nothing (no remote provider to reach) at once too; one that waits for the network in
        a thread, once for every caller; those that have a last probe keep it meanwhile, the
        others wait for it in the order they asked."""
        if not getattr(self.prober, "slow", False):
            return self.probe()
        last, taking = self._last, self._taking
        if taking is not None and taking.get_loop() is not asyncio.get_running_loop():
            taking = None  # left by an event loop that has ended
        if last is not None and (taking is not None or self.clock() - self._taken_at < self.config.probe_s):
            return last
        if taking is None:
            taking = self._taking = asyncio.ensure_future(asyncio.to_thread(self.probe))
            taking.add_done_callback(self._taken)
        return await asyncio.shield(taking)

    def _taken(self, done: asyncio.Future[Probe]) -> None:
        if self._taking is done:
            self._taking = None

    @property
    def last(self) -> Probe | None:
        """The last probe taken, without probing (None: none yet)."""
        return self._last

    def forget(self) -> None:
        """Probe afresh next time (a queued subject re-probes; CPU readings are kept their
        `probe_s`: a reading over a fraction of a second says nothing)."""
        self._last = None

    def verdict(self, seen: Probe, *, bounded: bool = False) -> Verdict | None:
        """The rule that fires on `seen` for a new run, or None: execute. `bounded`: the caller
        bounds its runs in flight itself; the provider capacity rule does not apply."""
        return decide(self.config, seen, Subject("run", bounded=bounded, busy=self.in_flight()))

    async def admit(self, run_id: str, *, bounded: bool = False) -> Verdict:
        """How run `run_id` starts: execute (after queueing, if it had to), pause, degrade or
        reject, and why; each decision but a plain execute is recorded on the run."""
        queued: Queued | None = None
        while True:
            seen = await self.probed()
            found = self.verdict(seen, bounded=bounded)
            waited = self.clock() - queued.since if queued is not None else 0.0
            if found is None or found.action == "execute":
                if queued is None:
                    return found or Verdict("execute", "", "capacity is there")
                ended = Verdict("execute", queued.first.rule, f"started after queueing {waited:.1f} s")
                return await self.record(run_id, ended, seen)
            if found.action != "queue":
                return await self.record(run_id, found, seen)
            if queued is None:
                queued = Queued(self.clock(), await self.record(run_id, found, seen))
            limit = self.config.cpu_queue_max_s if found.rule == "cpu" else self.config.queue_max_s
            if waited >= limit:
                reason = f"started after queueing {limit:g} s, the most a run waits: {found.reason}"
                return await self.record(run_id, Verdict("execute", found.rule, reason), seen)
            await self.sleep(min(RECHECK_S, self.config.probe_s))
            if found.rule != "cpu":
                self.forget()

    async def record(self, run_id: str, verdict: Verdict, seen: Probe, node_run_id: str | None = None) -> Verdict:
        """`verdict`, recorded on the run (and node run) with the probe it was made on."""
        decision = Decision(run_id, verdict.action, verdict.rule, verdict.reason, seen.as_json(),
                            node_run_id=node_run_id, at=time.time())  # fmt: skip
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
