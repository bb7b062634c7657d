"""Every file and value the CLI reads is bounded: size, nesting, alias expansion, text that is not
text, values no database or serializer can hold. Each is a clear message and exit 2, through the
real `plait` entry point, and nothing is stored."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plait.model.documents import MAX_FILE_BYTES, MAX_VALUES
from plait.model.limits import MAX_DEPTH, MAX_INT_DIGITS
from tests.cli.test_run_cli import EXAMPLES, example_args, plait

GRAPH = EXAMPLES / "feedback_triage.yaml"
SCRIPT = f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}"
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00"


def alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def refused(cwd: Path, *args: str) -> str:
    """stderr of a `plait run` of the feedback example that must exit 2 and store no run."""
    done = plait("run", str(GRAPH), "--llm", SCRIPT, *args, cwd=cwd)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "internal error" not in done.stderr
    listed = plait("runs", "list", "--json", cwd=cwd)
    assert listed.returncode != 0 or json.loads(listed.stdout) == [], listed.stdout
    return done.stderr


def test_an_input_file_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("feedback: hi\n" + alias_bomb(6))  # 9**7 values once expanded
    stderr = refused(tmp_path, "--input-file", str(bomb))
    assert f"--input-file {bomb} expands to more than {MAX_VALUES:,} values" in stderr


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "loop.yaml"
    loop.write_text("feedback: &f [*f]\n")
    assert "holds an alias inside the value it names" in refused(tmp_path, "--input-file", str(loop))


@pytest.mark.parametrize("kind", ["device", "directory", "fifo"])
def test_an_input_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    if kind == "device":
        path = Path("/dev/zero")
    elif kind == "directory":
        path = tmp_path / "dir.yaml"
        path.mkdir()
    else:
        path = tmp_path / "pipe.yaml"
        os.mkfifo(path)  # no writer: reading it would block forever
    assert f"--input-file {path} is not a regular file" in refused(tmp_path, "--input-file", str(path))


def test_an_input_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"feedback: " + b"x" * (MAX_FILE_BYTES + 10) + b"\n")
    assert f"the limit is {MAX_FILE_BYTES / 1048576:.1f} MiB" in refused(tmp_path, "--input-file", str(big))


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_binary_input_file_is_a_clear_error(tmp_path: Path, suffix: str) -> None:
    binary = tmp_path / f"photo{suffix}"
    binary.write_bytes(BINARY)
    assert f"--input-file {binary} is not UTF-8 text (byte 0x89 at offset 0)" in refused(
        tmp_path, "--input-file", str(binary)
    )


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_input_file_nested_100k_deep_is_a_clear_error(tmp_path: Path, suffix: str) -> None:
    deep = tmp_path / f"deep{suffix}"
    deep.write_text('{"feedback": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert f"nested deeper than the limit of {MAX_DEPTH} levels" in refused(tmp_path, "--input-file", str(deep))


def test_an_input_nested_past_the_limit_names_its_path(tmp_path: Path) -> None:
    nested = tmp_path / "nested.json"
    nested.write_text('{"feedback": "x", "deep": ' + "[" * 300 + "]" * 300 + "}")
    stderr = refused(tmp_path, "--input-file", str(nested))
    assert "input.deep[0][0][0]" in stderr
    assert f"the value is nested deeper than the limit of {MAX_DEPTH} levels" in stderr
    assert f"-i deep=… is nested deeper than the limit of {MAX_DEPTH} levels" in refused(
        tmp_path,
        "-i",
        "deep=" + "[" * 60_000 + "]" * 60_000,  # as deep as one argument can be
    )


def test_an_integer_past_the_digit_limit_is_a_clear_error(tmp_path: Path) -> None:
    digits = "7" * (MAX_INT_DIGITS + 1)
    assert f"more than {MAX_INT_DIGITS} digits" in refused(tmp_path, "-i", f"n={digits}")
    as_file = tmp_path / "big_int.yaml"
    as_file.write_text(f"feedback: hi\nn: {digits}\n")
    assert f"more than {MAX_INT_DIGITS} digits" in refused(tmp_path, "--input-file", str(as_file))


def test_a_lone_surrogate_in_an_input_is_refused_naming_the_path(tmp_path: Path) -> None:
    stderr = refused(tmp_path, "-i", 'feedback="bad \\ud800"')
    assert "input.feedback: the string holds a lone surrogate (U+D800)" in stderr
    as_file = tmp_path / "input.json"
    as_file.write_text('{"feedback": "fine", "tags": ["ok", "\\udfff"]}')
    assert "input.tags[1]: the string holds a lone surrogate (U+DFFF)" in refused(
        tmp_path, "--input-file", str(as_file)
    )


def test_nan_and_infinity_in_an_input_file_are_refused(tmp_path: Path) -> None:
    as_json = tmp_path / "input.json"
    as_json.write_text('{"feedback": "x", "score": NaN}')
    assert "NaN is not a JSON number" in refused(tmp_path, "--input-file", str(as_json))
    as_yaml = tmp_path / "input.yaml"
    as_yaml.write_text("feedback: x\nscore: .inf\n")
    assert "input.score: inf is not a JSON number" in refused(tmp_path, "--input-file", str(as_yaml))


def test_input_dates_stay_text(tmp_path: Path) -> None:
    """The bounded YAML reader keeps YAML 1.1's dates as the text written (a date is not JSON)."""
    dated = tmp_path / "input.yaml"
    dated.write_text("feedback: The app crashes every time I upload a photo larger than 10 MB.\nwhen: 2024-05-01\n")
    done = plait("run", str(GRAPH), "--llm", SCRIPT, "--input-file", str(dated), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    shown = json.loads(plait("runs", "show", run["id"], "--json", cwd=tmp_path).stdout)
    assert shown["input"]["when"] == "2024-05-01"


def test_a_binary_scripted_file_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_bytes(BINARY)
    done = plait("run", str(GRAPH), "-i", "feedback=hi", "--llm", f"scripted:{script}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"scripted responses {script} is not UTF-8 text" in done.stderr


def test_a_scripted_file_alias_bomb_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("responses: []\n" + alias_bomb(6))
    done = plait("run", str(GRAPH), "-i", "feedback=hi", "--llm", f"scripted:{script}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"expands to more than {MAX_VALUES:,} values" in done.stderr


def test_bad_override_files_and_values_are_clear_errors_and_change_nothing(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    (run,) = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    before = plait("runs", "show", run["id"], "--json", "--ledger", cwd=tmp_path).stdout
    binary = tmp_path / "value.yaml"
    binary.write_bytes(BINARY)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(6))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    cases = [
        (["--file", str(binary)], f"--file {binary} is not UTF-8 text"),
        (["--file", str(bomb)], f"--file {bomb} expands to more than {MAX_VALUES:,} values"),
        (["--file", str(deep)], f"--file {deep} is nested deeper than the limit of {MAX_DEPTH} levels"),
        (["--file", "/dev/zero"], "--file /dev/zero is not a regular file"),
        (["--value", '{"label": "bad \\ud800"}'], "--value: value.label: the string holds a lone surrogate"),
        (["--value", '{"label": NaN}'], "--value is not valid JSON: NaN is not a JSON number"),
    ]
    for extra, message in cases:
        done = plait("override", run["id"], "classify", *extra, cwd=tmp_path)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)
    assert plait("runs", "show", run["id"], "--json", "--ledger", cwd=tmp_path).stdout == before


def test_upstream_files_are_bounded_too(tmp_path: Path) -> None:
    bomb = tmp_path / "upstream.yaml"
    bomb.write_text(alias_bomb(6))
    done = plait("run", str(GRAPH), "-i", "feedback=hi", "--dry-run", "--upstream", str(bomb), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"--upstream {bomb} expands to more than {MAX_VALUES:,} values" in done.stderr


def test_validate_refuses_devices_and_fifos_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)
    for path, kind in ((Path("/dev/zero"), "a device"), (fifo, "a pipe")):
        done = plait("validate", str(path), cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert f"{path}: error config/unreadable: graph file is not a regular file ({kind})" in done.stderr
