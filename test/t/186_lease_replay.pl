# Lease secrets that are useless once seen.  Two issuing servers compete
# for one worker id through a proxy that captures what they send, as an
# eavesdropper, a pooler's log or a coordinator's statement log would.
# While both draw ids, the fleet's own role replays every secret captured,
# in a loop, to release and renew the lease (with one secret for the
# holder's life, as 0.3.0 had, a release freed the live lease and both
# servers issued the same ids).  Then the answer to one renewal is lost on
# its way back, after the renewal committed: the holder, unsure whether it
# did, offers its last secrets, and keeps its lease.  Last, a coordinator
# still on 0.3.0, then updated.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use SnowflakeTest;

my $dir = $PostgreSQL::Test::Utils::tmp_check;
my $capture = "$dir/capture";
my $control = "$dir/control";

my $coordinator = lease_coordinator('coordinator');
$coordinator->safe_psql('postgres', q{
	CREATE TABLE stolen (secret text PRIMARY KEY);
	GRANT SELECT ON stolen TO fleet;
	CREATE TABLE attack_log (call text, succeeded boolean);
	GRANT INSERT ON attack_log TO fleet;});
my ($port, $proxy) = capture_proxy($coordinator, $capture, $control);

sub issuing_server
{
	my ($name) = @_;
	my $node = snowflake_node($name,
		"snowflake.lease_conninfo = 'host=127.0.0.1 port=$port dbname=postgres user=fleet'\n"
		  . "snowflake.lease_ttl_ms = 2000\nsnowflake.lease_worker_ids = '5'\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE ids (id bigint)');
	return $node;
}

# The secrets in what the servers sent: 32 hexadecimal digits in an array
# of the proofs a call offers.
sub captured_secrets
{
	my %secrets;
	my $bytes = slurp_file($capture);

	while ($bytes =~ /\{([0-9a-f]{32}(?:,[0-9a-f]{32})*)\}/g)
	{
		$secrets{$_} = 1 for split /,/, $1;
	}
	return keys %secrets;
}

# 1. a holds worker id 5, b waits for it.
my $a = issuing_server('a');
is(wait_for_lease($a), 5, 'server a leases worker id 5 through the proxy');
my $b = issuing_server('b');
$b->poll_query_until('postgres', q{SELECT lease_state = 'no free worker id' FROM snowflake_stats})
  or die 'server b does not wait for worker id 5';

# Both draw ids for 7 s; for 5 s of them the fleet role replays every
# secret captured so far (refreshed every 100 ms), each attempt its own
# transaction.
my $draw_script = "$dir/draw.sql";
{
	open(my $fh, '>', $draw_script) or die $!;
	print $fh q{DO $$ BEGIN INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 500);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL; END $$;}, "\n";
	close($fh);
}
my $attack_script = "$dir/attack.sql";
{
	open(my $fh, '>', $attack_script) or die $!;
	print $fh <<'SQL';
INSERT INTO attack_log SELECT 'release', snowflake_lease_release(5, ARRAY[s.secret], 0) FROM stolen s;
INSERT INTO attack_log SELECT 'renew', r.renewed FROM stolen s, snowflake_lease_renew(5, ARRAY[s.secret], sha256(convert_to(s.secret || random(), 'UTF8')), 2000, 0) r;
SQL
	close($fh);
}
my @draws = map {
	IPC::Run::start([ 'pgbench', '-n', '-f', $draw_script, '-c', '1', '-T', '7', '-d', $_->connstr('postgres') ],
		'>', \my $out, '2>', \my $err)
} ($a, $b);
usleep(1_000_000);
my $attack_err = '';
my $attack = IPC::Run::start(
	[
		'pgbench', '-n', '-f', $attack_script, '-c', '2', '-T', '5',
		'-h', $coordinator->host, '-p', $coordinator->port, '-U', 'fleet', 'postgres'
	],
	'>', \my $attack_out, '2>', \$attack_err);
my $attack_end = time() + 5.5;
while (time() < $attack_end)
{
	my @secrets = captured_secrets();
	$coordinator->safe_psql('postgres',
		'INSERT INTO stolen VALUES ' . join(',', map { "('$_')" } @secrets) . ' ON CONFLICT DO NOTHING')
	  if @secrets;
	usleep(100_000);
}
ok($attack->finish, 'the fleet role replayed the captured secrets for 5 s') or diag($attack_err);
$_->finish for @draws;

my $stolen = $coordinator->safe_psql('postgres', 'SELECT count(*) FROM stolen');
cmp_ok($stolen, '>=', 8, "$stolen secrets captured in clear, one a renewal (three per TTL of 2 s)");
my ($attempts, $succeeded) = split /\|/, $coordinator->safe_psql('postgres',
	q{SELECT count(*), count(*) FILTER (WHERE succeeded) FROM attack_log});
cmp_ok($attempts, '>', 100, "$attempts replays of them");
is($succeeded, '0', 'not one released or renewed the lease');
my @files = map { "$dir/replay." . $_->name . '.ids' } ($a, $b);
$a->safe_psql('postgres', "COPY ids TO '$files[0]'");
$b->safe_psql('postgres', "COPY ids TO '$files[1]'");
cmp_ok($a->safe_psql('postgres', 'SELECT count(*) FROM ids'), '>', 10000, 'server a issued ids all along');
is(repeated_ids(@files), 0, 'no id twice between the two servers');
is($coordinator->safe_psql('postgres', q{SELECT generation, holder ~ (':' || } . $a->port
		  . q{ || ' ') FROM snowflake_lease WHERE node = 5}),
	'1|t', 'the lease is still the first one, server a\'s');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM stolen s JOIN snowflake_lease l '
		  . q{ON l.token_hash = sha256(decode(s.secret, 'hex'))}),
	'0', 'no captured secret is the one the lease now asks for');

# 2. The answer to one of a's renewals lost on its way back: the renewal
# committed, a gives up on it (at its query timeout, 667 ms), and its next
# session offers the secrets it offered and the one it registered.
my $before = "$dir/lost.before.ids";
my $after = "$dir/lost.after.ids";
my $draw = draw_to_file($a, 20000, $before);
$draw->finish;
my $offset = -s $a->logfile;
{
	open(my $fh, '>', $control) or die $!;
	print $fh "lose renew\n";
	close($fh);
}
my $deadline = time() + 30;
usleep(50_000) until slurp_file($control) =~ /^lost/ || time() > $deadline;
like(slurp_file($control), qr/^lost/, 'the answer to a renewal was dropped');
$deadline = time() + 30;
usleep(100_000)
  until slurp_file($a->logfile, $offset) =~ /the snowflake lease coordinator did not answer/
  || time() > $deadline;
like(slurp_file($a->logfile, $offset), qr/the snowflake lease coordinator did not answer/,
	'server a gave up on it');
# two more renewals after it
my $renewed = $coordinator->safe_psql('postgres', 'SELECT renewed_at FROM snowflake_lease WHERE node = 5');
$coordinator->poll_query_until('postgres',
	"SELECT renewed_at > '$renewed'::timestamptz + interval '0.5 s' FROM snowflake_lease WHERE node = 5")
  or die 'no renewal after the lost answer';
is(wait_for_lease($a), 5, 'server a holds worker id 5');
is($coordinator->safe_psql('postgres', q{SELECT generation, holder ~ (':' || } . $a->port
		  . q{ || ' ') FROM snowflake_lease WHERE node = 5}),
	'1|t', 'still its first lease: renewed, not lost and claimed again');
unlike(slurp_file($a->logfile, $offset), qr/worker id 5 lost/, 'its log tells of no lost lease');
$draw = draw_to_file($a, 20000, $after);
$draw->finish;
is(repeated_ids($before, $after), 0, 'no id issued twice across the lost answer');
is_above($a, $a->safe_psql('postgres', 'SELECT max(id) FROM (SELECT snowflake_nextval() AS id) s'),
	`sort -n $before | tail -1` =~ s/\s+$//r, 'and its ids go on rising');

$b->stop;
$a->stop;

# 3. Against a coordinator still on 0.3.0, which has none of the calls of
# the chain: no lease, and the state and the log say to update the
# coordinator first.  Its update grants the new calls to the fleet's role,
# which had 0.3.0's, and the server leases.
$coordinator->safe_psql('postgres', 'CREATE DATABASE old');
$coordinator->safe_psql('old', q{
	CREATE EXTENSION snowflake VERSION '0.3.0';
	GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
		snowflake_lease_renew(integer, text, integer, bigint),
		snowflake_lease_release(integer, text, bigint) TO fleet;});
my $c = snowflake_node('c',
	"snowflake.lease_conninfo = 'host=" . $coordinator->host . ' port=' . $coordinator->port
	  . " dbname=old user=fleet'
snowflake.lease_ttl_ms = 2000
");
$c->start;
$c->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$c->poll_query_until('postgres', q{SELECT lease_state = 'refused' FROM snowflake_stats})
  or die 'server c is not refused by a 0.3.0 coordinator';
like(psql_stderr($c, 'SELECT snowflake_nextval()'),
	qr/its snowflake extension is older than this server's 0\.4\.0; update it first \(ALTER EXTENSION snowflake UPDATE\)/,
	'against a 0.3.0 coordinator: no lease, and the call says to update the coordinator first');
$coordinator->safe_psql('old', 'ALTER EXTENSION snowflake UPDATE');
ok(wait_for_lease($c) >= 0, 'once it is updated, the server leases with the fleet\'s grants as they were');
$c->stop;

kill 'KILL', $proxy;
waitpid($proxy, 0);
done_testing();
