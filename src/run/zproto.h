/* Messages between the daemon's pool, the zygote, and a zygote's child (C),
 * over SOCK_SEQPACKET sockets (one message each, fds by SCM_RIGHTS). */
#ifndef HUTCH_RUN_ZPROTO_H
#define HUTCH_RUN_ZPROTO_H

#include <stdint.h>

#include "hutch.h"

/* What a cell is made for: any program (Python in the warm interpreter,
 * the rest by execve), or node, with a node started ahead in it. */
#define HUTCH_CELL_ANY	'c'
#define HUTCH_CELL_NODE 'n'

/* pool -> zygote: make a child. fds: chan, status write end, then ncg
 * cgroup.procs files to attach it to. C says it is ready with one byte,
 * its kind: 'c', or 'n' with its node's stdout and stderr read ends. */
struct hutch_zmsg_fork {
	char cmd; /* 'F' */
	uint8_t ncg;
	char kind; /* HUTCH_CELL_ANY or HUTCH_CELL_NODE */
	uint8_t pad[5];
	uint64_t disk_bytes;
};

/* zygote -> pool: the child's pid (B, pid 1 of its namespace), or an error */
struct hutch_zmsg_forked {
	char cmd; /* 'P' */
	int32_t pid;
	struct hutch_err err;
};

/* pool -> C: run this. fds: stdin, stdout, stderr, and a memfd holding the
 * ExecRequest JSON (a node cell: stdin and the memfd only). C answers with one byte 'r' when the
 * program starts (or EOF on exec), or a struct hutch_cell_failure. */
struct hutch_zmsg_run {
	char cmd; /* 'R' */
	uint8_t has_cgroup;
	uint8_t pad[6];
	uint64_t default_disk; /* what the child's tmpfs was made with */
};

#define HUTCH_ZMSG_MAX_FDS 12

#endif
