/* hutch-zygote: the warm interpreter of the fast path (see src/cell/zygote.h
 * for the process shape). Only this program links libpython. */
#ifndef HUTCH_ZYGOTE_ZYGOTE_H
#define HUTCH_ZYGOTE_ZYGOTE_H

#include <stddef.h>

int hutch_zygote_python_init(const char *preload, char *msg, size_t msg_size);
void hutch_zygote_python_before_fork(void);
void hutch_zygote_python_after_fork(int in_child);
/* In a fresh child, before it waits: pre-fault what a run will touch. */
void hutch_zygote_python_warm(void);
/* Run the file at path as __main__ with args and a new environment; returns
 * the exit code `python3 path args...` would have. */
int hutch_zygote_python_run(const char *path, char *const *args, char *const *envp);

#endif
