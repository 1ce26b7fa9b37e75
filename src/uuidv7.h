/*-------------------------------------------------------------------------
 *
 * uuidv7.h
 *	  UUIDv7 (RFC 9562) from one shared, monotonic generator per server.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_UUIDV7_H
#define SNOWFLAKE_UUIDV7_H

extern void Uuidv7ShmemRequest(void);
extern void Uuidv7ShmemStartup(void);

#endif							/* SNOWFLAKE_UUIDV7_H */
