#!/bin/bash
# make check-v2: hutch's cgroup v2 backend, for real, in a qemu guest.
#
# This build machine runs cgroup v1 for memory/pids/cpu; most users run pure
# cgroup v2. So: boot the Debian kernel (/boot/vmlinuz-*-amd64) under qemu in
# software emulation (TCG) with cgroup_no_v1=all, from an initramfs holding
# busybox, build/hutch with its shared libraries, build/probe and a static
# driver for the cgroup API (tests/v2/driver.c). The guest (tests/v2/init.sh,
# then tests/v2/guest.sh) writes unnumbered TAP lines to its second serial
# port; this script numbers them, prints them and ends with one
# "N passed, N failed" line. Exit status 0 only when every test passed and
# the guest finished. Files: build/v2/ (console.log is the guest's console).
#
# Needs: qemu-system-x86, linux-image-amd64, busybox-static, cpio, gcc, and
# `make all` done (the check-v2 rule does both). Root is not needed here.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/tests/v2
build=$top/build
out=$build/v2
root=$out/root
guest_timeout=${HUTCH_V2_TIMEOUT:-600}

kernel=${HUTCH_V2_KERNEL:-$(printf '%s\n' /boot/vmlinuz-*-amd64 | sort -V | tail -n1)}
busybox=${HUTCH_V2_BUSYBOX:-/bin/busybox}

die() {
	echo "check-v2: $*" >&2
	exit 1
}

for f in "$build/hutch" "$build/probe" "$build/libhutch.a"; do
	[ -e "$f" ] || die "$f missing: run 'make all' first"
done
[ -r "$kernel" ] || die "no readable kernel ($kernel): install linux-image-amd64"
[ -x "$busybox" ] || die "no $busybox: install busybox-static"
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked: install busybox-static"
fi
command -v qemu-system-x86_64 >/dev/null || die "no qemu-system-x86_64: install qemu-system-x86"
command -v cpio >/dev/null || die "no cpio: install cpio"

start=$SECONDS
rm -rf "$out"
mkdir -p "$out"

# The driver: static, against the library's own cgroup code.
gcc -std=gnu17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$top/include" -I"$top/src" -static \
	-o "$out/driver" "$src/driver.c" "$build/libhutch.a" -lpthread

# The guest's root: hutch's "host" template binds /usr /bin /sbin /lib*
# and a few /etc entries from it, so the same layout serves the sandboxes.
mkdir -p "$root"/{bin,sbin,usr/bin,lib,lib64,etc,proc,sys,dev,tmp,newroot}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cp "$build/hutch" "$root/usr/bin/hutch"
# Shared libraries and the dynamic loader at the paths ldd names.
for lib in $(ldd "$build/hutch" | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$root/etc/group"
cp "$build/probe" "$root/probe"
cp "$out/driver" "$root/driver"
install -m 0755 "$src/init.sh" "$root/init"
install -m 0755 "$src/guest.sh" "$root/guest.sh"
(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$out/initrd.gz"

echo "check-v2: booting $(basename "$kernel") under qemu (TCG), console in $out/console.log"
rc=0
timeout "$guest_timeout" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 \
	-nographic -no-reboot -monitor none \
	-serial "file:$out/console.log" -serial "file:$out/tap.log" \
	-kernel "$kernel" -initrd "$out/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet loglevel=4 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1" \
	</dev/null || rc=$?

n=0
passed=0
failed=0
done=0
while IFS= read -r line; do
	line=${line%$'\r'}
	case $line in
	"ok - "*)
		n=$((n + 1)) passed=$((passed + 1))
		echo "ok $n - ${line#ok - }"
		;;
	"not ok - "*)
		n=$((n + 1)) failed=$((failed + 1))
		echo "not ok $n - ${line#not ok - }"
		;;
	"# guest done")
		done=1
		;;
	"#"*)
		echo "$line"
		;;
	esac
done < <(cat "$out/tap.log" 2>/dev/null)

if [ "$done" != 1 ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - the guest ran to the end (qemu exit status $rc; $guest_timeout s limit)"
	echo "# last lines of $out/console.log:"
	tail -n 40 "$out/console.log" 2>/dev/null | tr -d '\r' | sed 's/^/#   /'
fi
echo "1..$n"
echo "# check-v2 took $((SECONDS - start)) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
