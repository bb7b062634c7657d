"""Benchmark: `plait validate` on a generated 1,000-node graph.

Target (issue: foundation): well under one second for the whole command,
start-up included. Prints the in-process compile time (min/median of N) and
the wall time of the real CLI subprocess, and the modules that start-up pulls in.

    .venv/bin/python bench/validate_large.py [--nodes 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("sqlalchemy", "fastapi", "openai", "uvicorn", "celery", "llama_cpp")


def generate(n_nodes: int, width: int = 8, n_schemas: int = 24) -> dict[str, Any]:
    """A layered DAG: each layer has `width` LLM/TRANSFORM nodes reading the previous layer,
    with a CONDITION + MERGE diamond every 10 layers; every edge carries a schema."""
    schemas = [
        {
            "id": f"s{i}",
            "version": "1.0.0",
            "schema": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 500}, "score": {"type": "number"}},
                "required": ["text"],
            },
        }
        for i in range(n_schemas)
    ]
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    previous: list[str] = []
    layer = 0
    while len(nodes) < n_nodes:
        current: list[str] = []
        if layer % 10 == 9 and previous:
            nodes.append({"id": f"route_{layer}", "type": "CONDITION", "condition_expr": "current.score > 0.5"})
            nodes.append({"id": f"join_{layer}", "type": "MERGE"})
            for i, src in enumerate(previous):
                edges.append({"source": src, "target": f"route_{layer}", "schema_id": f"s{i % n_schemas}"})
            edges.append({"source": f"route_{layer}", "target": f"join_{layer}", "condition_key": "true"})
            edges.append({"source": f"route_{layer}", "target": f"join_{layer}", "condition_key": "false"})
            current = [f"join_{layer}"]
        else:
            for i in range(min(width, n_nodes - len(nodes))):
                node_id = f"n{layer}_{i}"
                src = previous[i % len(previous)] if previous else None
                if i % 3 == 2:
                    nodes.append({"id": node_id, "type": "TRANSFORM", "transform_expr": "({text: 'x', score: 1})"})
                else:
                    ref = f"{src}.text" if src and not src.startswith("join") else "input.topic"
                    nodes.append(
                        {
                            "id": node_id,
                            "type": "LLM_CALL",
                            "system_prompt": f"You are step {layer} of a long pipeline.",
                            "user_prompt_tpl": "Topic: {{ input.topic }}\nPrevious: {{ " + ref + " }} (%input.topic%)",
                            "max_retries": 1,
                        }
                    )
                if src:
                    edges.append({"source": src, "target": node_id, "schema_id": f"s{(layer + i) % n_schemas}"})
                current.append(node_id)
        previous = current
        layer += 1
    return {
        "plait": 1,
        "id": "bench_large",
        "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
        "schemas": schemas,
        "nodes": nodes,
        "edges": edges,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.yaml"
        path.write_text(yaml.safe_dump(generate(args.nodes), sort_keys=False))
        size_kib = path.stat().st_size // 1024
        from plait.compile import compile_file

        first = compile_file(path)
        if not first.valid:
            for diag in first.errors[:10]:
                print(diag.format())
            raise SystemExit("generated graph is invalid: fix the generator")
        in_process = []
        for _ in range(args.repeat):
            from plait.compile.templates import _parse

            _parse.cache_clear()  # measure template parsing too, not just the cache
            start = time.perf_counter()
            compile_file(path)
            in_process.append(time.perf_counter() - start)
        # As an installed package has it (pip compiles bytecode on install): a checkout run with
        # PYTHONDONTWRITEBYTECODE=1 would otherwise recompile Plait's modules on every start.
        import plait

        compileall.compile_dir(str(Path(plait.__file__).parent), quiet=1)
        cli = _cli_times(path, args.repeat)
        floor = _cli_times(ROOT / "examples" / "blog_writer.yaml", args.repeat)
        probe = (
            "import contextlib, io, sys\nfrom plait.cli.app import app\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        app(['validate', {str(path)!r}])\n    except SystemExit:\n        pass\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
        )
        heavy = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()

    graph = first.graph
    assert graph is not None
    print(f"graph: {len(graph.nodes)} nodes, {len(graph.edges)} edges, {size_kib} KiB YAML")
    print(f"compile_file in-process: {_ms(in_process)}")
    print(f"`plait validate` wall:   {_ms(cli)}")
    print(f"  start-up floor (`plait validate examples/blog_writer.yaml`, 3 nodes): {_ms(floor)}")
    print(f"heavy modules imported by validate: {heavy or 'none'}")


def _cli_times(path: Path, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "plait", "validate", str(path)], capture_output=True)
        times.append(time.perf_counter() - start)
        assert proc.returncode == 0, proc.stderr.decode()
    return times


def _ms(samples: list[float]) -> str:
    return f"min {min(samples) * 1000:.0f} ms, median {statistics.median(samples) * 1000:.0f} ms"


if __name__ == "__main__":
    main()
