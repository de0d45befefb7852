#!/bin/bash
# The C library as an embedder gets it: `make install`, then build the
# example with pkg-config and run it.
. "$(dirname "$0")/../lib.sh"
plan 4
dest=$(mktemp -d)
at_exit 'rm -rf "$dest"'
make -s -C "$ROOT" install DESTDIR="$dest" PREFIX=/usr/local >/dev/null
is "$(find "$dest" -type f | sed "s|$dest||" | sort | tr '\n' ' ')" \
	"/usr/local/bin/hutch /usr/local/include/hutch.h /usr/local/lib/libhutch.a /usr/local/lib/pkgconfig/hutch.pc /usr/local/libexec/hutch/hutch-full /usr/local/libexec/hutch/hutch-zygote " \
	"make install places the binaries (hutch, hutch-full, the zygote), header, library and pkg-config file"
export PKG_CONFIG_PATH=$dest/usr/local/lib/pkgconfig
flags=$(pkg-config --define-prefix --cflags --static --libs hutch)
like "$flags" "-lhutch.*-lseccomp" "pkg-config names libhutch and its dependencies"
# shellcheck disable=SC2086 # flags are words
cc -o "$dest/run-python" "$ROOT/examples/run-python.c" $flags
ok "the example builds against the installed library"
json=$("$dest/run-python" 'print(sum(range(10)))' || true)
is "$(echo "$json" | jget stdout)" 45 "the example runs Python in a sandbox"
done_testing
