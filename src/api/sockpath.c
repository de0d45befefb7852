#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/sockpath.h"

void hutch_socket_path(const char *explicit_path, char *out, size_t size)
{
	const char *env = getenv("HUTCH_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (explicit_path && *explicit_path)
		snprintf(out, size, "%s", explicit_path);
	else if (env && *env)
		snprintf(out, size, "%s", env);
	else if (xdg && *xdg)
		snprintf(out, size, "%s/hutch.sock", xdg);
	else if (geteuid() == 0)
		snprintf(out, size, "/run/hutch/hutch.sock");
	else
		snprintf(out, size, "/tmp/hutch-%u/hutch.sock", (unsigned)getuid());
}

void hutch_state_dir(const char *explicit_dir, char *out, size_t size)
{
	const char *env = getenv("HUTCH_STATE_DIR");
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");

	if (explicit_dir && *explicit_dir)
		snprintf(out, size, "%s", explicit_dir);
	else if (env && *env)
		snprintf(out, size, "%s", env);
	else if (getuid() == 0)
		snprintf(out, size, "/var/lib/hutch");
	else if (xdg && *xdg == '/')
		snprintf(out, size, "%s/hutch", xdg);
	else
		snprintf(out, size, "%s/.local/state/hutch", home && *home == '/' ? home : "/tmp");
}
