# snowflake_convert_column_online() with a partitioned key table: orders
# hash-partitioned by tenant into 4 partitions, one of them range-
# partitioned again with a default partition, its key (id, tenant) and an
# index on (note, id) at every level, and a plain table of items whose
# foreign key references it.
# - Under 3 pgbench writers that insert, update and delete orders and
#   items, and a probe that records its lock waits: the call cancelled in
#   the middle of the backfill of the partitions and called again; a
#   partition created after the validate step sends the conversion back to
#   the backfill, then to the index step, with that partition's indexes to
#   build (attached and detached partitions: regress convert_online).  Afterwards every row is the
#   writers' copy's, every partition's column bigint, the keys and the
#   foreign key valid, each partition's index attached to its parent's, no
#   probe waited 2 s.
# - The end state is the offline conversion's (pg_dump --schema-only, the
#   columns of each table sorted).
# - abort => true after the backfill: schema and rows as before.
# - Refused before anything changes: a table partitioned by its key, a
#   partitioned table with a foreign key to it (partitioned tables that
#   reference a plain one: TAP 259), and a foreign key referencing one
#   partition.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('partitioned', "snowflake.worker_id = 8\nmax_connections = 30\nlog_statement = none\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE orders (id serial, tenant integer NOT NULL, note text NOT NULL, PRIMARY KEY (id, tenant))
		PARTITION BY HASH (tenant);
	CREATE TABLE orders_0 PARTITION OF orders FOR VALUES WITH (MODULUS 4, REMAINDER 0);
	CREATE TABLE orders_1 PARTITION OF orders FOR VALUES WITH (MODULUS 4, REMAINDER 1);
	CREATE TABLE orders_2 PARTITION OF orders FOR VALUES WITH (MODULUS 4, REMAINDER 2);
	CREATE TABLE orders_3 PARTITION OF orders FOR VALUES WITH (MODULUS 4, REMAINDER 3)
		PARTITION BY RANGE (tenant);
	CREATE TABLE orders_3_low PARTITION OF orders_3 FOR VALUES FROM (0) TO (20);
	CREATE TABLE orders_3_other PARTITION OF orders_3 DEFAULT;
	CREATE INDEX orders_note_id ON orders (note, id);
	COMMENT ON INDEX orders_note_id IS 'by note';
	CREATE TABLE items (id serial PRIMARY KEY, order_id integer NOT NULL, tenant integer NOT NULL,
						FOREIGN KEY (order_id, tenant) REFERENCES orders ON DELETE CASCADE);
	CREATE INDEX items_order ON items (order_id, tenant);
	INSERT INTO orders (tenant, note) SELECT g % 40, 'o' || g FROM generate_series(1, 200000) g;
	INSERT INTO items (order_id, tenant) SELECT o.id, o.tenant FROM orders o WHERE o.id % 2 = 0;
	CREATE SCHEMA shadow;
	CREATE TABLE shadow.probe_waits (seconds float8);
	VACUUM ANALYZE;
});
for my $db ('busy', 'undo', 'offline')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db TEMPLATE tmpl");
}

my $rows = q{SELECT md5(string_agg(id || ':' || tenant || ':' || note, ',' ORDER BY id))
			   || md5((SELECT string_agg(id || ':' || order_id, ',' ORDER BY id) FROM items)) FROM orders};

# ---- under writers, cancelled and resumed ----------------------------------

$node->safe_psql('busy', q{
	CREATE TABLE shadow.orders AS SELECT id::bigint AS id, tenant, note FROM orders;
	ALTER TABLE shadow.orders ADD PRIMARY KEY (id);
	CREATE TABLE shadow.items AS SELECT id, order_id::bigint AS order_id FROM items;
	ALTER TABLE shadow.items ADD PRIMARY KEY (id);
});
my ($dry_ret, $dry_out, $dry_err) =
  $node->psql('busy', q{CALL snowflake_convert_column_online('orders', dry_run => true)});
like($dry_err, qr/backfill: UPDATE public.orders_3_other SET id_snowflake = id, in batches in the order of \(id, tenant\)/,
	'the plan backfills each partition that holds rows, sub-partitions and default included');
like($dry_err, qr/index: CREATE UNIQUE INDEX CONCURRENTLY orders_3_low_pkey_snowflake ON public.orders_3_low/,
	'and builds each partition\'s index');
like($dry_err, qr/swap: ALTER TABLE public.orders_3 ADD CONSTRAINT orders_3_pkey PRIMARY KEY \(id, tenant\).*swap: ALTER TABLE public.orders ADD CONSTRAINT orders_pkey PRIMARY KEY \(id, tenant\)/s,
	'the swap makes the keys from the deepest level up');

# (a writer's order and item are written with their copies; the ids come
# from the table's default, before and after the swap)
my $writer = q{
\set t random(0, 39)
\set x random(1, 200000)
\set y random(1, 200000)
BEGIN;
INSERT INTO orders (tenant, note) VALUES (:t, 'w') RETURNING id AS oid \gset
INSERT INTO shadow.orders VALUES (:oid, :t, 'w');
INSERT INTO items (order_id, tenant) VALUES (:oid, :t) RETURNING id AS iid \gset
INSERT INTO shadow.items VALUES (:iid, :oid);
UPDATE orders SET note = note || 'u' WHERE id = :x;
UPDATE shadow.orders SET note = note || 'u' WHERE id = :x;
DELETE FROM shadow.items WHERE order_id = :y;
DELETE FROM orders WHERE id = :y;
DELETE FROM shadow.orders WHERE id = :y;
COMMIT;
};
my $clients = start_writers($node, 'busy', $writer, 'orders', 'items');

my $cancelled = cancel_when($node, 'busy', q{CALL snowflake_convert_column_online('orders', batch_size => 2000)},
	q{SELECT EXISTS (SELECT FROM snowflake_online_state WHERE step = 'backfill' AND backfill_table = 3)});
like($cancelled, qr/canceling statement due to user request/, 'the call is cancelled in the backfill');
is($node->safe_psql('busy', q{SELECT backfill_tables::text FROM snowflake_online_state}),
	'{orders_0,orders_1,orders_2,orders_3_low,orders_3_other,items}',
	'the backfill goes partition by partition');

my ($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('orders', batch_size => 2000)});
like($err, qr/step 3 of 5, index/, 'called again, it resumes and reaches the index step') or diag($err);
like($err, qr/backfill: about \d+ rows in public.orders_0, public.orders_1, public.orders_2, public.orders_3_low, public.orders_3_other, public.items/,
	'the backfill names its partitions');
run_pending($node, 'busy', 'orders');

# a partition made after the validate step is not in the backfill and has
# no index of the conversion's: the conversion goes back
($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('orders', stop_after => 'validate')});
like($err, qr/stopping after step validate/, 'validated') or diag($err);
# (the writers' lock order, the partitioned table first: CREATE TABLE alone
# locks orders_3, then its default partition, and deadlocks with them)
$node->safe_psql('busy', q{
	BEGIN;
	LOCK TABLE orders IN ACCESS EXCLUSIVE MODE;
	CREATE TABLE orders_3_high PARTITION OF orders_3 FOR VALUES FROM (1000) TO (2000);
	COMMIT;});
my $high = $node->safe_psql('busy', q{
	SELECT min(t) FROM generate_series(1000, 1999) t WHERE satisfies_hash_partition('orders'::regclass, 4, 3, t)});
$node->safe_psql('busy', qq{
	WITH o AS (INSERT INTO orders (tenant, note) VALUES ($high, 'high') RETURNING id, tenant, note)
	INSERT INTO shadow.orders SELECT * FROM o});
($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('orders')});
like($err, qr/table public.orders_3_high became a partition of the conversion's tables since it began: its rows are backfilled \(back to the backfill step\).*step 3 of 5, index.*CREATE UNIQUE INDEX CONCURRENTLY orders_3_high_pkey_snowflake/s,
	'a partition created after the validate step sends the conversion back to the backfill and the index step') or diag($err);
run_pending($node, 'busy', 'orders');
($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('orders')});
like($err, qr/after the swap: ALTER TABLE public.items VALIDATE CONSTRAINT items_order_id_tenant_fkey.*now takes Snowflake ids/s,
	'the conversion ends, the foreign key validated after the swap') or diag($err);

# (the writers go on until they have written rows with Snowflake ids: on a busy
# machine the swap can end before they get many transactions in)
$node->poll_query_until('busy', q{SELECT count(*) > 20 FROM orders WHERE id > 1000000})
  or diag('the writers wrote few rows after the swap');
stop_writers($clients);

is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM orders c FULL JOIN shadow.orders s ON s.id = c.id
		 WHERE c.id IS NULL OR s.id IS NULL OR (c.tenant, c.note) IS DISTINCT FROM (s.tenant, s.note))
	 + (SELECT count(*) FROM items c FULL JOIN shadow.items s ON s.id = c.id
		 WHERE c.id IS NULL OR s.id IS NULL OR c.order_id IS DISTINCT FROM s.order_id)}),
	'0', 'no order or item lost, added twice or changed against the writers\' copies');
cmp_ok($node->safe_psql('busy', q{SELECT count(*) FROM orders WHERE id > 1000000}), '>', 20,
	'the writers inserted with Snowflake ids after the swap');
is( $node->safe_psql('busy', q{
SELECT string_agg(DISTINCT format_type(a.atttypid, a.atttypmod), ',')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE (c.relname LIKE 'orders%' AND c.relkind IN ('r', 'p') AND a.attname = 'id')
	OR (c.relname = 'items' AND a.attname = 'order_id')}),
	'bigint', 'every partition\'s column, and the referencing one, is bigint');
is( $node->safe_psql('busy', q{
SELECT string_agg(c.relname || '>' || p.relname, ' ' ORDER BY c.relname)
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
 WHERE c.relkind IN ('i', 'I')}),
	'orders_0_note_id_idx>orders_note_id orders_0_pkey>orders_pkey orders_1_note_id_idx>orders_note_id '
	  . 'orders_1_pkey>orders_pkey orders_2_note_id_idx>orders_note_id orders_2_pkey>orders_pkey '
	  . 'orders_3_high_note_id_idx>orders_3_note_id_idx orders_3_high_pkey>orders_3_pkey '
	  . 'orders_3_low_note_id_idx>orders_3_note_id_idx orders_3_low_pkey>orders_3_pkey '
	  . 'orders_3_note_id_idx>orders_note_id orders_3_other_note_id_idx>orders_3_note_id_idx '
	  . 'orders_3_other_pkey>orders_3_pkey orders_3_pkey>orders_pkey',
	'each partition\'s index and key is attached to its parent\'s, at every level');
is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT FROM orders o WHERE o.id = i.order_id AND o.tenant = i.tenant))
	 + (SELECT count(*) FROM pg_index WHERE NOT indisvalid)
	 + (SELECT count(*) FROM pg_constraint WHERE conparentid = 0 AND NOT convalidated
			AND conrelid IN (SELECT oid FROM pg_class WHERE relname LIKE 'orders%' OR relname = 'items'))}),
	'0', 'the foreign key holds, every index valid, every constraint validated');
check_probe($node, 'busy');

# ---- the end state, and undone --------------------------------------------

$node->safe_psql('offline', q{
	CREATE TABLE orders_3_high PARTITION OF orders_3 FOR VALUES FROM (1000) TO (2000);
	SELECT count(*) FROM snowflake_convert_column('orders');});
# (before PostgreSQL 18 the offline conversion's rebuild of a partitioned
# index gives its comment to every partition's index too, which had none:
# left out)
my $offline = dump_schema($node, 'offline');
$offline =~ s/--\n-- Name: INDEX orders_\w+_note_id_idx; Type: COMMENT;[^\n]*\n--\n\nCOMMENT ON INDEX [^\n]*\n\n\n//g;
is(dump_schema($node, 'busy'), $offline, 'the schema is the offline conversion\'s, but for the column order');

my $before_schema = dump_schema($node, 'undo');
my $before_rows = $node->safe_psql('undo', $rows);
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('orders', stop_after => 'backfill')});
is($node->safe_psql('undo', 'SELECT count(*) FROM orders WHERE id_snowflake IS DISTINCT FROM id'),
	'0', 'abort: backfilled');
$node->safe_psql('undo', q{SELECT unnest(pending) FROM snowflake_online_conversions \gexec});
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('orders', abort => true)});
is(dump_schema($node, 'undo'), $before_schema, 'abort: the schema is as before');
is($node->safe_psql('undo', $rows), $before_rows, 'abort: every row as before');

# ---- refused ---------------------------------------------------------------

$node->safe_psql('undo', q{
	CREATE TABLE by_id (id serial PRIMARY KEY) PARTITION BY RANGE (id);
	CREATE TABLE by_id_1 PARTITION OF by_id FOR VALUES FROM (0) TO (1000);
});
$node->safe_psql('postgres', 'CREATE DATABASE both_partitioned TEMPLATE tmpl');
$node->safe_psql('both_partitioned', q{
	CREATE TABLE logs (order_id integer, tenant integer, FOREIGN KEY (order_id, tenant) REFERENCES orders)
		PARTITION BY RANGE (tenant);
	CREATE TABLE logs_all PARTITION OF logs DEFAULT;
	INSERT INTO logs SELECT id, tenant FROM orders WHERE id % 10 = 0;
});
($ret, $out, $err) = $node->psql('undo', q{CALL snowflake_convert_column_online('by_id')});
like($err, qr/DETAIL:  Column "id" is in the partition key of table public.by_id, and PostgreSQL cannot change the type/,
	'a table partitioned by its key is refused');
# (from PostgreSQL 18 on, converted: the swap adds the foreign key NOT VALID)
if ($node->safe_psql('both_partitioned', 'SHOW server_version_num') >= 180000)
{
	my $logs = $node->safe_psql('both_partitioned', q{SELECT md5(string_agg(order_id || ':' || tenant, ',' ORDER BY order_id)) FROM logs});
	$node->safe_psql('both_partitioned', q{CALL snowflake_convert_column_online('orders', stop_after => 'backfill')});
	$node->safe_psql('both_partitioned', q{SELECT unnest(pending) FROM snowflake_online_conversions \gexec});
	($ret, $out, $err) = $node->psql('both_partitioned', q{CALL snowflake_convert_column_online('orders')});
	like($err, qr/after the swap: ALTER TABLE public.logs VALIDATE CONSTRAINT logs_order_id_tenant_fkey/,
		'18 and later: a partitioned table with a foreign key to it is converted, the key validated after the swap')
	  or diag($err);
	is( $node->safe_psql('both_partitioned', q{
SELECT (SELECT md5(string_agg(order_id || ':' || tenant, ',' ORDER BY order_id)) FROM logs)
	 = $$} . $logs . q{$$
   AND (SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND NOT convalidated) = 0
   AND (SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'logs_all'::regclass AND attname = 'order_id') = 'bigint'}),
		't', '18 and later: its rows as before, its column bigint, every foreign key and copy validated');
}
else
{
	($ret, $out, $err) = $node->psql('both_partitioned', q{CALL snowflake_convert_column_online('orders')});
	like($err, qr/DETAIL:  Foreign key "logs_order_id_tenant_fkey" of partitioned table public.logs references partitioned table public.orders, and before PostgreSQL 18/,
		'before 18: a partitioned table with a foreign key to it is refused');
}
$node->safe_psql('undo', q{CREATE TABLE audit (order_id integer, tenant integer, FOREIGN KEY (order_id, tenant) REFERENCES orders_1)});
($ret, $out, $err) = $node->psql('undo', q{CALL snowflake_convert_column_online('orders')});
like($err, qr/DETAIL:  Foreign key "audit_order_id_tenant_fkey" of table public.audit references partition public.orders_1, not its partitioned table/,
	'a foreign key referencing one partition is refused');
is($node->safe_psql('undo', q{SELECT count(*) FROM pg_attribute WHERE attname LIKE '%snowflake' AND NOT attisdropped}),
	'0', 'refused before anything changes');

$node->stop;
done_testing();
