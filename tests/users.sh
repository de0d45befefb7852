#!/bin/bash
# Unprivileged users for the rootless tests (sourced by lib.sh and check.sh).

# An unprivileged user for rootless tests: HUTCH_TEST_USER, or hutch-test
# (created when we are root and it does not exist).
test_user() {
	local u=${HUTCH_TEST_USER:-hutch-test}
	if ! id "$u" >/dev/null 2>&1; then
		[ "$(id -u)" -eq 0 ] || return 1
		useradd --system --no-create-home --shell /usr/sbin/nologin "$u" >/dev/null 2>&1 || return 1
	fi
	echo "$u"
}

# userns_works USER: can USER create a user namespace?
userns_works() {
	runuser -u "$1" -- unshare -U true >/dev/null 2>&1
}

