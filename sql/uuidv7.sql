-- UUIDv7: the bits RFC 9562 fixes, order, and the two readers.
SET timezone = 'UTC';

-- version 7, variant 10 (the 17th hex digit is 8, 9, a or b)
SELECT bool_and(substr(u::text, 15, 1) = '7') AS version_7,
       bool_and(substr(u::text, 20, 1) IN ('8', '9', 'a', 'b')) AS variant_10,
       count(DISTINCT u) AS distinct_uuids
  FROM (SELECT snowflake_uuidv7() AS u FROM generate_series(1, 10000)) s;

-- strictly increasing within a statement, as uuid's own comparison sees it
WITH u AS (
  SELECT row_number() OVER () AS n, u
    FROM (SELECT snowflake_uuidv7() AS u FROM generate_series(1, 100000)) s
)
SELECT count(*) AS uuids, bool_and(u > prev) AS increasing
  FROM (SELECT u, lag(u) OVER (ORDER BY n) AS prev FROM u) s;

-- the timestamp is the clock's
SELECT abs(extract(epoch FROM snowflake_uuidv7_timestamp(snowflake_uuidv7()) - clock_timestamp())) < 5
       AS near_now;

-- the smallest UUIDv7 of a millisecond, and back
SELECT snowflake_uuidv7_from_timestamp('1970-01-01 00:00:00+00');
SELECT snowflake_uuidv7_from_timestamp('2025-01-01 00:00:00.0019+00');
SELECT snowflake_uuidv7_timestamp('01941f29-7c01-7000-8000-000000000000');
SELECT snowflake_uuidv7_timestamp(snowflake_uuidv7_from_timestamp(t)) = date_trunc('milliseconds', t)
       AS round_trip
  FROM (VALUES ('2026-06-15 12:34:56.789+00'::timestamptz)) v(t);
SELECT snowflake_uuidv7_from_timestamp(clock_timestamp() - interval '1 second') < snowflake_uuidv7()
       AS below_new_ones,
       snowflake_uuidv7_from_timestamp(clock_timestamp() + interval '1 second') > snowflake_uuidv7()
       AS above_new_ones;
-- the last millisecond 48 bits hold
SELECT snowflake_uuidv7_from_timestamp('10889-08-02 05:31:50.655+00');

-- an RFC 9562 example UUIDv7 (appendix A.6): 2022-02-22 14:22:22 UTC-5
SELECT snowflake_uuidv7_timestamp('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');

-- refusals
SELECT snowflake_uuidv7_timestamp('f81d4fae-7dec-11d0-a765-00a0c91e6bf6');
SELECT snowflake_uuidv7_timestamp('017f22e2-79b0-7cc3-18c4-dc0c0c07398f');
SELECT snowflake_uuidv7_timestamp(gen_random_uuid()) IS NOT NULL;
SELECT snowflake_uuidv7_from_timestamp('1969-12-31 23:59:59.999+00');
SELECT snowflake_uuidv7_from_timestamp('10889-08-02 05:31:50.656+00');
SELECT snowflake_uuidv7_from_timestamp('infinity');
SELECT snowflake_uuidv7_timestamp(NULL) IS NULL AS is_null,
       snowflake_uuidv7_from_timestamp(NULL) IS NULL AS is_null;
