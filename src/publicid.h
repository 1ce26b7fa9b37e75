/*-------------------------------------------------------------------------
 *
 * publicid.h
 *	  Keys of public ids: their durable file in the data directory.
 *
 * The functions of src/publicid.c need no shared memory and no preload:
 * each backend reads the key file (one open, fstat, read and close) at its
 * first use in a transaction a second or more after its last reading, and
 * at once when a public id names a key it lacks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PUBLICID_H
#define SNOWFLAKE_PUBLICID_H

/* In the data directory, next to the high-water mark */
#define SNOWFLAKE_KEY_FILE		"snowflake.publickeys"

/* AES-256 */
#define SNOWFLAKE_KEY_BYTES		32

#endif							/* SNOWFLAKE_PUBLICID_H */
