#!/usr/bin/env bash
# Refresh constraints.txt, the locked set of every package the project installs (all extras included).
#
#   bash scripts/refresh-lock.sh                  # the newest versions pyproject.toml's ranges allow
#   bash scripts/refresh-lock.sh numpy pyyaml     # only these move; everything else stays as locked
#
# uv resolves (it is the one resolver that writes a single set valid on every Python the project supports, with
# markers for what only some platforms need); pip installs, so users need nothing but pip. The new set is then
# installed into a fresh virtual environment and the whole of .ci/run (the README's test command) runs there.
# constraints.txt is replaced only when that passes; on a failure the old lock is put back and the log kept.
# Commit the new constraints.txt together with whatever the upgrade needed.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work/venv"' EXIT
python -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "uv>=0.9,<1"

if [ "$#" -eq 0 ]; then
    upgrade=(--upgrade)
else
    upgrade=()
    for package in "$@"; do upgrade+=(--upgrade-package "$package"); done
fi
cp constraints.txt "$work/constraints.old.txt"
# --universal --fork-strategy fewest: one version per package for Python 3.11 and 3.12 alike (markers only where a
# platform needs a package at all), so the set the suite passed with is the set every user installs.
"$work/venv/bin/uv" pip compile pyproject.toml --all-extras --universal --fork-strategy fewest \
    --python-version 3.11 "${upgrade[@]}" --quiet --no-header --output-file constraints.new.txt
{ sed -n '1,/^$/p' "$work/constraints.old.txt"; cat constraints.new.txt; } > constraints.txt
rm constraints.new.txt

echo "refresh-lock: changes:" >&2
diff <(grep '==' "$work/constraints.old.txt") <(grep '==' constraints.txt) >&2 || true
echo "refresh-lock: running .ci/run against the new lock in $work/venv (log: $work/ci.log)" >&2
if PATH="$work/venv/bin:$PATH" VIRTUAL_ENV="$work/venv" bash .ci/run > "$work/ci.log" 2>&1; then
    tail -n 3 "$work/ci.log" >&2
    echo "refresh-lock: the suite passed; constraints.txt is the new lock: commit it" >&2
else
    tail -n 40 "$work/ci.log" >&2
    cp "$work/constraints.old.txt" constraints.txt
    echo "refresh-lock: the suite failed on the new set; constraints.txt is unchanged (full log: $work/ci.log)" >&2
    exit 1
fi
