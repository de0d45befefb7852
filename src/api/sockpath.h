#ifndef HUTCH_API_SOCKPATH_H
#define HUTCH_API_SOCKPATH_H

#include <stddef.h>

/* The daemon's socket: explicit, else $HUTCH_SOCKET, else
 * $XDG_RUNTIME_DIR/hutch.sock, else /run/hutch/hutch.sock for root and
 * /tmp/hutch-UID/hutch.sock for others. */
void hutch_socket_path(const char *explicit_path, char *out, size_t size);

/* The state directory (sessions, later keys): explicit, else
 * $HUTCH_STATE_DIR, else /var/lib/hutch for root, else
 * $XDG_STATE_HOME/hutch, else $HOME/.local/state/hutch. */
void hutch_state_dir(const char *explicit_dir, char *out, size_t size);

#endif
