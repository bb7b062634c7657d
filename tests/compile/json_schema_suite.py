"""The official JSON-Schema-Test-Suite, as the pinned `jsonschema` source distribution on PyPI ships it.

jsonschema's sdist carries the suite under `json/tests/` (its own tests run it). `pip download`
fetches that archive by name from the package index, its SHA-256 is checked, and only the
required tests of drafts 2020-12 and 7 are read (not `optional/`). Nothing of the suite is copied
into this repository. The unpacked tests are kept in the user's cache folder, so a new checkout
(CI clones one for every run) finds them: `pip download` prepares the sdist's metadata, which
installs its build backend first, and that takes longer than the whole check.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SDIST = "jsonschema==4.26.0"
ARCHIVE = "jsonschema-4.26.0.tar.gz"
SHA256 = "0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326"
DRAFTS = {
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
}


@dataclass(frozen=True, slots=True)
class Group:
    """One schema of the suite with the instances it must accept or reject."""

    key: str
    """`draft/file: description`, unique in the suite."""
    dialect: str
    schema: Any
    tests: list[dict[str, Any]]


def suite_folder(cache: Path) -> Path:
    """The suite's `tests/` folder under `cache`, downloaded and unpacked on first use. It is
    unpacked beside its place and renamed into it whole, so that runs at once never read half."""
    target = cache / ARCHIVE.removesuffix(".tar.gz")
    if not (target / "done").exists():
        with tempfile.TemporaryDirectory(dir=cache) as work:
            download = Path(work) / "download"
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    SDIST,
                    "-d",
                    download,
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            archive = download / ARCHIVE
            why = f"`pip download {SDIST}` (the JSON-Schema-Test-Suite's source) failed: {result.stderr[-2000:]}"
            assert result.returncode == 0, why
            assert archive.exists(), why
            digest = hashlib.sha256(archive.read_bytes()).hexdigest()
            assert digest == SHA256, f"{ARCHIVE} has SHA-256 {digest}, expected {SHA256}"
            unpacked = Path(work) / "unpacked"
            _unpack(archive, unpacked)
            (unpacked / "done").write_text("ok")
            with contextlib.suppress(OSError):  # another run put the same files there first
                unpacked.rename(target)
    assert (target / "done").exists(), f"{target} holds part of the suite: delete it, and it is fetched again"
    return target / "tests"


def _unpack(archive: Path, target: Path) -> None:
    """Only the required tests' JSON files, each written under `target/tests/<draft>/`."""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and len(parts) == 5 and parts[1:3] == ("json", "tests") and parts[3] in DRAFTS:
                source = tar.extractfile(member)
                assert source is not None
                out = target / "tests" / parts[3] / parts[4]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(source.read())


def groups(folder: Path) -> Iterator[Group]:
    """Every group of the required tests of drafts 2020-12 and 7, in file order."""
    for draft, dialect in DRAFTS.items():
        for path in sorted((folder / draft).glob("*.json")):
            for group in json.loads(path.read_text(encoding="utf-8")):
                key = f"{draft}/{path.stem}: {group['description']}"
                yield Group(key, dialect, group["schema"], group["tests"])
