# The clock stepped back across a restart (libfaketime): by less than the
# tolerance the first call waits for the mark, by more it fails with SQLSTATE
# 58000 saying how far behind the clock is, until the clock is forward again.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $offset_file = "$PostgreSQL::Test::Utils::tmp_check/faketime_offset_restart";

my $node = snowflake_node('clock_restart', q{
snowflake.rollback_tolerance_ms = 10000
statement_timeout = 0
lock_timeout = 0
});

start_with_fake_clock($node, $offset_file);
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $before = draw_max($node, 1000);

# Back by 5 s over a clean restart, within the 10 s tolerance: waited out.
# (The restart itself eats into the wait: by 2 s, a restart of 1.5 s on a
# busy machine left a wait under the 0.5 s asserted below.)
$node->stop('fast');
step_clock($offset_file, '-5s');
start_with_fake_clock($node, $offset_file);
my $started = time();
my $first = draw_max($node, 1);
my $elapsed = time() - $started;
is_above($node, $first, $before, 'after a restart 5 s back the first id is above the last before');
cmp_ok($elapsed, '>', 0.5, 'the call waited for the clock to pass the mark');
is($node->safe_psql('postgres', 'SELECT rollbacks_refused FROM snowflake_stats'),
	'0', 'nothing was refused');
$before = draw_max($node, 1000);

# Back by an hour over a restart: the server starts, calls are refused.
$node->stop('fast');
step_clock($offset_file, '-3600s');
start_with_fake_clock($node, $offset_file);
my $stderr = psql_stderr($node, 'SELECT snowflake_nextval()');
like($stderr, qr/ERROR:  58000: clock is 3[56]\d{5} ms behind the high-water mark/,
	'an hour back over a restart is refused with SQLSTATE 58000 and the distance');
like($stderr, qr/DETAIL:  Ids were issued up to .* before the server started .* and will pass that at /,
	'the detail says when the clock catches up');
is($node->safe_psql('postgres', 'SELECT rollbacks_refused, ids_issued FROM snowflake_stats'),
	'1|0', 'the refusal is counted and nothing was issued');

# The clock comes forward again: ids are issued, above the earlier ones.
step_clock($offset_file, '+0s');
$first = draw_max($node, 1);
is_above($node, $first, $before, 'once the clock is past the mark ids are issued again, increasing');

$node->stop;
done_testing();
