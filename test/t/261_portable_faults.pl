# The plain-SQL edition (sql/portable/snowflake.sql) under faults, on
# servers run from a copy of the installation that lacks the C edition:
# - the clock stepped back 2 ms at a time (libfaketime), 40 times, while a
#   client streams ids: every step waited out, no error, the ids
#   increasing; stepped back 5 s: refused (58000); forward again: ids
#   again, above the others;
# - the postmaster and every backend killed with SIGKILL while a client
#   streams ids: after the restart, ids are above every id it received
#   (the sequence's WAL brings the state back only to its last flushed
#   record, below the last ids; the call's tick, past them, moves it on);
# - a streaming standby issues no id (25006) and decodes them; promoted
#   once its primary is stopped, it issues ids above every id the primary
#   issued.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SnowflakeTest;

my $script = "$FindBin::RealBin/../../sql/portable/snowflake.sql";
my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset_261";

$ENV{PATH} = install_without_snowflake() . ":$ENV{PATH}";

# Timeouts misbehave while the offset changes (see SnowflakeTest.pm): keep
# them off.
my $node = PostgreSQL::Test::Cluster->new('portable_faults');
$node->init(utf8_init(allows_streaming => 1));
$node->append_conf('postgresql.conf', "jit = off\nstatement_timeout = 0\nlock_timeout = 0\nrestart_after_crash = on\n");
start_with_fake_clock($node, $offset_file);
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-v', 'schema=sf', '-f', $script ], 'the plain-SQL edition installs');
$node->psql('postgres', q{LOAD 'snowflake'}, stderr => \my $load_err);
like($load_err, qr/could not access file "snowflake"/, 'the server has no C library to load');
$node->safe_psql('postgres', 'SELECT sf.snowflake_set_worker_id(5)');

# Stream ids of the SQL edition into $file until killed or done, errors
# into $$stderr; returns the harness once $bytes have arrived.
sub stream_portable
{
	my ($file, $bytes, $count, $stderr) = @_;
	my $client = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
		  "COPY (SELECT sf.snowflake_nextval() FROM (SELECT generate_series(1, $count)) s) TO STDOUT" ],
		'>', $file, '2>', $stderr);
	my $deadline = time() + 60;
	usleep(20_000) while (!-e $file || -s $file < $bytes) && time() < $deadline;
	return $client;
}

# 40 steps of 2 ms back, 25 ms apart, while a client draws: each one
# within the 5 ms the edition waits out.
my $stepped = "$PostgreSQL::Test::Utils::tmp_check/stepped.out";
my $stream_err = '';
my $client = stream_portable($stepped, 1000, 2_000_000_000, \$stream_err);
for my $k (1 .. 40)
{
	step_clock($offset_file, sprintf('-%.3fs', 0.002 * $k));
	usleep(25_000);
}
my $after_steps = -s $stepped;
usleep(500_000);
ok(-s $stepped > $after_steps, 'the client went on drawing through 40 steps back of 2 ms');
$client->kill_kill;
is($stream_err, '', 'without an error');
my ($count, $largest, $increasing) = stream_largest($stepped);
ok($increasing, "its $count ids increase");

my $last = $node->safe_psql('postgres', 'SELECT sf.snowflake_nextval()');
step_clock($offset_file, '-5.080s');
like(psql_stderr($node, 'SELECT sf.snowflake_nextval()'), qr/ERROR:  58000: clock moved backwards by [1-9]\d{3} ms/,
	'a step back of 5 s is refused (58000)');
step_clock($offset_file, '+0s');
is_above($node, $node->safe_psql('postgres', 'SELECT sf.snowflake_nextval()'), $last,
	'forward again, ids come again, above the others');

# A crash while a client streams ids, on the real clock.
$node->stop;
$node->start;
my $received = "$PostgreSQL::Test::Utils::tmp_check/crash.out";
$client = stream_portable($received, 4_000_000, 2_000_000_000, \$stream_err);
ok(-s $received >= 4_000_000, 'the client received ids');
kill_server($node);
$client->finish;
($count, $largest, $increasing) = stream_largest($received);
ok($increasing, "the $count ids received before the crash increase");
$node->start;
my $after = $node->safe_psql('postgres',
	qq{SELECT min(id) > ${largest}::int8, count(*) FROM (SELECT sf.snowflake_nextval() AS id FROM generate_series(1, 100000)) s});
is($after, 't|100000', 'after the restart, 100,000 ids, all above every id received before the crash');

# A standby: no id; promoted once the primary has stopped, ids above the
# primary's.
$node->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT sf.snowflake_nextval(), n int)');
$node->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 1000)');
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('portable_standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', 'INSERT INTO t (n) SELECT generate_series(1, 1000)');
$node->wait_for_catchup($standby);
like(psql_stderr($standby, 'SELECT sf.snowflake_nextval()'),
	qr/ERROR:  25006: cannot execute nextval\(\) in a read-only transaction/,
	'the standby issues no id (25006)');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t, sf.snowflake_decode(t.id) d WHERE d.worker_id = 5'),
	'2000', 'and decodes the primary\'s ids');
my $primary_max = $node->safe_psql('postgres', 'SELECT greatest(max(id), sf.snowflake_nextval()) FROM t');
$node->stop;
$standby->promote;
is( $standby->safe_psql('postgres',
		qq{SELECT min(id) > ${primary_max}::int8, count(*) FROM (SELECT sf.snowflake_nextval() AS id FROM generate_series(1, 1000)) s}),
	't|1000', 'promoted, it issues ids above every id of its stopped primary');

$standby->stop;
done_testing();
