# The root key from "snowflake.root_key_command": run once per start, in the
# postmaster (not per connection, not again after a crash); its output in
# no log line; a command that fails, prints garbage, prints too much or is
# not set leaves the server starting and ids working, and makes the
# functions that need the key refuse (F0000) saying why; without preload,
# they refuse and say to preload.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $dir = PostgreSQL::Test::Utils::tempdir;
my $key = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
my $other = join('', map { sprintf('%02x', int(rand(256))) } 1 .. 32);
my ($key_file, $other_file, $runs) = ("$dir/root.key", "$dir/other.key", "$dir/runs");
PostgreSQL::Test::Utils::append_to_file($key_file, "$key\n");
PostgreSQL::Test::Utils::append_to_file($other_file, "  \t$other\n\n");
chmod(0600, $key_file, $other_file);

# A command that counts its runs, then prints the file's key
PostgreSQL::Test::Utils::append_to_file("$dir/print-key", "#!/bin/sh\necho run >> $runs\nexec cat \"\$1\"\n");
chmod(0700, "$dir/print-key");
sub command_for
{
	my ($file) = @_;
	return "$dir/print-key $file";
}

# Every statement logged, at a debug level, so that a leak would show
my $node = snowflake_node('rootkey', "log_statement = 'all'\nlog_min_messages = debug2\n"
	  . "restart_after_crash = on\nsnowflake.root_key_command = '" . command_for($key_file) . "'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN; CREATE ROLE mon LOGIN IN ROLE pg_monitor');

# The check value, over many connections, a parallel query and a crash
my $check = $node->safe_psql('postgres', 'SELECT snowflake_root_key_check()');
like($check, qr/^[0-9A-F]{6}$/, 'the root key has a check value');
for (1 .. 5)
{
	is($node->safe_psql('postgres', 'SELECT snowflake_root_key_check()'), $check,
		'each new connection has the same root key');
}
is( $node->safe_psql('postgres', q{
	SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
	SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;
	CREATE TABLE g AS SELECT generate_series(1, 100000) AS n; ANALYZE g;
	SELECT count(DISTINCT c) || ' ' || min(c) FROM (SELECT n, snowflake_root_key_check() AS c FROM g) s}),
	"1 $check", 'parallel workers inherit it too');
my $victim = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
kill 'KILL', $victim;
$node->poll_query_until('postgres',
	"SELECT pid <> $victim FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
  or die 'no restart after the crash';
is($node->safe_psql('postgres', 'SELECT snowflake_root_key_check()'), $check,
	'after a crash of a backend, the server still has it');
is(slurp_file($runs), "run\n", 'the command ran once, in the postmaster, for all of that');

# Who may see it: neither the function nor the command for other roles
for my $role ('app', 'mon')
{
	my ($ret, $out, $err) = $node->psql('postgres', "SET ROLE $role; SELECT snowflake_root_key_check()");
	like($err, qr/ERROR:  permission denied for function snowflake_root_key_check/,
		"$role may not call snowflake_root_key_check()");
}
my ($ret, $out, $err) = $node->psql('postgres', 'SET ROLE app; SHOW snowflake.root_key_command');
like($err, qr/ERROR:  (must be superuser|permission denied)/, 'a plain role cannot read the command');

# Another root key, another check value; the same key, printed with
# blanks around, the same value as another server holding it
$node->append_conf('postgresql.conf', "snowflake.root_key_command = '" . command_for($other_file) . "'\n");
$node->restart;
my $other_check = $node->safe_psql('postgres', 'SELECT snowflake_root_key_check()');
isnt($other_check, $check, 'another root key has another check value');
my $twin = snowflake_node('rootkey_twin', "snowflake.root_key_command = 'printf \"%s\" $other'\n");
$twin->start;
$twin->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is($twin->safe_psql('postgres', 'SELECT snowflake_root_key_check()'), $other_check,
	'two servers with the same root key show the same check value');
$twin->stop;

# Commands that give no key.  Each prints something secret-looking that
# must not reach the log; the server starts, ids work, the check refuses.
my $secret = 'SECRET' . sprintf('%09d', int(rand(1e9)));
my @broken = (
	[ "printf $secret; exit 3", qr/The command failed: child process exited with exit code 3\./ ],
	[ "printf ${secret}" . ('0' x 49),
		qr/The command printed 64 characters, not all of them hexadecimal digits\./ ],
	[ "echo " . substr($key, 0, 63), qr/The command printed 63 characters besides blanks, not 64 hexadecimal digits\./ ],
	[ "echo $key$key", qr/The command printed 128 characters besides blanks, not 64 hexadecimal digits\./ ],
	[ 'yes 0123456789abcdef', qr/The command printed more than 256 bytes\./ ],
	[ "$dir/no-such-program", qr/The command failed: command not found\./ ]);
for my $case (@broken)
{
	my ($command, $problem) = @$case;
	(my $conf = $command) =~ s/'/''/g;
	$node->append_conf('postgresql.conf', "snowflake.root_key_command = '$conf'\n");
	my $offset = -s $node->logfile;
	$node->restart;
	my $log = substr(slurp_file($node->logfile), $offset);
	like($log, qr/WARNING:  could not read the root key from "snowflake.root_key_command"\n.*DETAIL:  $problem/,
		"\"$command\": the log says what went wrong");
	like(draw_max($node, 10), qr/^\d+$/, "\"$command\": the server started and makes ids");
	like(psql_stderr($node, 'SELECT snowflake_root_key_check()'),
		qr/ERROR:  F0000: no root key: "snowflake.root_key_command" failed when the server started\nDETAIL:  $problem\nHINT:  Fix the command, then restart the server\./,
		"\"$command\": the check refuses, saying why");
}

# Not set
$node->append_conf('postgresql.conf', "snowflake.root_key_command = ''\n");
$node->restart;
like(psql_stderr($node, 'SELECT snowflake_root_key_check()'),
	qr/ERROR:  F0000: no root key: "snowflake.root_key_command" is not set\nHINT:  Set it to a command/,
	'without a command, the check refuses and says to set one');

# The previous root key's command (a root rotation) fails: logged as such;
# the root key itself is unaffected
$node->append_conf('postgresql.conf', "snowflake.root_key_command = '" . command_for($key_file) . "'\n"
	  . "snowflake.previous_root_key_command = 'exit 4'\n");
my $offset = -s $node->logfile;
$node->restart;
like(substr(slurp_file($node->logfile), $offset),
	qr/WARNING:  could not read the previous root key from "snowflake.previous_root_key_command"\n.*DETAIL:  The command failed: child process exited with exit code 4\./,
	'a failing command of the previous root key is logged');
is($node->safe_psql('postgres', 'SELECT snowflake_root_key_check()'), $check,
	'and the root key is there all the same');
$node->append_conf('postgresql.conf', "snowflake.previous_root_key_command = ''\n");

# No trace of a key, or of the secret-looking output, in the log
my $log = slurp_file($node->logfile);
unlike($log, qr/$key|$other/i, 'no root key in the server log');
unlike($log, qr/$secret|0123456789abcdef0123/, "no command's output in the server log");
$node->stop;

# Without preload, nothing ran the command: the check says to preload
my $plain = PostgreSQL::Test::Cluster->new('rootkey_plain');
$plain->init(utf8_init());
$plain->append_conf('postgresql.conf', "snowflake.root_key_command = '" . command_for($key_file) . "'\n");
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION snowflake');
like(psql_stderr($plain, 'SELECT snowflake_root_key_check()'),
	qr/ERROR:  F0000: no root key: snowflake must be loaded via "shared_preload_libraries"/,
	'without preload, the check refuses and says to preload');
is(slurp_file($runs), "run\nrun\nrun\n", 'and the command never ran there');
$plain->stop;

done_testing();
