# doc/fleet.md's setup of a fleet: a group role that may call the lease
# functions, and a login of its own for each issuing server, with its
# logging setting.  Both servers lease through their logins; each lease is
# its login's (claimed_by); and one server's login can neither end the
# other's session on the coordinator nor renew or release its lease.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $coordinator = lease_coordinator('coordinator');
$coordinator->safe_psql('postgres', q{
	CREATE ROLE snowflake_fleet NOLOGIN;
	GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint),
		snowflake_lease_renew(integer, text[], bytea, integer, bigint),
		snowflake_lease_release(integer, text[], bigint) TO snowflake_fleet;
	CREATE ROLE snowflake_a LOGIN IN ROLE snowflake_fleet;
	ALTER ROLE snowflake_a SET log_parameter_max_length = 0;
	CREATE ROLE snowflake_b LOGIN IN ROLE snowflake_fleet;
	ALTER ROLE snowflake_b SET log_parameter_max_length = 0;});

my %node;
foreach my $name ('a', 'b')
{
	my $conninfo = 'host=' . $coordinator->host . ' port=' . $coordinator->port . " dbname=postgres user=snowflake_$name";
	$node{$name} = snowflake_node($name,
		"snowflake.lease_conninfo = '$conninfo'\nsnowflake.lease_ttl_ms = 2000\nsnowflake.lease_worker_ids = '3-4'\n");
	$node{$name}->start;
	$node{$name}->safe_psql('postgres', 'CREATE EXTENSION snowflake');
}
my %worker = map { $_ => wait_for_lease($node{$_}) } keys %node;
isnt($worker{a}, $worker{b}, "servers a and b lease worker ids $worker{a} and $worker{b} through their own logins");
is($coordinator->safe_psql('postgres', q{SELECT string_agg(node || ':' || claimed_by, ',' ORDER BY claimed_by) FROM snowflake_lease}),
	"$worker{a}:snowflake_a,$worker{b}:snowflake_b", 'each lease is its login\'s');

# server b's session on the coordinator, as server a's login sees it
my $b_pid = $coordinator->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE usename = 'snowflake_b'});
like($b_pid, qr/^\d+$/, 'server b has a session on the coordinator');
my ($ret, $out, $err) = $coordinator->psql('postgres', "SELECT pg_terminate_backend($b_pid)",
	extra_params => [ '-U', 'snowflake_a' ]);
like($err, qr/permission denied to terminate process|must be a member of the role whose process is being terminated/,
	'server a\'s login cannot end server b\'s session');
is($coordinator->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $b_pid"), '1',
	'which goes on');

# (with one login for the fleet, it could: the same role ends the session,
# which the lease client then starts again)
is($coordinator->safe_psql('postgres', "SELECT pg_terminate_backend($b_pid)", extra_params => [ '-U', 'snowflake_b' ]),
	't', 'server b\'s own login can end that session');

# nor renew or release server b's lease, whatever secret it tries
($ret, $out, $err) = $coordinator->psql('postgres', qq{
	SELECT renewed FROM snowflake_lease_renew($worker{b}, '{0123456789abcdef0123456789abcdef}', sha256('x'), 60000, 0);
	SELECT snowflake_lease_release($worker{b}, '{0123456789abcdef0123456789abcdef}'::text[], 0);},
	extra_params => [ '-U', 'snowflake_a' ]);
is($out, "f\nf", 'server a\'s login neither renews nor releases server b\'s lease');

# both keep their leases and issue
foreach my $name ('a', 'b')
{
	my $requests = $node{$name}->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats');
	$node{$name}->poll_query_until('postgres',
		"SELECT lease_requests >= $requests + 2 AND lease_state = 'held' AND worker_id = $worker{$name} FROM snowflake_stats")
	  or die "server $name does not renew";
	is($node{$name}->safe_psql('postgres', 'SELECT count(DISTINCT x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, 100)) s'),
		'100', "server $name renews its lease and issues");
}

$_->stop foreach values %node;
$coordinator->stop;
done_testing();
