/* t_env.c - run settings, watchdog and random numbers of the stress
 * tests; see t_env.h. */
#include "t_env.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "t_arena.h"
#include "tap.h"

static char t_env_bail[80];

static void t_env_watchdog(int sig)
{
	(void)sig;
	(void)!write(STDOUT_FILENO, t_env_bail, strlen(t_env_bail));
	_exit(1);
}

void t_env_start(const char *name, t_env *env)
{
	const char *seed = getenv("EXT3D_SEED"), *lng = getenv("EXT3D_LONG");

	env->scale = lng && strcmp(lng, "0") != 0 ? 10 : 1;
	env->wait_ms = 60000 * (int)env->scale;
	env->watchdog_s = 120 * (unsigned)env->scale;
	env->seed = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (env->seed == 0)
		env->seed = 1;
	snprintf(t_env_bail, sizeof(t_env_bail), "Bail out! %s watchdog: a test hung\n", name);
	signal(SIGALRM, t_env_watchdog);
	t_child_watchdog_s = env->watchdog_s;
	alarm(env->watchdog_s);
	t_diag("seed %llu (EXT3D_SEED=%llu repeats it), scale x%llu", (unsigned long long)env->seed,
	       (unsigned long long)env->seed, (unsigned long long)env->scale);
}

uint64_t t_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}
