#include <pthread.h>
#include <stdbool.h>

#include "session/session.h"
#include "util/err.h"

/*
 * The spawner: one thread that lives as long as the process and creates
 * every session process (cells and entered commands). Their parent-death
 * signal is tied to the thread that cloned them, so they must not be
 * cloned by a connection's thread, which ends when the client hangs up.
 * Calls are synchronous: the caller waits for fn to return.
 */

struct job {
	void (*fn)(void *);
	void *arg;
	bool done;
	struct job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
static struct job *queue;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *spawner_main(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!queue)
			pthread_cond_wait(&wake, &lock);
		struct job *j = queue;
		queue = j->next;
		pthread_mutex_unlock(&lock);
		j->fn(j->arg);
		pthread_mutex_lock(&lock);
		j->done = true;
		pthread_cond_broadcast(&finished);
	}
	return NULL;
}

static void start_spawner(void)
{
	pthread_t t;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, spawner_main, NULL) != 0)
		HUTCH_BUG("cannot start the session spawner thread");
	pthread_attr_destroy(&attr);
}

void hutch_session_on_spawner(void (*fn)(void *), void *arg)
{
	struct job j = {fn, arg, false, NULL};
	struct job **tail;

	pthread_once(&once, start_spawner);
	pthread_mutex_lock(&lock);
	for (tail = &queue; *tail; tail = &(*tail)->next)
		;
	*tail = &j;
	pthread_cond_signal(&wake);
	while (!j.done)
		pthread_cond_wait(&finished, &lock);
	pthread_mutex_unlock(&lock);
}
