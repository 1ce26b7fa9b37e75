-- Every bad input and its error.
SET timezone = 'UTC';
\set VERBOSITY default

-- negative ids
SELECT * FROM snowflake_decode(-1);
SELECT snowflake_timestamp(-9223372036854775808);

-- times the layout cannot express
SELECT snowflake_from_timestamp('2024-12-31 23:59:59.999+00');
SELECT snowflake_from_timestamp('2094-09-07 15:47:35.552+00');
SELECT snowflake_from_timestamp('infinity');
SELECT snowflake_from_timestamp('-infinity');

-- batch size
SELECT count(*) FROM snowflake_nextval_batch(-1);

-- the configuration: worker id and epoch need a restart
SET snowflake.worker_id = 5;
SET snowflake.epoch = '2024-01-01';
SET snowflake.rollback_tolerance_ms = 10;
SET snowflake.mark_interval_ms = 100;

-- values checked before they reach postgresql.auto.conf
ALTER SYSTEM SET snowflake.worker_id = 1024;
ALTER SYSTEM SET snowflake.worker_id = -1;
-- PostgreSQL's own range check, whose message prints the bounds with their
-- units in later majors: the SQLSTATE here, the bounds from pg_settings
\set VERBOSITY sqlstate
ALTER SYSTEM SET snowflake.rollback_tolerance_ms = 10001;
ALTER SYSTEM SET snowflake.mark_interval_ms = 9;
ALTER SYSTEM SET snowflake.mark_interval_ms = '2min';
\set VERBOSITY default
SELECT name, unit, min_val, max_val
  FROM pg_settings
 WHERE name IN ('snowflake.rollback_tolerance_ms', 'snowflake.mark_interval_ms')
 ORDER BY name;
ALTER SYSTEM SET snowflake.epoch = '12345678901234567';
ALTER SYSTEM SET snowflake.epoch = '-999999999999999';
ALTER SYSTEM SET snowflake.epoch = 'yesterday';
ALTER SYSTEM SET snowflake.epoch = '2025-02-29';
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 24:00:00';
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00.0001+00';
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00+16';
ALTER SYSTEM SET snowflake.epoch = '2025-01-01 00:00:00 PST';
ALTER SYSTEM SET snowflake.epoch = '';
-- accepted spellings (then taken back); whether the clock lies in the
-- layout's lifetime is for the calls that issue ids to say, not the setting
ALTER SYSTEM SET snowflake.epoch = '2999-01-01';
ALTER SYSTEM SET snowflake.epoch = '1950-01-01';
ALTER SYSTEM SET snowflake.epoch = '2025-01-01T00:00:00Z';
ALTER SYSTEM SET snowflake.epoch = '2024-06-01 12:30:00.250-05:30';
ALTER SYSTEM SET snowflake.epoch = '1288834974657';
ALTER SYSTEM SET snowflake.epoch = '2020-02-29';
ALTER SYSTEM SET snowflake.epoch = '0';
ALTER SYSTEM SET snowflake.epoch = '-1';
ALTER SYSTEM RESET snowflake.epoch;

-- a long specification with non-ASCII characters, through a LATIN1 client:
-- the detail is built whole, never cut inside a character (the conversion
-- to LATIN1 fails on a cut one); shown by its length, to keep this file ASCII
SET client_encoding = 'LATIN1';
DO $$
DECLARE
	detail text;
BEGIN
	PERFORM snowflake_layout_info('time:41 x' || repeat(U&'\00E9', 150) || ':10 sequence:12');
EXCEPTION WHEN invalid_parameter_value THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RAISE NOTICE 'detail of % characters, % bytes in LATIN1, ending "%"',
		length(detail), octet_length(convert_to(detail, 'LATIN1')), right(detail, 20);
END
$$;
RESET client_encoding;
