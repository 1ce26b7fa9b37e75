-- Instagram's id function (2011), the baseline the benchmarks compare
-- against: a sequence modulo 1024 for the low bits, the shard id above it,
-- milliseconds since their epoch above that.  Written from the description
-- in their post; past 1024 ids in a millisecond it repeats ids.
CREATE SEQUENCE bench_instagram_seq;
CREATE FUNCTION bench_instagram_next_id(OUT result bigint)
LANGUAGE plpgsql AS $$
DECLARE
	instagram_epoch bigint := 1314220021721;
	shard_id int := 5;
	seq_id bigint;
	now_ms bigint;
BEGIN
	SELECT nextval('bench_instagram_seq') % 1024 INTO seq_id;
	SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) INTO now_ms;
	result := (now_ms - instagram_epoch) << 23;
	result := result | (shard_id << 10);
	result := result | seq_id;
END;
$$;
