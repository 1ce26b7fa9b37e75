# A backup role dumps a database with the extension completely, with no
# option of pg_dump's: a member of pg_read_all_data (on PostgreSQL 13,
# which has no such role, one granted SELECT on the extension's tables).
# The database holds leases and an online conversion stopped mid-way; the
# dump, restored by a superuser into a new database, has every lease row
# and the conversion's state, and the conversion finishes there (its mark
# on the triggers came with the dump).  Under 0.3.0, row-level security on
# the conversions' state stopped such a dump ("query would be affected by
# row-level security policy").
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $dir = $PostgreSQL::Test::Utils::tmp_check;
my $node = snowflake_node('backup', "snowflake.worker_id = 9\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE items (id serial PRIMARY KEY, n integer);
	CREATE TABLE item_refs (id serial PRIMARY KEY, item_id integer REFERENCES items);
	INSERT INTO items (n) SELECT g FROM generate_series(1, 500) g;
	INSERT INTO item_refs (item_id) SELECT 1 + g % 500 FROM generate_series(1, 1000) g;
	SELECT count(*) FROM snowflake_lease_claim('a'::text, repeat('a', 32)::text, '{0}'::int4[], '{9}'::int4[],
											   NULL::int4, 600000::int4, 1000::int8);
	SELECT count(*) FROM snowflake_lease_claim('b'::text, repeat('b', 32)::text, '{0}'::int4[], '{9}'::int4[],
											   NULL::int4, 600000::int4, 2000::int8);
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass, stop_after => 'backfill'::text);});
is($node->safe_psql('shop', 'SELECT step FROM snowflake_online_conversions'),
	'index', 'a conversion stopped after its backfill');

# The backup role: pg_read_all_data where it exists.
my $has_read_all = $node->safe_psql('shop',
	q{SELECT count(*) FROM pg_roles WHERE rolname = 'pg_read_all_data'});
$node->safe_psql('shop', 'CREATE ROLE backup LOGIN');
if ($has_read_all)
{
	$node->safe_psql('shop', 'GRANT pg_read_all_data TO backup');
}
else
{
	$node->safe_psql('shop', q{
		GRANT USAGE ON SCHEMA public TO backup;
		GRANT SELECT ON ALL TABLES IN SCHEMA public TO backup;
		GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO backup;});
}
my ($ret, $out, $err) = $node->psql('shop', 'SELECT count(*) FROM snowflake_online_state',
	extra_params => [ '-U', 'backup' ]);
is($out, '1', 'the backup role reads the conversion\'s state') or diag($err);

$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', "$dir/shop.dump", '-U', 'backup', $node->connstr('shop') ],
	'pg_dump as the backup role, with no option');

# Restored by a superuser into a new database: every row, and the
# conversion goes on.
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), "$dir/shop.dump" ],
	'pg_restore into a new database');
my $rows_query = q{SELECT (SELECT string_agg(format('%s:%s:%s', node, generation, horizon_ms), ',' ORDER BY node)
							 FROM snowflake_lease)
					 || ' / ' || (SELECT string_agg(format('%s:%s:%s', tbl::regclass, step, rows_done), ',')
									FROM snowflake_online_state)};
is($node->safe_psql('restored', $rows_query), $node->safe_psql('shop', $rows_query),
	'the restored database has every lease row and the conversion\'s state');
$node->safe_psql('restored', q{
	SET client_min_messages = warning;
	CALL snowflake_convert_column_online('items'::regclass);
	SELECT unnest(pending) FROM snowflake_online_conversions \gexec
	CALL snowflake_convert_column_online('items'::regclass);});
is($node->safe_psql('restored', q{
	SELECT (SELECT count(*) FROM snowflake_online_conversions) || ' '
		   || (SELECT string_agg(format_type(atttypid, NULL), ',' ORDER BY attrelid::regclass::text)
				 FROM pg_attribute
				WHERE (attrelid, attname) IN (('items'::regclass, 'id'), ('item_refs'::regclass, 'item_id')))}),
	'0 bigint,bigint', 'the restored conversion finishes: both columns bigint');
is($node->safe_psql('restored', 'SELECT count(*) FROM item_refs r JOIN items i ON i.id = r.item_id'),
	'1000', 'every reference kept');

$node->stop;

done_testing();
