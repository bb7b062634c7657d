"""Where W2's wall time goes beyond the ideal (Plait only): a timeline of the model-call slots.

Runs W2 of `engine_vs_langgraph.py` (500 runs of 1 -> 8 -> merge, each call a 50 ms sleep under
a limit of 64) with a provider that logs when each call starts and ends, and a GC callback, and
splits the excess over the ideal into:

- start: time until the first call starts (the 500 runs being created and set up);
- slots: slot time left idle while calls were waiting (between one call's end and the next's
  start), and in the tail after the last call started;
- lateness: calls lasting longer than 50 ms because the loop was busy when their timer expired;
- gc: full garbage collections (they stop the loop).

    .venv/bin/python bench/w2_timeline.py [--runs 500] [--loop uvloop|asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import engine_vs_langgraph as bench

from plait.engine import eventloop


class LoggingProvider(bench.SleepyProvider):
    def __init__(self, content: str, log: list[tuple[float, int]]):
        super().__init__(content)
        self.log = log

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        self.log.append((time.perf_counter(), 1))
        await asyncio.sleep(bench.CALL_S)
        self.log.append((time.perf_counter(), -1))
        return self._response


async def measure(runs: int) -> None:
    log: list[tuple[float, int]] = []
    pauses: list[float] = []
    started: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started["at"] = time.perf_counter()
            else:
                pauses.append(time.perf_counter() - started["at"])

    with tempfile.TemporaryDirectory(prefix="plait-bench-timeline-") as tmp_name:
        store = bench.open_store(Path(tmp_name), "timeline.db")
        fanout = bench.PlaitFanout(store, Path(tmp_name))
        fanout.provider = LoggingProvider('{"text": "ok"}', log)
        fanout.engine.runtime.provider = fanout.provider
        await fanout.warm_up()
        log.clear()
        gc.callbacks.append(on_gc)
        begin = time.perf_counter()
        await fanout.many(runs)
        wall = time.perf_counter() - begin
        gc.callbacks.remove(on_gc)
        await fanout.aclose()
        store.close()

    calls = runs * bench.CALLS_PER_RUN
    limit = bench.LIMIT
    ideal = -(-calls // limit) * bench.CALL_S
    first, last_start, last_end = log[0][0], max(t for t, d in log if d == 1), log[-1][0]
    idle_waiting = idle_tail = 0.0
    in_flight, previous = 0, first
    for at, delta in log:
        idle = (limit - in_flight) * (at - previous)
        if previous < last_start:
            idle_waiting += idle
        else:
            idle_tail += idle
        in_flight, previous = in_flight + delta, at
    busy = calls * bench.CALL_S / limit  # slot-seconds / slots: the span if every slot were always busy
    lateness = (last_end - first) - busy - (idle_waiting + idle_tail) / limit
    print(f"W2 timeline, {runs} runs, {calls} calls of {bench.CALL_S * 1000:.0f} ms under a limit of {limit}")
    print(f"  wall {wall:.3f} s = {wall / ideal:.3f} x the ideal {ideal:.2f} s; every slot always busy: {busy:.3f} s")
    print(f"  start: first call after {1000 * (first - begin):6.0f} ms")
    print(f"  slots idle while calls waited  {1000 * idle_waiting / limit:6.0f} ms of wall")
    print(f"  slots idle in the tail         {1000 * idle_tail / limit:6.0f} ms")
    per_call = 1000 * lateness * limit / calls
    print(f"  lateness (calls > 50 ms)       {1000 * lateness:6.0f} ms  ({per_call:.2f} ms per call)")
    print(f"  end after the last call        {1000 * (begin + wall - last_end):6.0f} ms")
    print(f"  full GC pauses: {len(pauses)}, {1000 * sum(pauses):.0f} ms (inside the figures above)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--loop", choices=eventloop.available(), default=eventloop.available()[0])
    args = parser.parse_args()
    print(bench.LOOPS[args.loop])
    eventloop.run(measure(args.runs), args.loop)


if __name__ == "__main__":
    main()
