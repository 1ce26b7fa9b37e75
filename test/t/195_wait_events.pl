# Waits are named in pg_stat_activity: on PostgreSQL 17 and later by the
# extension's own wait events (a call waiting out a small clock step back
# shows SnowflakeClockCatchUp; the mark writer at rest shows
# SnowflakeMarkWriterMain); before 17, as "Extension".
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('waits', "snowflake.rollback_tolerance_ms = 5000\n");
my $offset = "$PostgreSQL::Test::Utils::tmp_check/waits.offset";
start_with_fake_clock($node, $offset);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$node->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
my $named = $node->safe_psql('postgres',
	"SELECT current_setting('server_version_num')::int >= 170000") eq 't';

# the clock 3 s back: the next call sleeps until it catches up
step_clock($offset, '-3s');
my ($out, $err) = ('', '');
my $call = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'SELECT snowflake_nextval()' ],
	'>', \$out, '2>', \$err);
my $expected = $named ? 'SnowflakeClockCatchUp' : 'Extension';
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query = 'SELECT snowflake_nextval()'
	   AND wait_event_type = 'Extension' AND wait_event = '$expected'}),
	"a call waiting out a clock step back shows as Extension / $expected");
$call->finish;
like($out, qr/^\s*\d+/m, 'and then issues its id');
step_clock($offset, '+0s');

my $writer = $named ? 'SnowflakeMarkWriterMain' : 'Extension';
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'snowflake mark writer' AND wait_event = '$writer'}),
	"the mark writer at rest shows as $writer");

$node->stop;
done_testing();
