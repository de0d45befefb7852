/* Directory transfers for `hutch session upload|download` (hutch-full only:
 * libarchive; see cli.h for why hutch itself goes without). */
#include "cli/cli.h"
#include "session/files.h"
#include "session/session.h"

void hutch_cli_tar_ensure(void)
{
	/* this is hutch-full: the tar functions are here */
}

int hutch_cli_tar_pack(int root, struct hutch_buf *out, struct hutch_err *err)
{
	return hutch_session_tar_out(root, ".", out, err);
}

int hutch_cli_tar_unpack(int root, int fd, struct hutch_err *err)
{
	/* names checked and created in-root by files.c (never libarchive's
	 * disk writer); 4 GiB at most */
	return hutch_files_tar_in(root, ".", fd, NULL, 1ull << 32, err);
}
