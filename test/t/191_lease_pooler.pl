# The lease client through a transaction-pooling pgbouncer: 3 issuing
# servers and 61 simulated ones (test/bench/fleet.py, which speaks the
# client's protocol) lease worker ids from one coordinator through
# pgbouncer with a pool of 8 server connections.  Each call is one
# transaction that sets what it needs for itself (SET LOCAL), so whichever
# pooled backend runs it:
# - every server holds a lease, and the coordinator never has more than 8
#   backends of the fleet's role (sampled throughout);
# - the coordinator frozen for 3 s, past the 2 s TTL, and thawed: the
#   servers' leases lapse, and they hold leases again;
# - a lease row locked for 25 s: its holder's renewals give up on the lock
#   (the call's own lock_timeout), its lease lapses, and it claims another
#   worker id meanwhile;
# - ids drawn on the servers at each stage, none repeated;
# - the pool's other clients find the default settings in every backend:
#   none of the client's settings stays behind in a pooled session.
# Runs where the clients do (bash test/run installs Debian's pgbouncer and
# python3-psycopg there): the host and trixie in test/matrix.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my ($pgbouncer) = grep { -x $_ } map { "$_/pgbouncer" } split(/:/, $ENV{PATH}), '/usr/sbin';
plan skip_all => 'pgbouncer is not installed (bash test/run installs Debian\'s pgbouncer)'
  unless $pgbouncer;
plan skip_all => 'python3-psycopg is not installed (bash test/run installs it where the clients run)'
  unless system('python3', '-c', 'import psycopg') == 0;

my $pool = 8;
my $simulated = 61;
my $tmp = $PostgreSQL::Test::Utils::tmp_check;

my $coordinator = lease_coordinator('coordinator');

# ---- pgbouncer in front of the coordinator ----------------------------------

my $user = getpwuid($<);
my $bouncer = start_pgbouncer('pgbouncer', $coordinator, $pool, 'fleet', $user);
my $frozen;
my $fleet;

END
{
	my $rc = $?;
	thaw_server($frozen) if $frozen;
	$fleet->kill_kill if $fleet;
	stop_pgbouncer($bouncer);
	$? = $rc;
}

$SIG{$_} = sub { die "stopped by SIG$_[0]\n" } for qw(INT TERM HUP);

my $via = "$bouncer->{via} user=fleet";
is(`psql -X -At -d "$via" -c 'SELECT 1'`, "1\n", 'pgbouncer answers');

# ---- the fleet --------------------------------------------------------------

my $fleet_out = '';
my $fleet_err = '';
$fleet = IPC::Run::start(
	[
		'python3', "$FindBin::RealBin/../bench/fleet.py",
		'--dsn', $via, '--postmaster-pid', $coordinator->{_pid},
		'--clients', $simulated, '--ttl-ms', 2000, '--seconds', 600, '--connect-seconds', 2
	],
	'>', \$fleet_out, '2>', \$fleet_err);

# (the servers' conninfo: pgbouncer's socket, as the fleet's role)
my @servers;
for my $i (1 .. 3)
{
	my $node = snowflake_node("server$i",
		"snowflake.lease_conninfo = '$via'\nsnowflake.lease_ttl_ms = 2000\n"
		  . "snowflake.rollback_tolerance_ms = 10000\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	push @servers, $node;
}
my %worker = map { $_->name => wait_for_lease($_) } @servers;

# the coordinator's backends of the fleet's role, sampled while waiting
my $most = 0;
sub sample
{
	my $n = $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'fleet'});
	$most = $n if $n > $most;
}

# $n ids from $node into a new file, or none if it issues none now
my $drawn = 0;
sub draw
{
	my ($node, $n) = @_;
	my $file = "$tmp/pooler." . $node->name . '.' . ++$drawn . '.out';
	IPC::Run::run(
		[
			'psql', '-X', '-q', '-At', '-d', $node->connstr('postgres'),
			'-c', 'SET statement_timeout = 5000',
			'-c', "SELECT snowflake_nextval() FROM generate_series(1, $n)"
		],
		'>', $file, '2>', \my $stderr);
	return $file;
}

# Wait (sampling) until every server and all the simulated ones hold a lease.
sub wait_for_fleet
{
	my ($what) = @_;
	my $deadline = time() + 60;
	my $live;
	while (time() < $deadline)
	{
		sample();
		$live = $coordinator->safe_psql('postgres',
			q{SELECT count(*) FROM snowflake_lease WHERE expires_at > now()});
		my $held = grep {
			$_->safe_psql('postgres', 'SELECT lease_state FROM snowflake_stats') eq 'held'
		} @servers;
		return 1 if $live == $simulated + @servers && $held == @servers;
		usleep(200_000);
	}
	$fleet->pump_nb;
	diag("$what: $live live leases; the simulated fleet: $fleet_out $fleet_err");
	return 0;
}

ok(wait_for_fleet('start'), "the 3 servers and $simulated simulated ones hold leases through the pool");
my @files = map { draw($_, 20000) } @servers;

# ---- the coordinator frozen past the TTL, and thawed --------------------------

$frozen = freeze_server($coordinator);
push @files, map { draw($_, 2000) } @servers;    # (within their leases, or none)
sleep 3;
thaw_server($frozen);
$frozen = undef;
ok(wait_for_fleet('after the freeze'), 'after the coordinator was frozen 3 s and thawed, every server holds a lease');
push @files, map { draw($_, 20000) } @servers;

# ---- a lease row locked for 25 s ------------------------------------------------

my $locked = $servers[0];
my $node = $locked->safe_psql('postgres', 'SELECT worker_id FROM snowflake_stats');
my $locker = IPC::Run::start(
	[
		'psql', '-X', '-q', '-d', $coordinator->connstr('postgres'), '-c',
		"BEGIN; SELECT node FROM snowflake_lease WHERE node = $node FOR UPDATE; SELECT pg_sleep(25); COMMIT;"
	],
	'>', \my $locker_out, '2>', \my $locker_err);
$coordinator->poll_query_until('postgres', q{
	SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'BEGIN; SELECT node FROM snowflake_lease%'
					AND wait_event = 'PgSleep')})
  or die 'the row lock was not taken';
my $locked_at = time();
my $moved = 0;
while (time() - $locked_at < 20)
{
	sample();
	my $now = $locked->safe_psql('postgres',
		q{SELECT coalesce(worker_id::text, '') || ':' || lease_state FROM snowflake_stats});
	if ($now =~ /^(\d+):held$/ && $1 != $node)
	{
		$moved = $1;
		last;
	}
	usleep(200_000);
}
ok($moved, "with lease row $node locked, its holder claimed another worker id ($moved)")
  or diag($locked->safe_psql('postgres', 'SELECT lease_state, lease_renewed_at FROM snowflake_stats'));
push @files, map { draw($_, 20000) } @servers;
while (time() - $locked_at < 25)
{
	sample();
	usleep(500_000);
}
$locker->finish;
is($locker_err, '', 'the row was locked for 25 s');
ok(wait_for_fleet('after the lock'), 'after the row lock, every server holds a lease');
push @files, map { draw($_, 20000) } @servers;

# ---- what the pool's other clients find -----------------------------------------

# (many connections, each a transaction on whichever backend is free, while
# the fleet keeps them all busy)
my %seen;
for (1 .. 40)
{
	my $settings = `psql -X -At -d "$via" -c "SELECT current_setting('statement_timeout') || ',' || current_setting('lock_timeout') || ',' || current_setting('idle_in_transaction_session_timeout') || ',' || current_setting('search_path') || ',' || pg_backend_pid()"`;
	chomp $settings;
	my ($values, $pid) = $settings =~ /^(.*),(\d+)$/;
	$seen{$pid} = $values if defined $pid;
}
my @changed = grep { $seen{$_} ne '0,0,0,"$user", public' } sort keys %seen;
is(scalar(@changed), 0,
	'no pooled backend keeps a setting of the lease client (' . scalar(keys %seen) . ' backends seen)')
  or diag(join("\n", map { "$_: $seen{$_}" } @changed));

# ---- the fleet ends ---------------------------------------------------------------

# (it runs until told: on a busy machine the stages above take their time)
$fleet->signal('TERM');
$fleet->finish;
$fleet = undef;
my ($report) = $fleet_out =~ /^(\{.*\})$/m;
ok(defined $report, 'the simulated fleet reports') or diag("$fleet_out\n$fleet_err");
note("simulated fleet: " . ($report // ''));
my ($renewals) = ($report // '') =~ /"calls": \{[^}]*"renew": (\d+)/;
cmp_ok($renewals // 0, '>', 1000, 'the simulated servers renewed through the pool');
sample();
cmp_ok($most, '<=', $pool, "the coordinator had at most $pool backends of the fleet ($most)");
cmp_ok($most, '>', 0, 'and some');

is(repeated_ids(@files), 0, 'no id drawn twice across the servers and stages');
my $count = 0;
for my $file (@files)
{
	open(my $fh, '<', $file) or die $!;
	$count++ while <$fh>;
	close($fh);
}
cmp_ok($count, '>=', 3 * 4 * 20000, "ids drawn at each stage ($count)");

done_testing();
