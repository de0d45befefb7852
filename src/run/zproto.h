/* Messages between the daemon's pool, the zygote, and a zygote's child (C),
 * over SOCK_SEQPACKET sockets (one message each, fds by SCM_RIGHTS). */
#ifndef HUTCH_RUN_ZPROTO_H
#define HUTCH_RUN_ZPROTO_H

#include <stdint.h>

#include "hutch.h"

/* pool -> zygote: make a child. fds: chan, status write end, then ncg
 * cgroup.procs files to attach it to. */
struct hutch_zmsg_fork {
	char cmd; /* 'F' */
	uint8_t ncg;
	uint8_t pad[6];
	uint64_t disk_bytes;
};

/* zygote -> pool: the child's pid (B, pid 1 of its namespace), or an error */
struct hutch_zmsg_forked {
	char cmd; /* 'P' */
	int32_t pid;
	struct hutch_err err;
};

/* pool -> C: run this. fds: stdin, stdout, stderr, and a memfd holding the
 * ExecRequest JSON. C answers with one byte 'r' when the program starts (or
 * EOF on exec), or a struct hutch_cell_failure. */
struct hutch_zmsg_run {
	char cmd; /* 'R' */
	uint8_t has_cgroup;
	uint8_t pad[6];
	uint64_t default_disk; /* what the child's tmpfs was made with */
};

#define HUTCH_ZMSG_MAX_FDS 12

#endif
