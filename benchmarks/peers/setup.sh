#!/usr/bin/env bash
# Builds the peers' virtualenvs under benchmarks/.peers/ (git-ignored) from the pinned
# requirements beside this script, then checks that each runner imports.
#   bash benchmarks/peers/setup.sh                 # all three
#   bash benchmarks/peers/setup.sh llmcompiler     # one
# PYTHON picks the interpreter (default python3.11).
#
# `original` is the paper's own code (github.com/SqueezeAILab/LLMCompiler), which is not on PyPI
# and is never copied into this repository: it is cloned from LLMCOMPILER_SRC (a clone URL or a
# local git directory, bare or not; default the GitHub repository) and checked out at the pinned
# commit into benchmarks/.peers/original/LLMCompiler, inside its virtualenv's folder:
#   LLMCOMPILER_SRC=/path/to/LLMCompiler.git bash benchmarks/peers/setup.sh original
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3.11}"
llmcompiler_src="${LLMCOMPILER_SRC:-https://github.com/SqueezeAILab/LLMCompiler}"
llmcompiler_commit=a00c9d35507507da70e8c637eee64efc8c1857ae  # main, 2024-07-09
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    names=(llamaindex llmcompiler original)
fi

for name in "${names[@]}"; do
    requirements="$here/$name.txt"
    [ -f "$requirements" ] || { echo "unknown peer: $name" >&2; exit 2; }
    venv="$root/benchmarks/.peers/$name"
    echo "building $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    if [ "$name" = original ]; then
        git clone --quiet --no-checkout "$llmcompiler_src" "$venv/LLMCompiler"
        git -C "$venv/LLMCompiler" -c advice.detachedHead=false checkout --quiet "$llmcompiler_commit"
        echo "LLMCompiler at $(git -C "$venv/LLMCompiler" rev-parse HEAD)"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    (cd "$root" && "$venv/bin/python" -c "import benchmarks.peers.${name}_runner")
    if [ "$name" = original ]; then  # its modules come from the checkout, imported at start
        (cd "$root" && "$venv/bin/python" -c "import benchmarks.peers.original_runner as r; r.load()")
    fi
    echo "ready: $name"
done
