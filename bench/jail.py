"""Benchmark: what the bubblewrap jail costs per TOOL call and per Python CODE run.

Each case starts the program through `plait.sandbox.programs.run_program`, the way the engine
does, `--repeat` times after one warm-up, interleaved so that the host's drift hits every case
alike; the table gives the fastest and the median, in milliseconds:

- `wc` unconfined (`[jail] mode = "none"`: a host folder made and removed per call);
- `wc` in the jail, without and with a per-program cgroup (where one can be made here);
- Python CODE (`main` returning a number) unconfined and in the jail.

    .venv/bin/python bench/jail.py [--repeat 40] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from plait.config import CodeConfig, JailConfig, ToolsConfig
from plait.sandbox import cgroups
from plait.sandbox.confinement import Confinement, for_python, for_tool
from plait.sandbox.jail import problem
from plait.sandbox.programs import run_program
from plait.sandbox.python import run_python

CODE = "def main(input, nodes):\n    return {'n': input['n'] + 1}\n"


def cases() -> dict[str, Callable[[], Awaitable[object]]]:
    jail = JailConfig()
    why = problem(jail)
    if why is not None:
        raise SystemExit(why)
    wc = shutil.which("wc") or "/usr/bin/wc"
    tools = ToolsConfig(allow=(wc,))
    jailed = for_tool(wc, False, tools, jail)
    found: dict[str, Callable[[], Awaitable[object]]] = {
        "wc, unconfined": lambda: tool(wc, Confinement(None)),
        "wc, jailed, no cgroup": lambda: tool(wc, replace(jailed, bounds=None)),
    }
    if cgroups.support(jail.cgroup).tree is not None:
        found["wc, jailed, cgroup"] = lambda: tool(wc, jailed)
    code = CodeConfig(python=True)
    free = for_python(sys.executable, code, JailConfig(mode="none"))
    boxed = for_python(sys.executable, code, jail)
    found["Python CODE, unconfined"] = lambda: python(*free, code)
    found["Python CODE, jailed"] = lambda: python(*boxed, code)
    return found


async def tool(path: str, confinement: Confinement) -> object:
    ran = await run_program([path, "-w"], env={}, timeout_s=30, max_output_bytes=10_000, confinement=confinement,
                            stdin=b"one two three\n")  # fmt: skip
    assert ran.exit_code == 0, ran
    assert ran.stdout.split() == [b"3"], ran
    return ran


async def python(executable: str, confinement: Confinement, code: CodeConfig) -> object:
    value = await run_python(CODE, {"n": 1}, {}, timeout_s=30, memory_mb=code.memory_mb, max_output_bytes=10_000,
                             processes=code.processes, confinement=confinement, executable=executable)  # fmt: skip
    assert value == {"n": 2}, value
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    found = cases()
    times: dict[str, list[float]] = {name: [] for name in found}

    async def measure() -> None:
        for call in found.values():
            await call()  # warm-up: the page cache, the jail probe
        for _ in range(args.repeat):
            for name, call in found.items():
                started = time.perf_counter()
                await call()
                times[name].append((time.perf_counter() - started) * 1000)

    asyncio.run(measure())
    rows = [(name, min(t), statistics.median(t)) for name, t in times.items()]
    if args.markdown:
        print("| case | min ms | median ms |\n| --- | --- | --- |")
        for name, low, mid in rows:
            print(f"| {name} | {low:.1f} | {mid:.1f} |")
    else:
        for name, low, mid in rows:
            print(f"{name:28} min {low:7.1f} ms   median {mid:7.1f} ms")


if __name__ == "__main__":
    main()
