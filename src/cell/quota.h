/* Hard size limits for session workspaces: an ext4 image on a loop device
 * mounted on the workspace directory (quota.c). Root only. */
#ifndef HUTCH_CELL_QUOTA_H
#define HUTCH_CELL_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

/* Whether this process can make quota'd workspaces; note says why not. */
bool hutch_quota_available(char *note, size_t note_size);
/* A new sparse image of `bytes` with an ext4 owned by uid:gid at its root,
 * mounted on dir (an existing, empty directory). */
int hutch_quota_create(const char *image, const char *dir, uint64_t bytes, uid_t uid, gid_t gid,
		       struct hutch_err *err);
/* Mount image on dir again (after a reboot); a no-op when it is mounted. */
int hutch_quota_mount(const char *image, const char *dir, struct hutch_err *err);
bool hutch_quota_is_mounted(const char *dir);
/* Lazily unmount dir (the loop device detaches itself). */
void hutch_quota_unmount(const char *dir);

#endif
