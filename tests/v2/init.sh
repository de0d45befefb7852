#!/bin/sh
# Stage 1 of the check-v2 guest: /init of the initramfs (busybox sh).
#
# The initramfs root (rootfs) can never be pivot_root'ed away from, and every
# hutch cell pivots its root (pivot_root(".", ".") fails with EINVAL there).
# So copy the image into a tmpfs and switch_root into it; stage 2 is
# /guest.sh. If this fails, init exits, the kernel panics and (panic=-1,
# -no-reboot) qemu stops: the host sees no "# guest done" and fails.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mkdir -p /newroot
mount -t tmpfs -o mode=0755 newroot /newroot || exit 1
for f in /*; do
	case "$f" in
	/newroot) continue ;;
	esac
	cp -a "$f" /newroot/ || exit 1
done
exec switch_root /newroot /guest.sh
