/* t_env.h - a stress test's run settings from the environment, and its
 * random numbers: EXT3D_LONG=1 scales the work (and the time limits) by
 * ten, EXT3D_SEED=N repeats a run, a watchdog bails out of a hung one. */
#ifndef T_ENV_H
#define T_ENV_H

#include <stdint.h>

typedef struct t_env {
	uint64_t seed;
	uint64_t scale;       /* 1, or 10 with EXT3D_LONG */
	int wait_ms;          /* how long to wait for a child or a reply */
	unsigned watchdog_s;  /* the whole test, and each child */
} t_env;

/* Fills env, arms the watchdog (name goes in its bail-out line) for this
 * process and for children forked by t_fork(), prints the seed. */
void t_env_start(const char *name, t_env *env);
/* xorshift*: never returns 0 for a non-zero state. */
uint64_t t_rand(uint64_t *s);

#endif
