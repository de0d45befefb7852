/* Scope-bound cleanup, after systemd/bubblewrap/crun. Every helper accepts
 * NULL or -1 and preserves errno. Declare and initialise together. */
#ifndef HUTCH_UTIL_CLEANUP_H
#define HUTCH_UTIL_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

static inline void hutch_freep(void *p)
{
	int saved = errno;
	free(*(void **)p);
	errno = saved;
}

static inline void hutch_closep(const int *fd)
{
	int saved = errno;
	if (*fd >= 0)
		close(*fd); /* never retried: on Linux the fd is gone even on EINTR */
	errno = saved;
}

static inline void hutch_fclosep(FILE **f)
{
	int saved = errno;
	if (*f)
		fclose(*f);
	errno = saved;
}

static inline void hutch_closedirp(DIR **d)
{
	int saved = errno;
	if (*d)
		closedir(*d);
	errno = saved;
}

#define _cleanup_free_	   _cleanup_(hutch_freep)
#define _cleanup_close_	   _cleanup_(hutch_closep)
#define _cleanup_fclose_   _cleanup_(hutch_fclosep)
#define _cleanup_closedir_ _cleanup_(hutch_closedirp)

static inline void *hutch_steal_ptr_impl(void **pp)
{
	void *p = *pp;
	*pp = NULL;
	return p;
}
#define hutch_steal_ptr(pp) hutch_steal_ptr_impl((void **)(pp))

static inline int hutch_take_fd(int *fd)
{
	int ret = *fd;
	*fd = -1;
	return ret;
}

#define HUTCH_RETRY(expr)                                                                          \
	({                                                                                         \
		long _r;                                                                           \
		do                                                                                 \
			_r = (long)(expr);                                                         \
		while (_r == -1 && errno == EINTR);                                                \
		_r;                                                                                \
	})

#endif
