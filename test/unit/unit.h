/*-------------------------------------------------------------------------
 *
 * unit.h
 *	  What the unit tests share: CHECK, which counts failures and prints
 *	  the first twenty, and a reproducible random generator.
 *
 * Each test defines failures and rng_state by including this header once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_UNIT_H
#define SNOWFLAKE_UNIT_H

static int	failures = 0;
static uint64 rng_state;

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			if (failures++ < 20) \
			{ \
				fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
				fprintf(stderr, __VA_ARGS__); \
				fprintf(stderr, "\n"); \
			} \
		} \
	} while (0)

/* splitmix64: reproducible from the seed printed at the start */
static inline uint64
rng(void)
{
	uint64		z = (rng_state += UINT64CONST(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

#endif							/* SNOWFLAKE_UNIT_H */
