# Leases at their edges: more servers than worker ids, a cloned data
# directory started as a second primary, and bad configuration.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $dir = $PostgreSQL::Test::Utils::tmp_check;
my $coordinator = lease_coordinator('coordinator');

# 5. Exhaustion: two worker ids, three servers
my $range = "snowflake.lease_worker_ids = '0-1'\n";
my @servers = map { lease_node("two$_", $coordinator, $range) } 1 .. 3;
for my $node (@servers[0, 1])
{
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	wait_for_lease($node);
}
my $extra = $servers[2];
$extra->start;
$extra->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$extra->poll_query_until('postgres',
	q{SELECT lease_state = 'no free worker id' FROM snowflake_stats})
  or die 'the extra server does not see the range used up';
like(psql_stderr($extra, 'SELECT snowflake_nextval()'),
	qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: every worker id of "snowflake.lease_worker_ids" is leased to another server\n.*DETAIL:  The coordinator has no free worker id among 0-1\./s,
	'a server beyond the range fails clearly');
my $freed = $servers[0]->safe_psql('postgres', 'SELECT worker_id FROM snowflake_stats');
$servers[0]->stop('fast');
is(wait_for_lease($extra), $freed, 'and picks up the worker id another server releases');
ok($extra->safe_psql('postgres', 'SELECT snowflake_nextval()') > 0, 'then issues ids');
$_->stop for @servers[1, 2];

# 6. A clone: pg_basebackup of a running issuing server, started as a
# second primary while the original runs, gets a lease of its own.
my $original = lease_node('original', $coordinator, '', allows_streaming => 1);
$original->start;
$original->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $original_worker = wait_for_lease($original);
$original->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
$original->backup('clone');
my $clone = PostgreSQL::Test::Cluster->new('clone');
$clone->init_from_backup($original, 'clone');
$clone->start;
my $clone_worker = wait_for_lease($clone);
isnt($clone_worker, $original_worker,
	"a clone started next to its original leases another worker id ($clone_worker, not $original_worker)");
my @files = ("$dir/original.out", "$dir/clone.out");
my @draws = (draw_to_file($original, 200_000, $files[0]), draw_to_file($clone, 200_000, $files[1]));
$_->finish for @draws;
is(repeated_ids(@files), 0, 'no id twice among 2 x 200,000 of the original and its clone');
$original->stop;
$clone->stop;

# A standby claims no lease; promoted (while its primary runs on), it
# claims one of its own.
my $primary = lease_node('primary', $coordinator, '', allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $primary_worker = wait_for_lease($primary);
$primary->backup('standby');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'standby', has_streaming => 1);
$standby->start;
like(psql_stderr($standby, 'SELECT snowflake_nextval()'), qr/ERROR:  25006: cannot execute snowflake_nextval\(\) during recovery/,
	'a standby of a leasing primary issues nothing');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM snowflake_lease WHERE expires_at > now()'),
	'1', 'and claims no lease');
$standby->promote;
my $promoted_worker = wait_for_lease($standby);
isnt($promoted_worker, $primary_worker,
	"promoted while the primary runs, it leases a worker id of its own ($promoted_worker)");
@files = ("$dir/primary.out", "$dir/promoted.out");
@draws = (draw_to_file($primary, 100_000, $files[0]), draw_to_file($standby, 100_000, $files[1]));
$_->finish for @draws;
is(repeated_ids(@files), 0, 'no id twice between the old primary and the promoted standby');
$primary->stop;
$standby->stop;

# 7. Bad input: the server stays up, the calls say why, no id is issued.
$coordinator->safe_psql('postgres', q{
	CREATE ROLE fleetpw LOGIN PASSWORD 'right';
	ALTER ROLE fleetpw SET log_parameter_max_length = 0;
	CREATE DATABASE noext;});
$coordinator->safe_psql('postgres', q{SELECT pg_reload_conf()});
require_password($coordinator, 'fleetpw');
my $socket = 'host=' . $coordinator->host . ' port=' . $coordinator->port;
# a password file with the wrong password (a password in the connection
# string itself is refused at start-up: see below)
my $pgpass = "$dir/wrong.pgpass";
write_passfile($pgpass, '*:*:*:fleetpw:wrong');
my %bad = (
	unreachable => [ "host=$dir/nowhere port=1 dbname=postgres",
		qr/the lease coordinator is unreachable\n.*DETAIL:  Since .*: (connection to server .* failed|could not connect to server)/s,
		'unreachable' ],
	'wrong password' => [ "$socket dbname=postgres user=fleetpw passfile=$pgpass",
		qr/the lease coordinator is unreachable\n.*password authentication failed for user "fleetpw"/s,
		'unreachable' ],
	'no extension' => [ "$socket dbname=noext user=fleet",
		qr/the lease coordinator refused the claim\n.*DETAIL:  Since .*: the coordinator's database has no snowflake extension/s,
		'refused' ],);
my $n = 0;
for my $case (sort keys %bad)
{
	my ($conninfo, $message, $state) = @{ $bad{$case} };
	my $node = snowflake_node('bad' . $n++,
		"snowflake.lease_conninfo = '$conninfo'\nsnowflake.lease_ttl_ms = 2000\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	# (on a busy machine a first attempt can time out before the
	# coordinator answers: wait for the state the case leads to)
	$node->poll_query_until('postgres', "SELECT lease_state = '$state' FROM snowflake_stats")
	  or diag("$case: lease_state stayed "
		  . $node->safe_psql('postgres', 'SELECT lease_state FROM snowflake_stats'));
	like(psql_stderr($node, 'SELECT snowflake_nextval()'),
		qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: $message/,
		"$case: the server starts, and the calls say why");
	is($node->safe_psql('postgres', 'SELECT lease_state, worker_id IS NULL, ids_issued FROM snowflake_stats'),
		"$state|t|0", "$case: no worker id, no id issued");
	ok($node->log_contains('the snowflake lease coordinator did not answer'),
		"$case: the log says so");
	$node->stop;
}

my %refused = (
	"snowflake.lease_worker_ids = '5-3'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_worker_ids": "5-3"\n.*DETAIL:  The range 5-3 is empty/,
	"snowflake.lease_worker_ids = '0-2000'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_worker_ids": "0-2000"\n.*DETAIL:  The range 0-2000 is empty or beyond the largest worker id of layout "snowflake", 1023\./,
	# a password would be readable by pg_read_all_settings: refused, and
	# the log does not repeat it
	"snowflake.lease_conninfo = 'host=/tmp dbname=postgres user=fleet password=sesame'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_conninfo"\n.*DETAIL:  It holds a password, which members of pg_read_all_settings, pg_monitor among them, could read\.\n.*HINT:  Put the password in a password file/,
	"snowflake.lease_conninfo = 'postgresql://fleet:sesame\@localhost/postgres'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_conninfo"\n.*DETAIL:  It holds a password/,
	"snowflake.lease_conninfo = 'host=/tmp sslpassword=sesame'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_conninfo"\n.*DETAIL:  It holds a sslpassword/,
	"snowflake.lease_conninfo = 'host=/tmp nonsense=1'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_conninfo"\n.*DETAIL:  It is not a connection string libpq can read: invalid connection option "nonsense"/,
	"snowflake.worker_id = 3" =>
	  qr/FATAL:  "snowflake.worker_id" and "snowflake.lease_conninfo" cannot both be set/,
	"snowflake.shards = '5'\nsnowflake.lease_worker_ids = '0-9'" =>
	  qr/DETAIL:  Shard 5 of "snowflake.shards" is in the range/,);
for my $setting (sort keys %refused)
{
	my $node = lease_node('refused' . $n++, $coordinator, "$setting\n");
	ok(!$node->start(fail_ok => 1), "the server refuses to start with $setting");
	like(slurp_file($node->logfile), $refused{$setting}, 'and the log says why');
	unlike(slurp_file($node->logfile), qr/sesame/, 'without the password');
}

$coordinator->stop;
done_testing();
