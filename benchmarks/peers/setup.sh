#!/usr/bin/env bash
# Builds the peer ports' virtualenvs under benchmarks/.peers/ (git-ignored) from the pinned
# requirements beside this script, then checks that each runner imports.
#   bash benchmarks/peers/setup.sh                 # both
#   bash benchmarks/peers/setup.sh llmcompiler     # one
# PYTHON picks the interpreter (default python3.11).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3.11}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    names=(llamaindex llmcompiler)
fi

for name in "${names[@]}"; do
    requirements="$here/$name.txt"
    [ -f "$requirements" ] || { echo "unknown peer: $name" >&2; exit 2; }
    venv="$root/benchmarks/.peers/$name"
    echo "building $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    (cd "$root" && "$venv/bin/python" -c "import benchmarks.peers.${name}_runner")
    echo "ready: $name"
done
