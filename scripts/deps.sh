#!/bin/bash
# Install every Debian package the build, the tests, the demo and the
# benchmarks need. Idempotent; uses sudo when not root.
set -euo pipefail

packages=(
	build-essential pkg-config libseccomp-dev libjansson-dev libpython3-dev libarchive-dev
	# hutch serve: HTTP (libmicrohttpd), SHA-256 of API keys (nettle)
	libmicrohttpd-dev nettle-dev
	# the agent: LLM mode over libcurl, the execution history in SQLite
	libcurl4-openssl-dev libsqlite3-dev
	e2fsprogs
	# network policy tests: a fake internet (TLS server, clients in the sandbox)
	curl openssl ca-certificates
	# network policy full: the user-mode network stack
	slirp4netns
	clang clang-format clang-tidy cppcheck libclang-rt-14-dev
	shellcheck perl iproute2 procps util-linux python3 nodejs
	bubblewrap
	# bench/http-load.sh: HTTP load on hutch serve
	wrk
	# session kernels: rich outputs (DataFrames, figures) in the tests and the demo
	python3-numpy python3-pandas python3-matplotlib python3-pytest
)
# Only for `make check-v2` (a cgroup v2 guest under qemu).
if [ "${HUTCH_DEPS_V2:-0}" = 1 ]; then
	packages+=(qemu-system-x86 linux-image-amd64 busybox-static cpio)
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
