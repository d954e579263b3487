#!/usr/bin/env bash
# Run the exact commands of the GitHub Actions workflow and the GitLab CI job locally, install step
# included (from a snapshot of this working tree instead of the git URL), each in a fresh virtual
# environment, on a passing and a failing example checkpoint served by a loopback Hub; plus the
# pre-commit hook's entry. See run_local.py for what it checks. Needs git and pip's package index.
# Progress goes to stderr; the temporary directory is removed at the end and on Ctrl-C, SIGTERM
# or SIGHUP (exec: the signals reach run_local.py itself).
# Usage: examples/ci/run_local.sh [--good DIR] [--broken DIR] [--keep] [-v]
# Without the install steps (the kvscale on PATH): python3 examples/ci/run_local.py
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${PYTHON:-python3}" "$here/run_local.py" --install "$@"
