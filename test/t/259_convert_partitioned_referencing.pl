# snowflake_convert_column_online() with a partitioned referencing table:
# customers, a plain table, and their visits, range-partitioned by day, one
# partition range-partitioned again, with a default partition, whose
# foreign key references the customers and whose index covers it.
# - Under 3 pgbench writers that insert customers and visits, update
#   visits and delete customers (their visits go with them: ON DELETE
#   CASCADE), and a probe that records its lock waits: the call cancelled
#   in the middle of the backfill of the partitions and called again.
#   Afterwards every row is the writers' copy's, every partition's column
#   bigint, the foreign key valid on the partitioned table and each
#   partition's its copy, each partition's index attached to its parent's,
#   no probe waited 2 s.
# - The end state is the offline conversion's (pg_dump --schema-only, the
#   columns of each table sorted).
# - abort => true after the new foreign keys: schema and rows as before.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('referencing', "snowflake.worker_id = 9\nmax_connections = 30\nlog_statement = none\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);
	CREATE TABLE visits (id serial, customer_id integer NOT NULL REFERENCES customers ON DELETE CASCADE,
						 day integer NOT NULL, note text NOT NULL, PRIMARY KEY (id, day))
		PARTITION BY RANGE (day);
	CREATE TABLE visits_early PARTITION OF visits FOR VALUES FROM (0) TO (10) PARTITION BY RANGE (day);
	CREATE TABLE visits_early_a PARTITION OF visits_early FOR VALUES FROM (0) TO (5);
	CREATE TABLE visits_early_b PARTITION OF visits_early FOR VALUES FROM (5) TO (10);
	CREATE TABLE visits_late PARTITION OF visits FOR VALUES FROM (10) TO (20);
	CREATE TABLE visits_other PARTITION OF visits DEFAULT;
	CREATE INDEX visits_customer ON visits (customer_id);
	COMMENT ON CONSTRAINT visits_customer_id_fkey ON visits IS 'whose visit';
	INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, 20000) g;
	INSERT INTO visits (customer_id, day, note)
		SELECT 1 + (g::bigint * 7919) % 20000, g % 25, 'v' || g FROM generate_series(1, 200000) g;
	CREATE SCHEMA shadow;
	CREATE TABLE shadow.probe_waits (seconds float8);
	VACUUM ANALYZE;
});
for my $db ('busy', 'undo', 'offline')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db TEMPLATE tmpl");
}

my $rows = q{SELECT md5(string_agg(id || ':' || customer_id || ':' || day || ':' || note, ',' ORDER BY id))
			   || md5((SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM customers)) FROM visits};

# ---- under writers, cancelled and resumed ----------------------------------

$node->safe_psql('busy', q{
	CREATE TABLE shadow.customers AS SELECT id::bigint AS id, name FROM customers;
	ALTER TABLE shadow.customers ADD PRIMARY KEY (id);
	CREATE TABLE shadow.visits AS SELECT id, customer_id::bigint AS customer_id, day, note FROM visits;
	ALTER TABLE shadow.visits ADD PRIMARY KEY (id);
});
my ($dry_ret, $dry_out, $dry_err) =
  $node->psql('busy', q{CALL snowflake_convert_column_online('customers', dry_run => true)});
like($dry_err, qr/constrain: ALTER TABLE public.visits_early_a ADD CONSTRAINT visits_customer_id_fkey_snowflake FOREIGN KEY \(customer_id_snowflake\) REFERENCES public.customers \(id_snowflake\) ON UPDATE NO ACTION ON DELETE CASCADE NOT VALID/,
	'the plan adds the new foreign key to each partition that holds rows');
like($dry_err, qr/swap: ALTER TABLE public.visits ADD CONSTRAINT visits_customer_id_fkey FOREIGN KEY \(customer_id\) REFERENCES public.customers \(id\) ON UPDATE NO ACTION ON DELETE CASCADE\n/,
	'and the partitioned table\'s in the swap');

# (a writer's customer and visit are written with their copies)
my $writer = q{
\set d random(0, 24)
\set x random(1, 200000)
\set y random(1, 20000)
BEGIN;
INSERT INTO customers (name) VALUES ('w') RETURNING id AS cid \gset
INSERT INTO shadow.customers VALUES (:cid, 'w');
INSERT INTO visits (customer_id, day, note) VALUES (:cid, :d, 'w') RETURNING id AS vid \gset
INSERT INTO shadow.visits VALUES (:vid, :cid, :d, 'w');
UPDATE visits SET note = note || 'u' WHERE id = :x;
UPDATE shadow.visits SET note = note || 'u' WHERE id = :x;
DELETE FROM customers WHERE id = :y;
DELETE FROM shadow.visits WHERE customer_id = :y;
DELETE FROM shadow.customers WHERE id = :y;
COMMIT;
};
my $clients = start_writers($node, 'busy', $writer, 'customers', 'visits');

my $cancelled = cancel_when($node, 'busy', q{CALL snowflake_convert_column_online('customers', batch_size => 2000)},
	q{SELECT EXISTS (SELECT FROM snowflake_online_state WHERE step = 'backfill' AND backfill_table = 3)});
like($cancelled, qr/canceling statement due to user request/, 'the call is cancelled in the backfill');
is($node->safe_psql('busy', q{SELECT backfill_tables::text FROM snowflake_online_state}),
	'{customers,visits_early_a,visits_early_b,visits_late,visits_other}',
	'the backfill goes partition by partition');

my ($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('customers', batch_size => 2000)});
like($err, qr/step 3 of 5, index/, 'called again, it resumes and reaches the index step') or diag($err);
run_pending($node, 'busy', 'customers');
($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('customers')});
like($err, qr/now takes Snowflake ids/, 'the conversion ends') or diag($err);

# (the writers go on until they have written rows with Snowflake ids: on a busy
# machine the swap can end before they get many transactions in)
$node->poll_query_until('busy', q{SELECT count(*) > 20 FROM visits WHERE customer_id > 1000000})
  or diag('the writers wrote few rows after the swap');
stop_writers($clients);

is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM customers c FULL JOIN shadow.customers s ON s.id = c.id
		 WHERE c.id IS NULL OR s.id IS NULL OR c.name IS DISTINCT FROM s.name)
	 + (SELECT count(*) FROM visits c FULL JOIN shadow.visits s ON s.id = c.id
		 WHERE c.id IS NULL OR s.id IS NULL OR (c.customer_id, c.day, c.note) IS DISTINCT FROM (s.customer_id, s.day, s.note))}),
	'0', 'no customer or visit lost, added twice or changed against the writers\' copies');
cmp_ok($node->safe_psql('busy', q{SELECT count(*) FROM visits WHERE customer_id > 1000000}), '>', 20,
	'the writers added visits of customers with Snowflake ids after the swap');
is( $node->safe_psql('busy', q{
SELECT string_agg(DISTINCT format_type(a.atttypid, a.atttypmod), ',')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE (c.relname LIKE 'visits%' AND c.relkind IN ('r', 'p') AND a.attname = 'customer_id')
	OR (c.relname = 'customers' AND a.attname = 'id')}),
	'bigint', 'every partition\'s column, and the key, is bigint');
is( $node->safe_psql('busy', q{
SELECT string_agg(c.conrelid::regclass || ':' || c.conname || ':' || coalesce(p.conrelid::regclass::text, '-'), ' '
				  ORDER BY c.conrelid::regclass::text)
  FROM pg_constraint c LEFT JOIN pg_constraint p ON p.oid = c.conparentid
 WHERE c.contype = 'f' AND c.conrelid::regclass::text LIKE 'visits%'}),
	'visits:visits_customer_id_fkey:- visits_early:visits_customer_id_fkey:visits '
	  . 'visits_early_a:visits_customer_id_fkey:visits_early visits_early_b:visits_customer_id_fkey:visits_early '
	  . 'visits_late:visits_customer_id_fkey:visits visits_other:visits_customer_id_fkey:visits',
	'the foreign key is the partitioned table\'s, each partition\'s its copy, as before');
is( $node->safe_psql('busy', q{
SELECT string_agg(c.relname || '>' || p.relname, ' ' ORDER BY c.relname)
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
 WHERE c.relkind IN ('i', 'I') AND c.relname LIKE '%customer%'}),
	'visits_early_a_customer_id_idx>visits_early_customer_id_idx visits_early_b_customer_id_idx>visits_early_customer_id_idx '
	  . 'visits_early_customer_id_idx>visits_customer visits_late_customer_id_idx>visits_customer '
	  . 'visits_other_customer_id_idx>visits_customer',
	'each partition\'s index is attached to its parent\'s, at every level');
is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM visits v WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = v.customer_id))
	 + (SELECT count(*) FROM pg_index WHERE NOT indisvalid)
	 + (SELECT count(*) FROM pg_constraint WHERE NOT convalidated
			AND conrelid IN (SELECT oid FROM pg_class WHERE relname LIKE 'visits%' OR relname = 'customers'))}),
	'0', 'the foreign key holds, every index valid, every constraint validated');
check_probe($node, 'busy');

# ---- the end state, and undone --------------------------------------------

$node->safe_psql('offline', q{SELECT count(*) FROM snowflake_convert_column('customers')});
is(dump_schema($node, 'busy'), dump_schema($node, 'offline'), 'the schema is the offline conversion\'s, but for the column order');

my $before_schema = dump_schema($node, 'undo');
my $before_rows = $node->safe_psql('undo', $rows);
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', stop_after => 'backfill')});
$node->safe_psql('undo', q{SELECT unnest(pending) FROM snowflake_online_conversions \gexec});
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', stop_after => 'validate')});
is($node->safe_psql('undo', q{SELECT count(*) FROM pg_constraint WHERE conname = 'visits_customer_id_fkey_snowflake' AND convalidated}),
	'4', 'abort: the new foreign keys validated on the four partitions that hold rows');
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', abort => true)});
is(dump_schema($node, 'undo'), $before_schema, 'abort: the schema is as before');
is($node->safe_psql('undo', q{SELECT count(*) FROM pg_constraint WHERE conname LIKE '%snowflake%'
								  AND conrelid IN (SELECT oid FROM pg_class WHERE relname LIKE 'visits%' OR relname = 'customers')}), '0',
	'abort: no constraint of the conversion\'s left');
is($node->safe_psql('undo', $rows), $before_rows, 'abort: every row as before');

$node->stop;
done_testing();
