#!/bin/bash
# clang-tidy over the library and CLI, with compile flags from the Makefile.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-std=gnu17 -D_GNU_SOURCE -Iinclude -Isrc -Itests)
mapfile -t files < <(git ls-files 'src/*.c')
clang-tidy --quiet "${files[@]}" -- "${flags[@]}"
