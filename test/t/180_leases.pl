# Worker ids from leases: a coordinator and four issuing servers started
# from the same configuration.  Each gets its own worker id, and 4 x 200,000
# ids drawn at once hold no duplicate.  A server restarted after a fast stop
# takes its worker id back at once; after an immediate stop, maybe another
# one; its ids are above its earlier ones either way.  With the coordinator
# stopped, calls go on while the leases are valid, then fail with 55000,
# and recover by themselves when it is back.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my $coordinator = lease_coordinator('coordinator');
my @servers = map { lease_node("issuer$_", $coordinator) } 1 .. 4;
$_->start for @servers;
$_->safe_psql('postgres', 'CREATE EXTENSION snowflake') for @servers;

my @workers = map { wait_for_lease($_) } @servers;
is(scalar(keys %{ { map { $_ => 1 } @workers } }), 4,
	"four servers of one configuration lease four worker ids (@workers)");
is($coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM snowflake_lease WHERE expires_at > now() AND generation = 1}),
	'4', 'the coordinator has four live leases');
my ($state, $coordinator_text, $generation) = split /\|/, $servers[0]->safe_psql('postgres',
	'SELECT lease_state, lease_coordinator, lease_generation FROM snowflake_stats');
is($state, 'held', 'snowflake_stats shows the lease held');
like($coordinator_text, qr/:\d+\/postgres$/, 'and the coordinator, without a password');

# 1. 4 x 200,000 ids at once
my $dir = $PostgreSQL::Test::Utils::tmp_check;
my @files = map { "$dir/leases.$_.out" } 1 .. 4;
my @draws = map { draw_to_file($servers[$_], 200_000, $files[$_]) } 0 .. 3;
$_->finish for @draws;
is(join(' ', map { my @c = stream_largest($_); $c[0] } @files), '200000 200000 200000 200000',
	'each server drew 200,000 increasing ids');
is(repeated_ids(@files), 0, 'no id twice among the 800,000');
is($servers[0]->safe_psql('postgres',
		"SELECT count(*) = 0 FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 10)) s, snowflake_decode(s.id) d WHERE d.worker_id <> $workers[0]"),
	't', 'ids carry the leased worker id');
# A leased worker id is no shard: a default naming it would go on issuing
# its ids after the lease moved (doc/layouts.md, "Logical shards").
my ($ret, $out, $err) = $servers[0]->psql('postgres', "SELECT snowflake_nextval($workers[0])");
like($err, qr/this server does not issue ids for shard $workers[0]\b/,
	'snowflake_nextval(w) with the leased worker id w is refused');

# 2. restarts: fast, then immediate
my $before = $servers[0]->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
$servers[0]->stop('fast');
is($coordinator->safe_psql('postgres',
		"SELECT released_at IS NOT NULL AND expires_at <= now() FROM snowflake_lease WHERE node = $workers[0]"),
	't', 'a fast stop releases the lease');
$servers[0]->start;
my $again = wait_for_lease($servers[0]);
my $first = $servers[0]->safe_psql('postgres', 'SELECT snowflake_nextval()');
# (from the postmaster's start to the claim, both on this machine's clock:
# not the time pg_ctl and the polling take, which a busy machine stretches)
my $took = $coordinator->safe_psql('postgres',
	"SELECT extract(epoch FROM claimed_at) FROM snowflake_lease WHERE node = $workers[0]")
  - $servers[0]->safe_psql('postgres', 'SELECT extract(epoch FROM pg_postmaster_start_time())');
is($again, $workers[0], 'after a fast stop the server takes its worker id back');
cmp_ok($took, '<', 2, sprintf('at once (%.1f s after the server started), not after the TTL', $took));
is_above($servers[0], $first, $before, 'its ids are above the ones before the restart');

$before = $servers[0]->safe_psql('postgres',
	'SELECT max(snowflake_nextval()) FROM generate_series(1, 1000)');
$servers[0]->stop('immediate');
$servers[0]->start;
$again = wait_for_lease($servers[0]);
$first = $servers[0]->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok(defined $again, "after an immediate stop it leases worker id $again");
is_above($servers[0], $first, $before, 'and its ids are above the ones before the crash');
$workers[0] = $again;

# 3. the coordinator goes away
my $ttl = 2;
$coordinator->stop('fast');
my $stopped = time();
my $during = $servers[1]->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 100)');
is($during, '100', 'with the coordinator gone, calls go on while the lease is valid');
my $stderr;
my $failed_after;
for (1 .. 100)
{
	$stderr = psql_stderr($servers[1], 'SELECT snowflake_nextval()');
	if ($stderr =~ /ERROR/)
	{
		$failed_after = time() - $stopped;
		last;
	}
	usleep(100_000);
}
ok(defined $failed_after && $failed_after <= $ttl + 1,
	sprintf('then they fail, once the lease lapsed (after %.1f s, TTL %d s)', $failed_after // -1, $ttl));
like($stderr,
	qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: the lease of worker id $workers[1] expired at .*\n.*DETAIL:  The coordinator has not answered since /s,
	'with SQLSTATE 55000, saying why');
is($servers[1]->safe_psql('postgres', 'SELECT lease_state, worker_id IS NULL FROM snowflake_stats'),
	'expired|t', 'snowflake_stats shows the lease expired and no worker id');

$coordinator->start;
$servers[1]->poll_query_until('postgres',
	q{SELECT lease_state = 'held' FROM snowflake_stats}) or die 'no lease after the coordinator came back';
my $recovered = $servers[1]->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok($recovered > 0, 'with the coordinator back, calls recover without a restart');

# A lease client that hangs (stopped alone): the lease lapses on this
# server's monotonic clock, and calls refuse, though the wall clock is still
# below the horizon (a mark interval of 3 s puts the horizon 5 s ahead).
$servers[3]->safe_psql('postgres',
	'ALTER SYSTEM SET snowflake.mark_interval_ms = 3000; SELECT pg_reload_conf()');
$servers[3]->poll_query_until('postgres',
	q{SELECT extract(epoch FROM lease_horizon - clock_timestamp()) > 4 FROM snowflake_stats})
  or die 'the horizon did not move 5 s ahead';
my $client = $servers[3]->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake lease client'});
kill 'STOP', $client;
usleep(2_500_000);
like(psql_stderr($servers[3], 'SELECT snowflake_nextval()'),
	qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: the lease of worker id $workers[3] expired at /,
	'with the lease client hung, calls refuse once the lease lapses');
kill 'CONT', $client;
$servers[3]->poll_query_until('postgres', q{SELECT lease_state = 'held' FROM snowflake_stats})
  or die 'no lease after the client came back';
ok($servers[3]->safe_psql('postgres', 'SELECT snowflake_nextval()') > 0,
	'and issue again once it renews');

# the lease traffic: a handful of small transactions per TTL
my $requests = $servers[2]->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats');
sleep(2 * $ttl);
my $per_ttl = ($servers[2]->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats') - $requests) / 2;
cmp_ok($per_ttl, '<=', 4, "lease traffic: $per_ttl requests per TTL");

$_->stop for @servers;
$coordinator->stop;
done_testing();
