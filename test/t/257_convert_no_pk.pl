# snowflake_convert_column_online() with a referencing table that has no
# primary key (a log of notes): its backfill walks it by physical position,
# in batches of whole blocks.
# - Under 3 pgbench writers that insert, update (moving rows to other
#   blocks) and delete notes, a VACUUM of the table every 200 ms, and a
#   probe that records its lock waits: the call cancelled in the middle of
#   the walk (its position a block) and called again; afterwards every note
#   is the writers' copy's, the column bigint, the foreign key valid, no
#   probe waited 2 s, and the walk itself set nearly every row (the sweep
#   after it, which finds any row left, found few: it would find the rest
#   of the table if the walk ended early).
# - The end state is the offline conversion's (pg_dump --schema-only, the
#   columns of each table sorted).
# - abort => true after the backfill: schema and rows as before.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('no_pk', "snowflake.worker_id = 7\nmax_connections = 30\nlog_statement = none\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);
	CREATE TABLE notes (customer_id integer REFERENCES customers, n integer NOT NULL, note text NOT NULL);
	INSERT INTO customers (name) SELECT 'c' || g FROM generate_series(1, 50000) g;
	INSERT INTO notes SELECT 1 + (g::bigint * 7919) % 50000, g, 'note ' || g FROM generate_series(1, 300000) g;
	CREATE INDEX notes_n ON notes (n);
	CREATE INDEX notes_customer_id ON notes (customer_id);
	CREATE SCHEMA shadow;
	CREATE TABLE shadow.probe_waits (seconds float8);
	VACUUM ANALYZE;
});
for my $db ('busy', 'undo', 'offline')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db TEMPLATE tmpl");
}

my $rows = q{SELECT md5(string_agg(n || ':' || coalesce(customer_id::text, '-') || ':' || note, ',' ORDER BY n)) FROM notes};

# ---- under writers and VACUUM, cancelled and resumed ----------------------

$node->safe_psql('busy', q{
	CREATE TABLE shadow.notes AS SELECT n, customer_id, note FROM notes;
	ALTER TABLE shadow.notes ADD PRIMARY KEY (n);
	CREATE SEQUENCE shadow.nseq START 300001;
});
my ($dry_ret, $dry_out, $dry_err) =
  $node->psql('busy', q{CALL snowflake_convert_column_online('customers', dry_run => true)});
like($dry_err, qr/backfill: UPDATE public.notes SET customer_id_snowflake = customer_id, in batches by physical position \(ctid\)/,
	'the plan walks the table without a primary key by physical position');

my $writer = q{
\set x random(1, 300000)
\set y random(1, 300000)
\set c random(1, 50000)
BEGIN;
SELECT nextval('shadow.nseq') AS nn \gset
INSERT INTO notes (customer_id, n, note) VALUES (:c, :nn, 'w');
INSERT INTO shadow.notes (n, customer_id, note) VALUES (:nn, :c, 'w');
UPDATE notes SET note = note || 'u', customer_id = :c WHERE n = :x;
UPDATE shadow.notes SET note = note || 'u', customer_id = :c WHERE n = :x;
DELETE FROM notes WHERE n = :y;
DELETE FROM shadow.notes WHERE n = :y;
COMMIT;
};
my $vacuum = q{
VACUUM notes;
\sleep 200 ms
};
my %bench = (
	writers => start_pgbench($node, 'busy', $writer, 3, '-R', '150'),
	vacuum => start_pgbench($node, 'busy', $vacuum, 1),
	probe => start_pgbench($node, 'busy', lock_probe('customers', 'notes'), 1));
$node->poll_query_until('busy', q{SELECT count(*) > 20 FROM shadow.probe_waits WHERE true})
  or die 'the probe does not run';

my $cancelled = cancel_when($node, 'busy', q{CALL snowflake_convert_column_online('customers', batch_size => 2000)},
	q{SELECT EXISTS (SELECT FROM snowflake_online_state
					  WHERE step = 'backfill' AND backfill_tables[backfill_table] = 'notes'::regclass
						AND rows_done >= 100000)});
like($cancelled, qr/canceling statement due to user request/, 'the call is cancelled in the walk');
like($node->safe_psql('busy', q{SELECT backfill_after::text FROM snowflake_online_state}),
	qr/^\{\d+,\d+,ctid\}$/, 'its position is a block, and the end of the walk');

my ($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('customers', batch_size => 2000)});
die "the second call failed: $err" if $ret;
my ($walked, $swept) = $err =~ /backfill: done, (\d+) rows in [\d.]+ s; the sweep set (\d+) rows the batches had skipped/
  or die "no end of the backfill in: $err";
cmp_ok($swept, '<', 3000,
	"called again, the walk resumes and sets nearly every row: $walked rows walked, $swept left to the sweep");
$node->safe_psql('busy',
	"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = 'customers'::regclass \\gexec");
($ret, $out, $err) = $node->psql('busy', q{CALL snowflake_convert_column_online('customers')});
like($err, qr/now takes Snowflake ids/, 'the conversion ends');

sleep(1);
for my $name (sort keys %bench)
{
	my $err = stop_pgbench($bench{$name});
	unlike($err, qr/aborted|ERROR/, "no $name client failed") or diag($err);
}

is( $node->safe_psql('busy', q{
SELECT count(*) FROM notes c FULL JOIN shadow.notes s ON s.n = c.n
 WHERE c.n IS NULL OR s.n IS NULL OR (c.customer_id, c.note) IS DISTINCT FROM (s.customer_id, s.note)}),
	'0', 'no note lost, added twice or changed against the writers\' copy');
is($node->safe_psql('busy', q{SELECT count(*) - count(DISTINCT n) FROM notes}), '0', 'no note twice');
cmp_ok($node->safe_psql('busy', q{SELECT count(*) FROM shadow.notes WHERE note LIKE '%u'}), '>', 20,
	'the writers updated throughout');
is( $node->safe_psql('busy', q{
SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
 WHERE a.attrelid = 'notes'::regclass AND a.attname = 'customer_id'}),
	'bigint', 'the column is bigint');
is( $node->safe_psql('busy', q{
SELECT (SELECT count(*) FROM notes o WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id))
     + (SELECT count(*) FROM pg_constraint WHERE conrelid IN ('customers'::regclass, 'notes'::regclass) AND NOT convalidated)}),
	'0', 'the foreign key holds, every constraint validated');
my ($probes, $longest) = probe_waits($node, 'busy');
cmp_ok($longest, '<', 2.0, "no writer's lock waited 2 s: longest ${longest} s over $probes probes");

# ---- the end state, and undone --------------------------------------------

$node->safe_psql('offline', q{SELECT count(*) FROM snowflake_convert_column('customers')});
is(dump_schema($node, 'busy'), dump_schema($node, 'offline'), 'the schema is the offline conversion\'s, but for the column order');

my $before_schema = dump_schema($node, 'undo');
my $before_rows = $node->safe_psql('undo', $rows);
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', stop_after => 'backfill')});
is($node->safe_psql('undo', 'SELECT count(*) FROM notes WHERE customer_id_snowflake IS DISTINCT FROM customer_id'),
	'0', 'abort: backfilled');
$node->safe_psql('undo', q{CALL snowflake_convert_column_online('customers', abort => true)});
is(dump_schema($node, 'undo'), $before_schema, 'abort: the schema is as before');
is($node->safe_psql('undo', $rows), $before_rows, 'abort: every row as before');

$node->stop;
done_testing();
