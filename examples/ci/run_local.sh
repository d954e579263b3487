#!/usr/bin/env bash
# Run the commands of the GitHub Actions workflow, the GitLab CI job and the pre-commit hook
# locally, on a passing and a failing example checkpoint (see run_local.py for what it checks).
# Usage: examples/ci/run_local.sh [--good DIR] [--broken DIR] [--keep] [-v]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${PYTHON:-python}" "$here/run_local.py" "$@"
