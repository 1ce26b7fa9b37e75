# Counts that must be exact under layouts at the edges: a 31-bit sequence
# (2^31 ids a tick, which overflowed a 32-bit count), and a 2-bit sequence
# in one-second ticks, where the waits for the next tick are certain.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

# 22 bits of hours, 10 of worker, 31 of sequence
my $wide = snowflake_node('wide',
	"snowflake.layout = 'time:22 worker:10 sequence:31 tick:3600000ms epoch:2025-01-01'\n");
$wide->start;
$wide->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$wide->safe_psql('postgres', 'SELECT snowflake_nextval()');
is($wide->safe_psql('postgres', 'SELECT ids_issued FROM snowflake_stats'),
	'1', 'one id of a 31-bit sequence counts as one');
my $started = time();
my ($a, $b) = split /\|/, $wide->safe_psql('postgres',
	'SELECT min(id), max(id) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) s');
cmp_ok(time() - $started, '<', 60, 'the next ids come at once, in the same one-hour tick');
is($wide->safe_psql('postgres', "SELECT $b - $a = 99999 OR ($b >> 41) <> ($a >> 41)"),
	't', 'consecutive ids (unless an hour began in between)');
is($wide->safe_psql('postgres', 'SELECT count(*) FROM snowflake_nextval_batch(2000000)'),
	'2000000', 'a batch of two million in one tick');
is($wide->safe_psql('postgres', 'SELECT ids_issued, sequence_waits FROM snowflake_stats'),
	'2100001|0', 'every id counted, no wait');
is($wide->safe_psql('postgres', q{SELECT ids_per_tick, ids_per_second FROM snowflake_layout_info(current_setting('snowflake.layout'))}),
	'2147483648|596523', 'the layout gives 2^31 ids a tick');
$wide->stop;

# 4 ids a second: a batch of 9 takes the rest of one tick (1 to 4 ids) and
# all or part of the next two, waiting for each.
my $narrow = snowflake_node('narrow',
	"snowflake.layout = 'time:40 worker:21 sequence:2 tick:1000ms epoch:2025-01-01'\n");
$narrow->start;
$narrow->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is($narrow->safe_psql('postgres', q{
	SELECT count(DISTINCT s.id), count(DISTINCT d.timestamp_ms)
	  FROM snowflake_nextval_batch(9) s(id), snowflake_decode(s.id) d}),
	'9|3', 'nine ids in three ticks');
is($narrow->safe_psql('postgres', 'SELECT ids_issued, sequence_waits FROM snowflake_stats'),
	'9|2', 'two waits for the next tick, counted');
$narrow->stop;

done_testing();
