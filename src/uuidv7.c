/*-------------------------------------------------------------------------
 *
 * uuidv7.c
 *	  UUIDv7 (RFC 9562): its generator in shared memory, and the
 *	  SQL-callable functions that make and read it.
 *
 * Layout, most significant first: 48 bits of Unix milliseconds, version
 * 0111, 12 bits of rand_a, variant 10, 62 bits of rand_b.  The first 26 bits
 * after the timestamp (rand_a and the top 14 bits of rand_b) are a
 * dedicated counter (RFC 9562, section 6.2, method 1): seeded at random
 * each millisecond with its top bit clear, so at least 2^25 increments are
 * left before it overflows, and on overflow the timestamp moves one
 * millisecond ahead.  The last 48 bits are random for every UUID.
 *
 * The (millisecond, counter) pair is shared by all backends of the server
 * under its own LWLock, so UUIDs are strictly increasing server-wide; a
 * clock that goes back only holds the timestamp where it was.  Random bytes
 * come from pg_strong_random() through a per-backend buffer, so most calls
 * make no system call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "clock.h"
#include "common.h"
#include "layout.h"
#include "uuidv7.h"

#define UUIDV7_COUNTER_BITS		26
#define UUIDV7_COUNTER_MAX		((UINT64CONST(1) << UUIDV7_COUNTER_BITS) - 1)
#define UUIDV7_MAX_MS			((INT64CONST(1) << 48) - 1)

typedef struct Uuidv7State
{
	LWLock	   *lock;
	int64		last_ms;		/* timestamp of the last UUID */
	uint64		counter;		/* its counter */
} Uuidv7State;

static Uuidv7State *uuidv7 = NULL;

/* Per-backend buffer of strong random bytes */
#define UUIDV7_RANDOM_BUFFER	4096
static uint8 uuid_random[UUIDV7_RANDOM_BUFFER];
static int	uuid_random_used = UUIDV7_RANDOM_BUFFER;

PG_FUNCTION_INFO_V1(snowflake_uuidv7);
PG_FUNCTION_INFO_V1(snowflake_uuidv7_timestamp);
PG_FUNCTION_INFO_V1(snowflake_uuidv7_from_timestamp);

void
Uuidv7ShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(Uuidv7State)));
	RequestNamedLWLockTranche("snowflake_uuidv7", 1);
}

void
Uuidv7ShmemStartup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	uuidv7 = ShmemInitStruct("snowflake uuidv7", sizeof(Uuidv7State), &found);
	if (!found)
	{
		memset(uuidv7, 0, sizeof(Uuidv7State));
		uuidv7->lock = &(GetNamedLWLockTranche("snowflake_uuidv7"))->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

static uint64
uuid_random_uint64(void)
{
	uint64		value;

	if (uuid_random_used > UUIDV7_RANDOM_BUFFER - (int) sizeof(uint64))
	{
		if (!pg_strong_random(uuid_random, UUIDV7_RANDOM_BUFFER))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not generate random values")));
		uuid_random_used = 0;
	}
	memcpy(&value, uuid_random + uuid_random_used, sizeof(uint64));
	uuid_random_used += sizeof(uint64);
	return value;
}

/* Write the big-endian bytes of a UUIDv7 made of its three parts. */
static void
uuid_compose(pg_uuid_t *uuid, int64 unix_ms, uint64 counter, uint64 random48)
{
	uint64		high;			/* timestamp, version, rand_a */
	uint64		low;			/* variant, rand_b */

	high = ((uint64) unix_ms << 16) | (UINT64CONST(0x7) << 12) |
		(counter >> (UUIDV7_COUNTER_BITS - 12));
	low = (UINT64CONST(0x2) << 62) |
		((counter & ((UINT64CONST(1) << (UUIDV7_COUNTER_BITS - 12)) - 1)) << 48) |
		(random48 & ((UINT64CONST(1) << 48) - 1));
	for (int i = 0; i < 8; i++)
	{
		uuid->data[i] = (uint8) (high >> (56 - 8 * i));
		uuid->data[8 + i] = (uint8) (low >> (56 - 8 * i));
	}
}

Datum
snowflake_uuidv7(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *uuid = palloc(sizeof(pg_uuid_t));
	uint64		random48 = uuid_random_uint64();
	uint64		seed = uuid_random_uint64() & (UUIDV7_COUNTER_MAX >> 1);
	int64		now;
	int64		unix_ms;
	uint64		counter;

	if (unlikely(uuidv7 == NULL))
		SnowflakeReportNotPreloaded();

	LWLockAcquire(uuidv7->lock, LW_EXCLUSIVE);
	now = ClockNowMs();
	if (now > uuidv7->last_ms)
	{
		uuidv7->last_ms = now;
		uuidv7->counter = seed;
	}
	else if (uuidv7->counter < UUIDV7_COUNTER_MAX)
		uuidv7->counter++;
	else
	{
		/* counter exhausted: borrow the next millisecond */
		uuidv7->last_ms++;
		uuidv7->counter = seed;
	}
	unix_ms = uuidv7->last_ms;
	counter = uuidv7->counter;
	LWLockRelease(uuidv7->lock);

	if (unlikely(unix_ms < 0 || unix_ms > UUIDV7_MAX_MS))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("current time is outside the range of UUIDv7")));

	uuid_compose(uuid, unix_ms, counter, random48);
	PG_RETURN_UUID_P(uuid);
}

Datum
snowflake_uuidv7_timestamp(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *uuid = PG_GETARG_UUID_P(0);
	int64		unix_ms = 0;

	if ((uuid->data[6] >> 4) != 7 || (uuid->data[8] >> 6) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("uuid is not a version 7 UUID"),
				 errdetail("Its version field is %d and its variant bits are %d%d.",
						   uuid->data[6] >> 4, (uuid->data[8] >> 7) & 1,
						   (uuid->data[8] >> 6) & 1)));

	for (int i = 0; i < 6; i++)
		unix_ms = (unix_ms << 8) | uuid->data[i];
	PG_RETURN_TIMESTAMPTZ(SnowflakeMsToTimestamptz(unix_ms));
}

/* The smallest UUIDv7 of the millisecond containing ts. */
Datum
snowflake_uuidv7_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	pg_uuid_t  *uuid = palloc(sizeof(pg_uuid_t));
	int64		unix_ms;

	unix_ms = TIMESTAMP_NOT_FINITE(ts) ? -1 : SnowflakeTimestamptzToMs(ts);
	if (unix_ms < 0 || unix_ms > UUIDV7_MAX_MS)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for UUIDv7"),
				 errdetail("UUIDv7 covers %s to %s.",
						   SnowflakeFormatMs(0), SnowflakeFormatMs(UUIDV7_MAX_MS))));

	uuid_compose(uuid, unix_ms, 0, 0);
	PG_RETURN_UUID_P(uuid);
}
