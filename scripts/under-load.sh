#!/usr/bin/env bash
# Run a command while competing processes keep the cores busy: LOAD_CPUS (default 2) stress-ng CPU workers
# at normal priority, stopped when the command ends. `make test-under-load` runs the suite this way (issue 28:
# the suite must pass on a busy machine, as users' laptops and CI machines are).
#   usage: scripts/under-load.sh COMMAND [ARG...]
set -euo pipefail
cpus="${LOAD_CPUS:-2}"
if ! command -v stress-ng >/dev/null; then
  echo "error: stress-ng is not on PATH: run scripts/system-deps.sh (it installs the Debian package stress-ng)" >&2
  exit 1
fi
stress-ng --cpu "$cpus" --quiet &
load_pid=$!
export UNDER_LOAD_PID="$load_pid"  # the command may look at its competitors: the workers are its children
# the tests' load factor (tests/load_factor.py) never counts less than these workers: a lab built in the run's
# first second, before the load average has risen, gets Job timeouts for the machine the run will share
export HOMECLUSTER_TEST_BUSY_CPUS="$cpus"
trap 'kill -TERM "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
echo "under load: $cpus stress-ng CPU workers (pid $load_pid) while running: $*"
start=$(date +%s)
status=0
"$@" || status=$?
echo "under load: exit $status after $(( $(date +%s) - start )) s"
exit "$status"
