-- The generator through its SQL API, on a server with the library
-- preloaded and snowflake.worker_id = 7 (test/snowflake.conf).
SET timezone = 'UTC';

SELECT worker_id FROM snowflake_decode(snowflake_nextval());

-- the timestamp is the clock's
SELECT abs(extract(epoch FROM snowflake_timestamp(snowflake_nextval()) - clock_timestamp())) < 5
       AS near_now;

-- many ids in one statement: more than 4096 a millisecond can give
WITH ids AS (
  SELECT row_number() OVER () AS n, id
    FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) s
)
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       bool_and(id > prev) AS increasing,
       bool_and(id > 0) AS positive
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s;

-- as a column default
CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
INSERT INTO items (n) SELECT g FROM generate_series(1, 20000) g;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM items;
SELECT bool_and(id > prev) AS in_insert_order
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM items) s;
SELECT count(DISTINCT d.worker_id) AS workers, min(d.worker_id) AS worker
  FROM items CROSS JOIN LATERAL snowflake_decode(items.id) d;

-- a time range on the primary key is an index range
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM items WHERE id >= snowflake_from_timestamp(now() - interval '1 day');
RESET enable_seqscan;
SELECT count(*) FROM items WHERE id >= snowflake_from_timestamp(now() - interval '1 day');
SELECT count(*) FROM items WHERE id >= snowflake_from_timestamp(clock_timestamp() + interval '1 day');

-- batches: increasing, and ordered against single calls around them
SELECT snowflake_nextval() AS before_batch \gset
CREATE TABLE batch AS
  SELECT row_number() OVER () AS n, id
    FROM (SELECT snowflake_nextval_batch(100000) AS id) s;
SELECT snowflake_nextval() AS after_batch \gset
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       min(id) > :before_batch AS after_previous,
       max(id) < :after_batch AS before_next
  FROM batch;
SELECT bool_and(id > prev) AS increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM batch) s;
-- no millisecond holds more than the sequence allows
SELECT max(c) <= 4096 AS within_sequence
  FROM (SELECT d.timestamp_ms, count(*) AS c
          FROM batch CROSS JOIN LATERAL snowflake_decode(batch.id) d
         GROUP BY 1) s;

SELECT count(*) FROM snowflake_nextval_batch(0);
SELECT count(*) FROM snowflake_nextval_batch(NULL);
SELECT count(*) FROM (SELECT snowflake_nextval_batch(2000000000) LIMIT 5) s;

-- ids drawn by parallel workers come from the same generator
CREATE TABLE big AS SELECT g FROM generate_series(1, 200000) g;
ANALYZE big;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- (the workers compute the ids: the call sits below the Gather; the ids
-- are counted afterwards, so that the plan shown is the one that drew them,
-- the same on every major)
EXPLAIN (COSTS OFF, VERBOSE)
CREATE TABLE drawn_parallel AS SELECT snowflake_nextval() AS id FROM big;
CREATE TABLE drawn_parallel AS SELECT snowflake_nextval() AS id FROM big;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids FROM drawn_parallel;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- statistics
SELECT ids_issued AS issued_before FROM snowflake_stats \gset
SELECT count(snowflake_nextval()) FROM generate_series(1, 10);
SELECT ids_issued - :issued_before AS issued,
       worker_id,
       epoch,
       last_timestamp_ms > extract(epoch FROM now() - interval '1 minute') * 1000 AS recent,
       rollbacks_waited,
       rollbacks_refused,
       extract(epoch FROM high_water_mark) * 1000 > last_timestamp_ms AS mark_above_last,
       mark_writes > 0 AS mark_written,
       stats_since <= now() AS since_start
  FROM snowflake_stats;

-- (whether a call waited for the next ms depends on the machine's speed:
-- test/t/150_layout_counts.pl counts the waits with a layout that makes
-- them certain)

-- an ordinary role reads the statistics, as pg_stat_statements allows, and
-- draws ids; it may not reset them
CREATE ROLE snowflake_reader;
SET ROLE snowflake_reader;
SELECT ids_issued > 0 AS readable FROM snowflake_stats;
SELECT snowflake_nextval() > 0 AS draws, snowflake_timestamp(snowflake_nextval()) > '2025-01-01' AS decodes;
SELECT snowflake_stats_reset();
RESET ROLE;
DROP ROLE snowflake_reader;

-- a reset: every counter from zero, stats_since moves; ids go on above
SELECT stats_since AS since_before, snowflake_nextval() AS id_before FROM snowflake_stats \gset
SELECT snowflake_stats_reset();
SELECT ids_issued, mark_waits, sequence_waits, stats_since > :'since_before' AS since_moved
  FROM snowflake_stats;
SELECT count(snowflake_nextval()) FROM generate_series(1, 7);
SELECT ids_issued, snowflake_nextval() > :id_before AS above FROM snowflake_stats;

DROP TABLE items, batch, big, drawn_parallel;
