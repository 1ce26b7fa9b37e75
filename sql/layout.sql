-- Decoding: ids composed by hand with known fields, and the edges of the
-- default layout (41 bits of ms since 2025-01-01 UTC, 10 of worker, 12 of
-- sequence).
-- (PostgreSQL 13 and 14 let PUBLIC create in public, which CREATE
-- EXTENSION warns of: revoked, as 15 does, so that every major prints the
-- same; test planted checks the warning)
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION snowflake;
SET timezone = 'UTC';

SHOW snowflake.epoch;

-- 1000 ms after the epoch, worker 5, sequence 9
SELECT * FROM snowflake_decode((1000::bigint << 22) | (5 << 12) | 9);

-- the very first id: the epoch itself
SELECT * FROM snowflake_decode(0);

-- largest worker and sequence; the fields do not bleed into each other
SELECT * FROM snowflake_decode((1::bigint << 22) | (1023 << 12) | 4095);
SELECT worker_id, sequence FROM snowflake_decode(4095);
SELECT worker_id, sequence FROM snowflake_decode(4096);
SELECT timestamp_ms - 1735689600000 AS ms, worker_id, sequence
  FROM snowflake_decode((1::bigint << 22) - 1);

-- the largest bigint: the last millisecond of the layout, about 69.7 years
SELECT * FROM snowflake_decode(9223372036854775807);
SELECT round((extract(epoch FROM snowflake_timestamp(9223372036854775807)
                  - '2025-01-01 00:00:00+00'::timestamptz) / (365.25 * 86400))::numeric, 1)
       AS lifetime_years;

SELECT snowflake_timestamp((1000::bigint << 22) | (5 << 12) | 9);

-- from_timestamp: the smallest id of the millisecond, sub-ms rounded down
SELECT snowflake_from_timestamp('2025-01-01 00:00:00+00');
SELECT snowflake_from_timestamp('2025-01-01 00:00:01+00') = 1000::bigint << 22 AS one_second;
SELECT snowflake_from_timestamp('2025-01-01 00:00:00.0019+00') = 1::bigint << 22 AS rounds_down;
SELECT snowflake_from_timestamp('2025-01-01 09:00:00+09') AS with_offset;
SELECT snowflake_from_timestamp(snowflake_timestamp(9223372036854775807))
       = 9223372036854775807 - 4194303 AS last_ms;

-- round trip through both functions
SELECT bool_and(snowflake_timestamp(snowflake_from_timestamp(t)) = date_trunc('milliseconds', t))
       AS round_trip
  FROM (VALUES ('2025-01-01 00:00:00.001+00'::timestamptz),
               ('2026-06-15 12:34:56.789+00'), ('2060-02-29 23:59:59.999+00'),
               ('2094-09-07 15:47:35.551+00')) v(t);

-- in a query over many ids
SELECT v.id, d.*
  FROM (VALUES (0::bigint), (4194304 + 4097), (253868853291921408)) v(id)
  CROSS JOIN LATERAL snowflake_decode(v.id) d
 ORDER BY v.id;

-- STRICT: NULL in, nothing out
SELECT count(*) FROM snowflake_decode(NULL);
SELECT snowflake_timestamp(NULL) IS NULL AS is_null,
       snowflake_from_timestamp(NULL) IS NULL AS is_null;

-- created_at follows the session's time zone, timestamp_ms does not
SET timezone = 'Asia/Tokyo';
SELECT * FROM snowflake_decode(0);
RESET timezone;
SET timezone = 'UTC';

-- the markings the install script promises
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel,
       proretset, prorows
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
 ORDER BY p.oid::regprocedure::text;
