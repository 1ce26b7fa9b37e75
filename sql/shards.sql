-- Logical shards: test/snowflake.conf lists 100-103 and 1000 besides the
-- worker id 7.
SHOW snowflake.shards;

SELECT s AS shard, (SELECT worker_id FROM snowflake_decode(snowflake_nextval(s))) AS decoded
  FROM unnest(ARRAY[7, 100, 101, 102, 103, 1000]) s;

-- distinct across shards, increasing within each
WITH d AS (
  SELECT g, 100 + g % 4 AS shard, snowflake_nextval(100 + g % 4) AS id
    FROM generate_series(1, 40000) g
)
SELECT count(DISTINCT id) AS distinct_ids,
       bool_and(id > prev) AS increasing_per_shard
  FROM (SELECT id, lag(id) OVER (PARTITION BY shard ORDER BY g) AS prev FROM d) s;

-- the worker id's shard is snowflake_nextval()'s own generator
SELECT snowflake_nextval(7) AS a \gset
SELECT snowflake_nextval() AS b \gset
SELECT snowflake_nextval(7) AS c \gset
SELECT :a < :b AND :b < :c AS one_sequence;

-- refused
\set VERBOSITY default
SELECT snowflake_nextval(104);
SELECT snowflake_nextval(-1);
SELECT snowflake_nextval(NULL::integer) IS NULL AS is_null;
