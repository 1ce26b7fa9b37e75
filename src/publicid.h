/*-------------------------------------------------------------------------
 *
 * publicid.h
 *	  Public ids and their keys, for SQL: the functions of src/publicid.c.
 *
 * They need no shared memory; the keys need the root key, which needs the
 * library preloaded (src/rootkey.h).  Each backend keeps the keys it read
 * from the key table (or from 0.3.0's file, until its keys are moved) and
 * reads the table again after a change of its rows commits.
 *
 * Locking: no shared memory, so no LWLock.  A transaction that uses a key
 * holds AccessShareLock on the key table to its end; creators take
 * ShareRowExclusiveLock (one at a time, readers go on); a drop takes
 * AccessExclusiveLock, so no transaction that used the dropped key is
 * still running when it commits, and none starts using keys before it
 * commits.  With 0.3.0's objects, the file's writers serialise on a
 * cluster-wide advisory lock.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PUBLICID_H
#define SNOWFLAKE_PUBLICID_H

#endif							/* SNOWFLAKE_PUBLICID_H */
