# Several pgbench clients inserting through the column DEFAULT at once: no
# failure, every id distinct, every client's ids in the order it inserted.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('pgbench', "max_connections = 20\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE SEQUENCE arrival;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
					client int, arrival bigint);
});

my $clients = 6;
my $transactions = 300;
my $rows = 50;
my $total = $clients * $transactions * ($rows + 1);
$node->pgbench(
	"-n -c $clients -j 2 -t $transactions",
	0,
	[qr{processed: @{[ $clients * $transactions ]}/@{[ $clients * $transactions ]}}],
	[qr{^$}],
	'pgbench clients insert through the DEFAULT without failures',
	{
		'001_snowflake_insert' => qq{
			INSERT INTO t (client, arrival)
				SELECT :client_id, nextval('arrival') FROM generate_series(1, $rows);
			INSERT INTO t (client, arrival) VALUES (:client_id, nextval('arrival'));
		}
	});

is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM t'),
	"$total|$total", 'every id is distinct');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (
		SELECT id < lag(id) OVER (PARTITION BY client ORDER BY arrival) AS backwards
		  FROM t) s
	 WHERE backwards}),
	'0', "each client's ids increase in the order it inserted them");
is($node->safe_psql('postgres', 'SELECT ids_issued >= ' . $total . ' FROM snowflake_stats'),
	't', 'the statistics count every id');

$node->stop;
done_testing();
