/* main.c - alloc-svc. Until its filesystem work lands (its own issue), it
 * attaches to the arena, confines itself, reports ready and waits for
 * SIGTERM, so the group starts, is supervised and is sandboxed as designed. */
#include "service.h"

int main(int argc, char **argv)
{
	return cm_service_main_idle(argc, argv, "alloc-svc", NULL);
}
