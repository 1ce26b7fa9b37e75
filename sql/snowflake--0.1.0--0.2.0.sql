-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '0.2.0'" to load this file. \quit

-- snowflake_stats() gains backend_mark_writes and mark_waits: the view goes
-- with the function and comes back with the new columns.
DROP VIEW snowflake_stats;
DROP FUNCTION snowflake_stats();

-- Statistics: VOLATILE, they change under every other session's calls.

CREATE FUNCTION snowflake_stats(
	OUT worker_id integer,
	OUT layout text,
	OUT epoch timestamptz,
	OUT last_timestamp_ms bigint,
	OUT ids_issued bigint,
	OUT sequence_waits bigint,
	OUT borrowed_ticks bigint,
	OUT rollbacks_waited bigint,
	OUT rollbacks_refused bigint,
	OUT high_water_mark timestamptz,
	OUT mark_writes bigint,
	OUT startup_wait_ms bigint,
	OUT stats_since timestamptz,
	OUT backend_mark_writes bigint,
	OUT mark_waits bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_stats() IS
'state and counters of the server''s Snowflake generator';

CREATE VIEW snowflake_stats AS
	SELECT * FROM snowflake_stats();

COMMENT ON VIEW snowflake_stats IS
'state and counters of the server''s Snowflake generator';
