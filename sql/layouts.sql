-- Layouts: the presets, custom specifications, and reading other systems'
-- ids.  The configured layout stays the default one here.
SET timezone = 'UTC';
SET extra_float_digits = 0;

-- every preset: widths, tick, epoch, lifetime, capacity
SELECT name, time_bits, node_bits, sequence_bits, tick_ms, epoch,
       round(lifetime_years::numeric, 1) AS years, ends_at, nodes, ids_per_tick, ids_per_second
  FROM unnest(ARRAY['snowflake', 'twitter', 'discord', 'instagram', 'sonyflake']) p,
       snowflake_layout_info(p);
SELECT specification FROM snowflake_layout_info('sonyflake');

-- the configured layout
SHOW snowflake.layout;
SELECT layout FROM snowflake_stats;

-- ids of other systems
-- Discord's documentation: 175928847299117063 is 2016-04-30 11:18:25.796,
-- worker 1, process 0, increment 7
SELECT * FROM snowflake_decode(175928847299117063, 'discord');
-- a Twitter id
SELECT * FROM snowflake_decode(1541815603606036480, 'twitter');
-- Instagram's post: 1387263000 ms after the epoch, shard 1341, 5001 % 1024
SELECT timestamp_ms - 1314220021721 AS ms, worker_id AS shard, sequence, node_fields
  FROM snowflake_decode((1387263000::bigint << 23) | (1341 << 10) | (5001 % 1024), 'instagram');
-- Sonyflake: time, then sequence, then machine
SELECT timestamp_ms - 1735689600000 AS ms, worker_id AS machine, sequence, node_fields
  FROM snowflake_decode((12345::bigint << 24) | (200 << 16) | 65535, 'sonyflake');

-- the largest id of each preset
SELECT p, d.created_at, d.worker_id, d.sequence
  FROM unnest(ARRAY['snowflake', 'twitter', 'discord', 'instagram', 'sonyflake']) p,
       snowflake_decode(9223372036854775807, p) d;

-- from_timestamp and decode agree at the edges of every preset: the id's
-- tick contains the timestamp
SELECT p,
       bool_and(d.created_at <= t AND d.created_at > t - i.tick_ms * interval '1 millisecond')
         AS tick_contains_t,
       bool_and(snowflake_from_timestamp(t, p) >= 0) AS positive
  FROM unnest(ARRAY['snowflake', 'twitter', 'discord', 'instagram', 'sonyflake']) p,
       snowflake_layout_info(p) i,
       LATERAL (VALUES (i.epoch), (i.epoch + interval '1 millisecond'),
                       (i.epoch + interval '123 days 4 hours 5.678 seconds'),
                       (i.ends_at)) v(t),
       LATERAL snowflake_decode(snowflake_from_timestamp(t, p), p) d
 GROUP BY p ORDER BY p;
SELECT snowflake_from_timestamp(ends_at + interval '1 millisecond', 'instagram')
  FROM snowflake_layout_info('instagram');
SELECT snowflake_from_timestamp('2010-11-04 01:42:54.656+00', 'twitter');

-- the default layout and the 'snowflake' preset agree (default epoch here)
SELECT (SELECT (created_at, timestamp_ms, worker_id, sequence) FROM snowflake_decode(id))
     = (SELECT (created_at, timestamp_ms, worker_id, sequence) FROM snowflake_decode(id, 'snowflake'))
       AS same
  FROM (VALUES (0::bigint), (253868853291921408)) v(id);

-- custom layouts: any order of node and sequence, named parts, ticks, epochs
SELECT * FROM snowflake_layout_info('time:40 region:3 worker:7 sequence:13 tick:1ms epoch:2020-01-01');
SELECT * FROM snowflake_decode((1000::bigint << 23) | (5 << 20) | (100 << 13) | 42,
                               'time:40 region:3 worker:7 sequence:13 epoch:2020-01-01');
SELECT * FROM snowflake_decode((7::bigint << 32) | (9 << 16) | 3,
                               'epoch:0, tick:1000ms, time:32, sequence:16, machine:16');
SELECT specification FROM snowflake_layout_info('sequence:12 time:41');

-- what a malformed specification says
SELECT * FROM snowflake_layout_info('snowflakes');
SELECT * FROM snowflake_layout_info('');
SELECT * FROM snowflake_layout_info('time:41 worker:10');
SELECT * FROM snowflake_layout_info('worker:10 time:41 sequence:12');
SELECT * FROM snowflake_layout_info('time:42 worker:10 sequence:13');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:11');
SELECT * FROM snowflake_layout_info('time:41 dc:5 sequence:12 worker:5');
SELECT * FROM snowflake_layout_info('time:41 worker:5 worker:5 sequence:12');
SELECT * FROM snowflake_layout_info('time:41 a:2 b:2 c:2 d:2 e:2 sequence:12');
SELECT * FROM snowflake_layout_info('time:31 worker:32 sequence:1');
SELECT * FROM snowflake_layout_info('time:0 worker:10 sequence:12');
SELECT * FROM snowflake_layout_info('time:60 worker:1 sequence:2 tick:3600000ms');
SELECT * FROM snowflake_layout_info('time:41 worker:ten sequence:12');
SELECT * FROM snowflake_layout_info('time:41 Worker:10 sequence:12');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:12 tick:0ms');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:12 tick:1s');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:12 tick:1ms tick:2ms');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:12 epoch:yesterday');
SELECT * FROM snowflake_layout_info('time:41 worker:10 sequence:12 =');
SELECT * FROM snowflake_layout_info(repeat('x', 600));
SELECT * FROM snowflake_decode(-1, 'snowflake');
SELECT worker_id, sequence FROM snowflake_decode(-1, 'discord');

-- fuzz: specifications built at random from the grammar's pieces never
-- crash, fail only with invalid_parameter_value, and those accepted read
-- back as themselves
DO $$
DECLARE
	pieces text[] := ARRAY['time:41', 'time:39', 'time:64', 'sequence:12',
		'sequence:8', 'sequence:0', 'worker:10', 'worker:5', 'dc:5', 'shard:13',
		'machine:16', 'tick:1ms', 'tick:10ms', 'tick:-1', 'epoch:0',
		'epoch:2025-01-01', 'epoch:2999-01-01T00:00:00Z', 'time', ':', ',', ' ',
		'x:1', 'worker:', ':12', 'sequence:99999999999999', 'snowflake',
		'twitter', '#', 'é'];
	spec text;
	accepted int := 0;
	refused int := 0;
	wide int := 0;
	again text;
	info record;
	total int;
	node int;
	seq int;
BEGIN
	PERFORM setseed(0.42);
	FOR i IN 1..20000 LOOP
		IF random() < 0.2 THEN
			-- the widest fields the parser accepts, and one bit more
			total := 63 + floor(random() * 2)::int;
			node := 1 + floor(random() * 32)::int;
			seq := 1 + floor(random() * 32)::int;
			spec := 'time:' || (total - node - seq) || ' worker:' || node ||
				' sequence:' || seq || ' tick:' ||
				CASE WHEN random() < 0.5 THEN 1 ELSE 1 + floor(random() * 3600000)::int END || 'ms';
		ELSIF random() < 0.5 THEN
			-- soup of the grammar's pieces
			spec := '';
			FOR j IN 1..(1 + floor(random() * 7))::int LOOP
				spec := spec || pieces[1 + floor(random() * array_length(pieces, 1))::int]
					|| CASE WHEN random() < 0.8 THEN ' ' ELSE '' END;
			END LOOP;
		ELSE
			-- well-formed items with widths near the valid ones, in any order
			SELECT string_agg(item, ' ' ORDER BY random()) INTO spec
			  FROM unnest(ARRAY[
					'time:' || (30 + floor(random() * 15))::int,
					'sequence:' || (1 + floor(random() * 14))::int,
					'worker:' || (1 + floor(random() * 12))::int,
					CASE WHEN random() < 0.3 THEN 'dc:' || (1 + floor(random() * 5))::int END,
					CASE WHEN random() < 0.3 THEN 'tick:' || (1 + floor(random() * 20))::int || 'ms' END]) item
			 WHERE item IS NOT NULL;
			IF random() < 0.7 THEN
				-- time first, as it must be
				spec := regexp_replace(spec, '^(.*?)(time:\d+) ?(.*)$', '\2 \1\3');
			END IF;
		END IF;
		BEGIN
			SELECT * INTO info FROM snowflake_layout_info(spec);
			again := info.specification;
			IF (SELECT specification FROM snowflake_layout_info(again)) <> again THEN
				RAISE EXCEPTION 'specification % does not read back as itself', again;
			END IF;
			-- the counts of the widest ones fit, and the last tick decodes
			IF info.ids_per_tick <> 2::numeric ^ info.sequence_bits OR
			   info.nodes <> 2::numeric ^ info.node_bits OR
			   (SELECT d.created_at FROM snowflake_decode(
					snowflake_from_timestamp(info.ends_at, again), again) d) >
			   info.ends_at THEN
				RAISE EXCEPTION 'layout % counts or decodes wrong', again;
			END IF;
			IF info.sequence_bits > 14 OR info.node_bits > 14 THEN
				wide := wide + 1;
			END IF;
			accepted := accepted + 1;
		EXCEPTION WHEN invalid_parameter_value THEN
			refused := refused + 1;
		END;
	END LOOP;
	RAISE NOTICE 'fuzz: over 100 accepted: %, over 100 of them with fields wider than 14 bits: %, over 10000 refused: %, nothing else',
		accepted > 100, wide > 100, refused > 10000;
END
$$;
