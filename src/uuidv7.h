/*-------------------------------------------------------------------------
 *
 * uuidv7.h
 *	  UUIDv7 (RFC 9562) from one shared, monotonic generator per server.
 *
 * Locking: the generator's state (the last timestamp and counter) is in
 * shared memory under one LWLock of its own, tranche "snowflake_uuidv7",
 * held only to read the clock and advance it; the random bytes are drawn
 * before it is taken, the UUID formatted after.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_UUIDV7_H
#define SNOWFLAKE_UUIDV7_H

extern void Uuidv7ShmemRequest(void);
extern void Uuidv7ShmemStartup(void);

#endif							/* SNOWFLAKE_UUIDV7_H */
