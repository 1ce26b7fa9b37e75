# Conversions of published tables.  The online path refuses a table in a
# publication: its shadow column would reach the subscribers, whose tables
# lack it, and stop them ("missing replicated column").  The refusal names
# the publication and what to do first, changes nothing, and the
# subscriber goes on applying changes.  On 15 and later, the offline
# converter names a publication's column list or row filter that uses a
# column to convert, where PostgreSQL's own error speaks of a WHERE clause
# for both.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $pub = snowflake_node('publisher', "snowflake.worker_id = 3\n", allows_streaming => 'logical');
$pub->start;
my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init(utf8_init());
$sub->start;

my $schema = q{
	CREATE TABLE items (id serial PRIMARY KEY, n integer);
	CREATE TABLE item_refs (id serial PRIMARY KEY, item_id integer REFERENCES items);};
$pub->safe_psql('postgres', "CREATE EXTENSION snowflake; $schema
	INSERT INTO items (n) SELECT g FROM generate_series(1, 100) g;
	INSERT INTO item_refs (item_id) SELECT g FROM generate_series(1, 100) g;
	CREATE PUBLICATION shop FOR TABLE items, item_refs;");
$sub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION shop CONNECTION 'host=" . $pub->host . ' port=' . $pub->port
	  . " dbname=postgres' PUBLICATION shop");
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')})
  or die 'the subscription did not sync';
is($sub->safe_psql('postgres', 'SELECT count(*) FROM item_refs'), '100', 'the subscriber has the rows');

# The online path: refused before anything changes.
my ($ret, $out, $err) = $pub->psql('postgres', q{CALL snowflake_convert_column_online('items'::regclass)});
isnt($ret, 0, 'the online conversion of a published table fails');
like($err, qr/ERROR:  cannot convert column "id" of table public.items online/, 'refused');
like($err, qr/DETAIL:  Table public.items is in publication "shop": its subscribers would receive the shadow column/,
	'naming the publication');
like($err, qr/HINT:  Make the columns bigint on every subscriber first/, 'and saying what to do first');
($ret, $out, $err) = $pub->psql('postgres', q{CALL snowflake_convert_column_online('items'::regclass, dry_run => true)});
like($err, qr/is in publication "shop"/, 'a dry run says so too');
is($pub->safe_psql('postgres', q{
	SELECT count(*) FROM pg_attribute
	 WHERE attrelid IN ('items'::regclass, 'item_refs'::regclass) AND attname LIKE '%snowflake%' AND NOT attisdropped}),
	'0', 'no shadow column was added');

# A publication of all tables, and (15 and later) of a schema, count too.
$pub->safe_psql('postgres', 'ALTER PUBLICATION shop DROP TABLE items, item_refs');
$pub->safe_psql('postgres', 'CREATE PUBLICATION everything FOR ALL TABLES');
($ret, $out, $err) = $pub->psql('postgres', q{CALL snowflake_convert_column_online('items'::regclass, dry_run => true)});
like($err, qr/is in publication "everything"/, 'a publication of all tables is refused');
$pub->safe_psql('postgres', 'DROP PUBLICATION everything; ALTER PUBLICATION shop ADD TABLE items, item_refs');
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION shop REFRESH PUBLICATION');

# The subscriber still applies changes.
$pub->safe_psql('postgres', 'INSERT INTO items (n) VALUES (1000)');
$pub->wait_for_catchup('shop');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM items WHERE n = 1000'), '1',
	'the subscriber still applies changes');

# The offline converter and a publication's row filter or column list on
# a column it would change (15 and later have them).
if ($pub->safe_psql('postgres', 'SHOW server_version_num') >= 150000)
{
	foreach my $case ([ 'row filter', 'item_refs WHERE (item_id > 0)' ],
		[ 'column list', 'item_refs (id, item_id)' ])
	{
		my ($what, $table) = @$case;
		$pub->safe_psql('postgres', "CREATE PUBLICATION narrow FOR TABLE $table");
		($ret, $out, $err) = $pub->psql('postgres',
			q{SELECT count(*) FROM snowflake_convert_column('items'::regclass, 'id'::name, false, false)});
		like($err,
			qr/ERROR:  the column list or row filter of table public.item_refs in publication "narrow" depends on the type of column "item_id" of table public.item_refs/,
			"offline: a publication's $what is named");
		unlike($err, qr/WHERE clause/, "not PostgreSQL's own message for a $what");
		$pub->safe_psql('postgres', 'DROP PUBLICATION narrow');
	}
}

$sub->stop;
$pub->stop;

done_testing();
