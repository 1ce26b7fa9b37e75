-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION snowflake" to load this file. \quit

-- Generators.  VOLATILE: every call returns a new id.  PARALLEL SAFE: the
-- generator's state is in shared memory, which parallel workers share with
-- their leader, so ids stay unique and increasing whichever process draws
-- them.  They need snowflake in shared_preload_libraries.

CREATE FUNCTION snowflake_nextval()
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval() IS
'next Snowflake id of this server: unique, increasing, time-ordered';

-- Instagram's logical shards: ids for a shard listed in snowflake.shards,
-- increasing per shard.  Markings as for snowflake_nextval(); STRICT: no
-- shard, no id.
CREATE FUNCTION snowflake_nextval(shard integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_shard'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_nextval(integer) IS
'next Snowflake id of a logical shard this server issues ids for';

-- Rows are reserved a millisecond's block at a time, as they are fetched.
CREATE FUNCTION snowflake_nextval_batch(n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'snowflake_nextval_batch'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE
ROWS 1000;

COMMENT ON FUNCTION snowflake_nextval_batch(integer) IS
'n new Snowflake ids, increasing, reserved in blocks';

-- Decoders.  STABLE, not IMMUTABLE: the result depends on "snowflake.layout"
-- and "snowflake.epoch" as well as on the argument, and an IMMUTABLE
-- function could carry one layout's answer into an index or a plan used
-- under another.  They read no
-- shared state, so they work without shared_preload_libraries.

CREATE FUNCTION snowflake_decode(id bigint)
RETURNS TABLE (created_at timestamptz, timestamp_ms bigint,
			   worker_id integer, sequence integer)
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C STABLE STRICT PARALLEL SAFE
ROWS 1;

COMMENT ON FUNCTION snowflake_decode(bigint) IS
'creation time, worker id and sequence of a Snowflake id';

-- With a layout named in the arguments, the result depends on them alone:
-- IMMUTABLE, and "snowflake" means the default epoch, not the setting.
CREATE FUNCTION snowflake_decode(id bigint, layout text)
RETURNS TABLE (created_at timestamptz, timestamp_ms bigint,
			   worker_id integer, sequence integer, node_fields jsonb)
AS 'MODULE_PATHNAME', 'snowflake_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
ROWS 1;

COMMENT ON FUNCTION snowflake_decode(bigint, text) IS
'fields of an id of any layout: a preset name or a specification';

CREATE FUNCTION snowflake_timestamp(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_timestamp'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_timestamp(bigint) IS
'creation time of a Snowflake id';

-- STABLE also lets "id >= snowflake_from_timestamp(now() - ...)" be an
-- index condition.
CREATE FUNCTION snowflake_from_timestamp(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_timestamp'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
'smallest Snowflake id that can be issued in the millisecond of ts';

CREATE FUNCTION snowflake_from_timestamp(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz, text) IS
'smallest id of a layout that can be issued in the tick of ts';

CREATE FUNCTION snowflake_layout_info(
	layout text,
	OUT name text,
	OUT specification text,
	OUT time_bits integer,
	OUT node_bits integer,
	OUT sequence_bits integer,
	OUT tick_ms integer,
	OUT epoch timestamptz,
	OUT lifetime_years float8,
	OUT ends_at timestamptz,
	OUT nodes bigint,
	OUT ids_per_tick bigint,
	OUT ids_per_second bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_layout_info'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_layout_info(text) IS
'widths, tick, epoch, lifetime and capacity of a layout';

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
	OUT mark_waits bigint,
	OUT lease_state text,
	OUT lease_generation bigint,
	OUT lease_valid_until timestamptz,
	OUT lease_horizon timestamptz,
	OUT lease_coordinator text,
	OUT lease_renewed_at timestamptz,
	OUT lease_requests bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'snowflake_stats'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_stats() IS
'state and counters of the server''s Snowflake generator';

CREATE VIEW snowflake_stats AS
	SELECT * FROM snowflake_stats();

-- As pg_stat_statements does: any role may read the counters.  Functions
-- are executable by PUBLIC unless revoked: the generators (a column's
-- DEFAULT runs as whoever inserts), the decoders and snowflake_stats()
-- change nothing another role owns.
GRANT SELECT ON snowflake_stats TO PUBLIC;

-- Every counter of snowflake_stats from zero, stats_since now.  VOLATILE
-- and PARALLEL SAFE, as pg_stat_statements_reset(); superusers and the roles
-- they grant it to only, as the counters are the whole server's.
CREATE FUNCTION snowflake_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'snowflake_stats_reset'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_stats_reset() IS
'reset the counters of snowflake_stats';

REVOKE ALL ON FUNCTION snowflake_stats_reset() FROM PUBLIC;

COMMENT ON VIEW snowflake_stats IS
'state and counters of the server''s Snowflake generator';

-- UUIDv7 (RFC 9562) from one shared generator: strictly increasing across
-- every backend of the server.  VOLATILE and PARALLEL SAFE like
-- snowflake_nextval(), and it too needs shared_preload_libraries.
CREATE FUNCTION snowflake_uuidv7()
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowflake_uuidv7'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_uuidv7() IS
'new UUIDv7, increasing across the whole server';

-- IMMUTABLE: a UUIDv7 carries Unix milliseconds, no setting is involved.
CREATE FUNCTION snowflake_uuidv7_timestamp(id uuid)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'snowflake_uuidv7_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_uuidv7_timestamp(uuid) IS
'creation time of a UUIDv7';

CREATE FUNCTION snowflake_uuidv7_from_timestamp(ts timestamptz)
RETURNS uuid
AS 'MODULE_PATHNAME', 'snowflake_uuidv7_from_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_uuidv7_from_timestamp(timestamptz) IS
'smallest UUIDv7 of the millisecond of ts';
