#!/bin/bash
# clang-tidy over the library and CLI, with compile flags from the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a py <<<"$(pkg-config --cflags python3-embed)"
flags=(-std=gnu17 -D_GNU_SOURCE -Iinclude -Isrc -Itests "${py[@]}")
mapfile -t files < <(git ls-files 'src/*.c')
# "N warnings generated" counts checks we do not enable: drop that noise
clang-tidy --quiet "${files[@]}" -- "${flags[@]}" 2>&1 | { grep -v "warnings\? generated\.$" || true; }
