/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every difference between the PostgreSQL major versions the extension
 *	  builds against (13 to 19), in one place.
 *
 * Other files use the names defined here and never test PG_VERSION_NUM
 * themselves.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_COMPAT_H
#define SNOWFLAKE_COMPAT_H

/* 18 records the name and version of a module in its magic block */
#if PG_VERSION_NUM >= 180000
#define SNOWFLAKE_MODULE_MAGIC \
	PG_MODULE_MAGIC_EXT(.name = "snowflake", .version = SNOWFLAKE_VERSION)
#else
#define SNOWFLAKE_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* fmgr.h declares _PG_init from 16 on */
#if PG_VERSION_NUM < 160000
extern void _PG_init(void);
#endif

/*
 * 18 replaced the attribute by a specifier placed before the declaration;
 * 19 makes it C23's [[noreturn]] where the compiler speaks C23 (GCC 15's
 * default), which must come first, before "extern" too.
 */
#ifdef pg_noreturn
#define SNOWFLAKE_NORETURN_BEFORE pg_noreturn
#define SNOWFLAKE_NORETURN_AFTER
#else
#define SNOWFLAKE_NORETURN_BEFORE
#define SNOWFLAKE_NORETURN_AFTER pg_attribute_noreturn()
#endif

/*
 * A check hook's extra is freed by the GUC machinery: with free() before
 * 16, with guc_free() (a pfree in the GUC memory context) from 16 on, so it
 * must come from the matching allocator.  NULL when out of memory.
 */
#if PG_VERSION_NUM >= 160000
#define SnowflakeGucMalloc(size) guc_malloc(LOG, (size))
#else
#define SnowflakeGucMalloc(size) malloc(size)
#endif

/* strtoi64 appeared in 14; long is 64 bits wide on every LP64 platform */
#if PG_VERSION_NUM < 140000
#define strtoi64(str, endptr, base) ((int64) strtoll((str), (endptr), (base)))
#endif

/*
 * From 15 on, shared memory is requested in shmem_request_hook; before, in
 * _PG_init itself.
 */
#if PG_VERSION_NUM >= 150000
#define SNOWFLAKE_SHMEM_REQUEST_HOOK 1
#endif

/*
 * 15 reserves a prefix, dropping unknown settings under it; 13 and 14 only
 * warn about them.
 */
#if PG_VERSION_NUM >= 150000
#define SnowflakeReserveGucPrefix(prefix) MarkGUCPrefixReserved(prefix)
#else
#define SnowflakeReserveGucPrefix(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* Wait events moved out of pgstat.h in 14 */
#if PG_VERSION_NUM >= 140000
#define SNOWFLAKE_WAIT_EVENT_HEADER "utils/wait_event.h"
#else
#define SNOWFLAKE_WAIT_EVENT_HEADER "pgstat.h"
#endif

/* GetLatestXTime() moved to a header of its own in 15 */
#if PG_VERSION_NUM >= 150000
#define SNOWFLAKE_XLOG_RECOVERY_HEADER "access/xlogrecovery.h"
#else
#define SNOWFLAKE_XLOG_RECOVERY_HEADER "access/xlog.h"
#endif

/*
 * 17 lets an extension name its wait events in pg_stat_activity; before,
 * they all show as "Extension".
 */
#if PG_VERSION_NUM >= 170000
#define SnowflakeWaitEvent(name) WaitEventExtensionNew(name)
#else
#define SnowflakeWaitEvent(name) PG_WAIT_EXTENSION
#endif

#endif							/* SNOWFLAKE_COMPAT_H */
