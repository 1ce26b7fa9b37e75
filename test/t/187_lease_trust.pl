# Leases that no caller can steal and no answer can corrupt.  The fleet's
# own role, with its password, attacks a lease that two issuing servers
# compete for: releases and renewals with guessed tokens, in a loop while
# both draw ids (with 0.2.0's generations instead of tokens, releasing the
# live lease let the other server claim it, and both issued the same ids).  Nothing it does frees the lease or learns anything,
# and no id is issued twice.  Then: a coordinator whose answers lie, and one
# whose search_path is redirected; the coordinator frozen in the middle of a
# renewal and woken; a lease row locked for 25 s; and what a pg_monitor
# role of an issuing server can read.
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

# The coordinator's fleet role logs in with a password, kept in a password
# file the issuing servers' conninfo names.
my $coordinator = lease_coordinator('coordinator');
$coordinator->safe_psql('postgres', q{
	SET password_encryption = 'scram-sha-256';	-- 13 stores md5 by default
	ALTER ROLE fleet PASSWORD 'fleet-secret';
	CREATE TABLE attack_log (call text, succeeded boolean, learned boolean);
	GRANT INSERT ON attack_log TO fleet;});
require_password($coordinator, 'fleet');
my $pgpass = "$dir/fleet.pgpass";
write_passfile($pgpass, '*:*:*:fleet:fleet-secret');

sub issuing_server
{
	my ($name, $conf) = @_;
	my $node = lease_node($name, $coordinator,
		"snowflake.lease_conninfo = 'host=" . $coordinator->host . ' port=' . $coordinator->port
		  . " dbname=postgres user=fleet passfile=$pgpass'\n" . ($conf // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE ids (id bigint)');
	return $node;
}

# 1. Two servers, one worker id between them: a holds it, b waits for it.
my $a = issuing_server('a', "snowflake.lease_worker_ids = '5'\n");
is(wait_for_lease($a), 5, 'server a leases worker id 5 with the fleet role and its password file');
my $b = issuing_server('b', "snowflake.lease_worker_ids = '5'\n");
$b->poll_query_until('postgres', q{SELECT lease_state = 'no free worker id' FROM snowflake_stats})
  or die 'server b does not wait for worker id 5';

# Both draw ids for 7 s (b's calls fail while a holds the lease); the fleet
# role attacks for 5 s of them, each attempt its own transaction.
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
INSERT INTO attack_log SELECT 'release', snowflake_lease_release(5, ARRAY[md5(random()::text)], 0), false;
INSERT INTO attack_log SELECT 'renew', renewed, horizon_ms IS NOT NULL OR expires_at IS NOT NULL FROM snowflake_lease_renew(5, ARRAY[md5(random()::text)], sha256(md5(random()::text)::bytea), 500, 0);
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
	'>', \my $attack_out, '2>', \$attack_err,
	init => sub { $ENV{PGPASSFILE} = $pgpass });
ok($attack->finish, 'the fleet role attacked for 5 s') or diag($attack_err);
$_->finish for @draws;

my ($attempts, $succeeded, $learned) = split /\|/, $coordinator->safe_psql('postgres',
	q{SELECT count(*), count(*) FILTER (WHERE succeeded), count(*) FILTER (WHERE learned) FROM attack_log});
cmp_ok($attempts, '>', 50, "it made $attempts attempts");
is($succeeded, '0', 'not one release or renewal of worker id 5 succeeded');
is($learned, '0', 'and no refused renewal told it a horizon or an expiry');
my @files = map { "$dir/attack." . $_->name . '.ids' } ($a, $b);
$a->safe_psql('postgres', "COPY ids TO '$files[0]'");
$b->safe_psql('postgres', "COPY ids TO '$files[1]'");
cmp_ok($a->safe_psql('postgres', 'SELECT count(*) FROM ids'), '>', 10000, 'server a issued ids all along');
is(repeated_ids(@files), 0, 'no id twice between the two servers');
is($coordinator->safe_psql('postgres', q{SELECT generation, holder ~ (':' || } . $a->port
		  . q{ || ' ') FROM snowflake_lease WHERE node = 5}),
	'1|t', 'the lease is still the first one, server a\'s');

# guessed tokens, by hand: refused, and nothing learned
{
	local $ENV{PGPASSFILE} = $pgpass;
	my $as_fleet = sub {
		my ($sql) = @_;
		my $out = `psql -X -A -t -h @{[ $coordinator->host ]} -p @{[ $coordinator->port ]} -U fleet -d postgres -c "$sql" 2>&1`;
		chomp $out;
		return $out;
	};
	is($as_fleet->(q{SELECT renewed, horizon_ms IS NULL, expires_at IS NULL FROM snowflake_lease_renew(5, ARRAY[repeat('0', 32)], sha256('x'), 60000, 0)}),
		'f|t|t', 'a guessed token renews nothing and learns nothing');
	is($as_fleet->(q{SELECT snowflake_lease_release(5, ARRAY[md5('guess')], 0)}),
		'f', 'nor releases anything');
	is($as_fleet->(q{SELECT count(*) FROM snowflake_lease_claim('attacker', ARRAY[md5('guess')], sha256('y'), '{5}', '{5}', 5, 500, (extract(epoch FROM now()) * 1000)::bigint)}),
		'0', 'nor claims a worker id that is held');
	like($as_fleet->(q{SELECT count(*) FROM snowflake_lease}),
		qr/permission denied for table snowflake_lease/, 'and the fleet role cannot read the table');
}
$b->stop;

# 2. A coordinator whose answers lie: a worker id beyond the layout, a
# generation of 0, a horizon short of the one asked for.  Each is refused:
# no id is issued, and the log names the coordinator and the lie.
$coordinator->safe_psql('postgres', q{
	CREATE DATABASE liar;});
$coordinator->safe_psql('liar', q{
	CREATE EXTENSION snowflake;
	GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint) TO fleet;});
my $liar = snowflake_node('liar_client',
	"snowflake.lease_conninfo = 'host=" . $coordinator->host . ' port=' . $coordinator->port
	  . " dbname=liar user=fleet passfile=$pgpass'\nsnowflake.lease_ttl_ms = 2000\n");
my %lies = (
	'a worker id beyond the layout' => [ '5000, 1::bigint, 0::bigint, wanted_horizon_ms',
		qr/worker id "5000" is not among 0-1023 \("snowflake.lease_worker_ids"\) or beyond layout "snowflake"/ ],
	'generation 0' => [ '3, 0::bigint, 0::bigint, wanted_horizon_ms',
		qr/generation "0" is not a positive number/ ],
	'a horizon short of the one asked for' => [ '3, 1::bigint, 0::bigint, wanted_horizon_ms - 1',
		qr/horizon "\d+" is short of the \d+ asked for/ ],);
my $started = 0;
for my $lie (sort keys %lies)
{
	my ($row, $message) = @{ $lies{$lie} };
	$coordinator->safe_psql('liar', qq{
		CREATE OR REPLACE FUNCTION snowflake_lease_claim(
			holder text, proofs text[], next_hash bytea, lows integer[], highs integer[], prefer integer,
			ttl_ms integer, wanted_horizon_ms bigint,
			OUT node integer, OUT generation bigint, OUT previous_horizon_ms bigint,
			OUT horizon_ms bigint, OUT expires_at timestamptz)
		RETURNS SETOF record LANGUAGE sql
		AS \$\$ SELECT $row, now() + interval '1 min' \$\$;});
	if (!$started)
	{
		$liar->start;
		$liar->safe_psql('postgres', 'CREATE EXTENSION snowflake');
		$started = 1;
	}
	my $deadline = time() + 30;
	usleep(100_000) until slurp_file($liar->logfile) =~ $message || time() > $deadline;
	like(slurp_file($liar->logfile),
		qr/LOG:  the snowflake lease coordinator .*:\d+\/liar gave a wrong answer to a claim: $message/,
		"$lie: refused, and the log names the coordinator and the lie");
	like(psql_stderr($liar, 'SELECT snowflake_nextval()'),
		qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: the lease coordinator refused the claim/,
		"$lie: the calls issue nothing, and say why");
	is($liar->safe_psql('postgres', 'SELECT lease_state, worker_id IS NULL, ids_issued FROM snowflake_stats'),
		'refused|t|0', "$lie: no worker id, no id issued");
	# asked again and again (every 200 ms at this TTL), it is logged once
	my $asked = $liar->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats');
	$deadline = time() + 30;
	usleep(100_000)
	  until $liar->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats') >= $asked + 3
	  || time() > $deadline;
	my $logged = () = slurp_file($liar->logfile) =~ /gave a wrong answer to a claim: $message/g;
	is($logged, 1, "$lie: logged once, though refused at every one of 3 more claims");
}
$liar->stop;

# 3. A search_path on the coordinator that puts a look-alike first does not
# redirect the calls: they name the extension's schema.
$coordinator->safe_psql('postgres', q{
	CREATE SCHEMA evil;
	GRANT USAGE ON SCHEMA evil TO fleet;
	CREATE FUNCTION evil.snowflake_lease_claim(
		holder text, proofs text[], next_hash bytea, lows integer[], highs integer[], prefer integer,
		ttl_ms integer, wanted_horizon_ms bigint,
		OUT node integer, OUT generation bigint, OUT previous_horizon_ms bigint,
		OUT horizon_ms bigint, OUT expires_at timestamptz)
	RETURNS SETOF record LANGUAGE sql
	AS $$ SELECT 6, 1::bigint, 0::bigint, wanted_horizon_ms + 1, now() + interval '1 min' $$;
	GRANT EXECUTE ON FUNCTION evil.snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint) TO fleet;
	ALTER ROLE fleet SET search_path = evil, public;});
my $c = issuing_server('c', "snowflake.lease_worker_ids = '6-7'\nsnowflake.lease_ttl_ms = 6000\n");
is(wait_for_lease($c), 6, 'with search_path redirected, a server still leases a worker id');
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM snowflake_lease WHERE node = 6 AND generation = 1}),
	'1', 'from the real lease table, not the look-alike');
$coordinator->safe_psql('postgres', q{ALTER ROLE fleet RESET search_path; DROP SCHEMA evil CASCADE;});

# 3b. Look-alikes that a role with CREATE on the extension's schema plants
# beside the lease functions and their internal check, taking text at each
# position whose real type is not text, and at all of them: none runs,
# through a server's claim, its renewals and the release of a clean stop
# (0.3.0's release passed untyped NULLs to the check, and a look-alike
# took it, as the extension's owner).
$coordinator->safe_psql('postgres', q{
	CREATE ROLE planter;
	GRANT CREATE ON SCHEMA public TO planter;
	SET ROLE planter;
	CREATE TABLE public.plant_ran (what text, as_role name);
	GRANT INSERT ON public.plant_ran TO PUBLIC;
	DO $plant$
	DECLARE
		p record;
		i integer;
		types text[];
	BEGIN
		FOR p IN SELECT f.proname, f.proretset, f.proargtypes::regtype[]::text[] AS types,
						pg_get_function_result(f.oid) AS result
				   FROM pg_proc f
				  WHERE f.pronamespace = 'public'::regnamespace
				    AND f.proname IN ('snowflake_lease_claim', 'snowflake_lease_renew',
									  'snowflake_lease_release', '_snowflake_lease_check',
									  '_snowflake_lease_bounds', '_snowflake_lease_proofs',
									  '_snowflake_lease_take', '_snowflake_lease_extend',
									  '_snowflake_lease_end')
		LOOP
			FOR i IN 0 .. cardinality(p.types) LOOP
				CONTINUE WHEN i > 0 AND p.types[i] = 'text';
				types := (SELECT array_agg(CASE WHEN i = 0 OR n = i THEN 'text' ELSE t END ORDER BY n)
							FROM unnest(p.types) WITH ORDINALITY AS a(t, n));
				CONTINUE WHEN to_regprocedure(format('public.%I(%s)', p.proname,
													 array_to_string(types, ','))) IS NOT NULL;
				EXECUTE format($f$
					CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS $body$
					BEGIN
						INSERT INTO public.plant_ran VALUES (%L, current_user);
						RETURN%s;
					END $body$$f$,
					p.proname, array_to_string(types, ', '), p.result,
					format('%s(%s)', p.proname, array_to_string(types, ',')),
					CASE WHEN p.proretset OR p.result = 'void' THEN '' ELSE ' NULL' END);
			END LOOP;
		END LOOP;
	END
	$plant$;});
my $plants = $coordinator->safe_psql('postgres',
	q{SELECT count(*) FROM pg_proc WHERE proowner = 'planter'::regrole AND proname LIKE '%lease%'});
ok($plants >= 4, "$plants look-alikes of the lease functions planted");
my $e = issuing_server('e', "snowflake.lease_worker_ids = '9'\n");
is(wait_for_lease($e), 9, 'with look-alikes planted, a server leases its worker id');
# (three renewals at least: a TTL of 2 s, renewed three times per TTL)
$coordinator->poll_query_until('postgres',
	q{SELECT renewed_at > claimed_at + interval '1.5 s' FROM snowflake_lease WHERE node = 9})
  or die 'server e did not renew';
$e->stop;
is($coordinator->safe_psql('postgres', q{SELECT released_at IS NOT NULL FROM snowflake_lease WHERE node = 9}),
	't', 'its clean stop released the lease');
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM public.plant_ran}),
	'0', 'no look-alike ran: not in the claim, the renewals or the release');

# 4. The coordinator frozen (a paused VM) in the middle of server c's
# renewals, for longer than its TTL: c's lease lapses, its renewal is
# given up on, and commits late, once the coordinator wakes.  c's next
# claim, offering the secrets of both, gets its worker id back at once, instead of
# waiting a TTL for a lease that only it could renew.
my $before_freeze = draw_max($c, 1000);
my $frozen = freeze_server($coordinator);
sleep(8);
like(psql_stderr($c, 'SELECT snowflake_nextval()'), qr/ERROR:  55000: .* has no worker id/,
	'with the coordinator frozen beyond the TTL, calls stop');
thaw_server($frozen);
my $woke = time();
# (c may lease 6 or 7: only its secret gets it 6, which the late
# renewal kept alive, rather than the free 7)
is(wait_for_lease($c), 6, 'woken, the coordinator gives server c its worker id back');
my $back_after = time() - $woke;
cmp_ok($back_after, '<', 6, sprintf('within %.1f s, before a TTL (6 s) could have freed it', $back_after));
is_above($c, draw_max($c, 1), $before_freeze, 'and its ids are above those before the freeze');

# 5. A lease row locked on the coordinator for 25 s: the holder cannot
# renew, its lease runs out, and every call of the lease clients gives up
# on the lock at its lock_timeout.  The fleet role's backends stay at one
# per issuing server (three: a, c, and d below) all along.
my $d = issuing_server('d', "snowflake.lease_worker_ids = '8'\n");
wait_for_lease($d);
my $locker = $coordinator->background_psql('postgres');
$locker->query_safe('BEGIN; SELECT node FROM snowflake_lease FOR UPDATE;');
my $most = 0;
my $locked_until = time() + 25;
while (time() < $locked_until)
{
	my $n = $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'fleet'});
	$most = $n if $n > $most;
	usleep(250_000);
}
cmp_ok($most, '<=', 3, "with the lease rows locked for 25 s, at most $most fleet backends (three servers)");
like(psql_stderr($a, 'SELECT snowflake_nextval()'), qr/ERROR:  55000: .* has no worker id/,
	'and the holder\'s lease ran out');
$locker->query_safe('COMMIT');
$locker->quit;
is(wait_for_lease($a), 5, 'once the lock is gone, the holder leases its worker id again');
ok($a->safe_psql('postgres', 'SELECT snowflake_nextval()') > 0, 'and issues ids');
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM snowflake_lease WHERE node = 5 AND generation <= 3}),
	'1', 'no pile of stale claims committed behind the lock');

# 6. What a pg_monitor role of an issuing server reads: the connection
# string, which holds no password (one is refused at start-up: TAP 190),
# and not the password file it names.
$a->safe_psql('postgres', 'CREATE ROLE watcher LOGIN IN ROLE pg_monitor');
my $seen = $a->safe_psql('postgres', q{
	SELECT current_setting('snowflake.lease_conninfo')
	UNION ALL SELECT setting FROM pg_settings WHERE name = 'snowflake.lease_conninfo'
	UNION ALL SELECT lease_coordinator FROM snowflake_stats}, extra_params => [ '-U', 'watcher' ]);
like($seen, qr/passfile=/, 'a pg_monitor role reads the connection string');
unlike($seen, qr/fleet-secret/, 'but no password in it');
like(psql_stderr($a, "SET ROLE watcher; SELECT pg_read_file('$pgpass')"),
	qr/ERROR:  42501: permission denied for function pg_read_file/, 'nor the password file');
{
	my ($rc, $out, $err) = $a->psql('postgres',
		q{SET ROLE watcher; SELECT name, setting FROM pg_file_settings WHERE name LIKE 'snowflake.%'});
	unlike("$out$err", qr/fleet-secret|sesame/, 'nor a password in pg_file_settings');
}
# nor can a superuser put one where they could: ALTER SYSTEM refuses it,
# and says so without repeating it
my $refusal = psql_stderr($a,
	q{ALTER SYSTEM SET snowflake.lease_conninfo = 'host=/tmp dbname=postgres user=fleet password=sesame'});
like($refusal,
	qr/ERROR:  22023: invalid value for parameter "snowflake.lease_conninfo"\nDETAIL:  It holds a password, which members of pg_read_all_settings, pg_monitor among them, could read\.\nHINT:  Put the password in a password file/,
	'ALTER SYSTEM refuses a password in the connection string');
unlike($refusal, qr/sesame/, 'without repeating it');
unlike(slurp_file($a->data_dir . '/postgresql.auto.conf'), qr/sesame/, 'and writes nothing');

$_->stop for ($a, $c, $d);
$coordinator->stop;
done_testing();
