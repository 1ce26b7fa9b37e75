# Borrowing the future: with snowflake.max_borrow_ms, a burst above the
# layout's capacity per tick is absorbed by issuing ahead of the clock
# instead of waiting, and the high-water mark covers the borrowed ticks, so
# a crash in the middle of a burst reissues nothing.  Sonyflake's layout
# makes it easy to exceed: 256 ids per 10 ms tick, 25,600 a second.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $node = snowflake_node('borrow', q{
snowflake.layout = 'sonyflake'
snowflake.worker_id = 4242
snowflake.max_borrow_ms = 5000
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# A burst of 50,000 ids: about two seconds of capacity, within the bound.
my $started = time();
is($node->safe_psql('postgres', q{
	WITH ids AS (
		SELECT row_number() OVER () AS n, id
		  FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 50000)) s)
	SELECT count(*), count(DISTINCT id), bool_and(id > prev)
	  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s
	 WHERE prev IS NOT NULL}),
	'49999|49999|t', 'a burst above the capacity: distinct and increasing');
my $elapsed = time() - $started;
cmp_ok($elapsed, '<', 1.5, 'it took less than the two seconds of ticks it used');
is($node->safe_psql('postgres',
		'SELECT sequence_waits, borrowed_ticks > 100 FROM snowflake_stats'),
	'0|t', 'no wait for the next tick: the ticks were borrowed');
is($node->safe_psql('postgres', q{
	SELECT bool_and(d.worker_id = 4242)
	  FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 10)) s,
	       snowflake_decode(s.id) d}),
	't', 'ids carry the machine id in the last 16 bits');
is($node->safe_psql('postgres', q{
	SELECT extract(epoch FROM high_water_mark) * 1000 > last_timestamp_ms FROM snowflake_stats}),
	't', 'the mark lies beyond the last borrowed tick');

# A batch never borrows, so that one caller cannot push the generator ahead
# of the clock and make every other caller wait: it waits for the ticks.
my $borrowed_before = $node->safe_psql('postgres', 'SELECT borrowed_ticks FROM snowflake_stats');
$node->safe_psql('postgres', 'SELECT pg_sleep(2.5)');	# the clock past the burst's ticks
is($node->safe_psql('postgres', q{
	SELECT count(*), max(d.timestamp_ms) <= extract(epoch FROM clock_timestamp()) * 1000
	  FROM snowflake_nextval_batch(10000) s(id), snowflake_decode(s.id) d}),
	'10000|t', 'a batch of 10,000 takes no tick ahead of the clock');
is($node->safe_psql('postgres', 'SELECT borrowed_ticks FROM snowflake_stats'), $borrowed_before,
	'and borrows none');

# Without borrowing, the same burst waits for the clock.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowflake.max_borrow_ms = 0; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', "SELECT current_setting('snowflake.max_borrow_ms') = '0'");
$node->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 5000)');
ok($node->safe_psql('postgres', 'SELECT sequence_waits FROM snowflake_stats') > 0,
	'without borrowing the burst waits for the next tick');

# A crash after a burst, with its last ticks borrowed ahead of the clock:
# every id after it is above every id before it, borrowed ones included.
$node->safe_psql('postgres', 'ALTER SYSTEM SET snowflake.max_borrow_ms = 5000; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', "SELECT current_setting('snowflake.max_borrow_ms') = '5s'");
my $last = $node->safe_psql('postgres',
	'SELECT max(id) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 80000)) s');
ok($node->safe_psql('postgres',
		"SELECT (SELECT timestamp_ms FROM snowflake_decode($last)) > extract(epoch FROM clock_timestamp()) * 1000 + 500"),
	'the last id of the burst lies well ahead of the clock');
$node->stop('immediate');
$node->start;
is_above($node, draw_max($node, 10), $last, 'after a crash the ids are above the borrowed ones');

# A crash in the middle of a burst: a client streams ids at full speed,
# far above the capacity, while the postmaster and every backend are killed.
my $received = "$PostgreSQL::Test::Utils::tmp_check/burst.out";
my $client = stream_ids($node, $received, 2_000_000);
my $borrowed = $node->safe_psql('postgres', 'SELECT borrowed_ticks FROM snowflake_stats');
kill_server($node);
$client->finish;
my ($count, $largest, $increasing) = stream_largest($received);
ok($increasing && $count > 50000, "the $count ids received mid-burst were increasing");
ok($borrowed > 0, 'the burst was borrowing ticks when the server died');
$node->start;
is_above($node, draw_max($node, 10), $largest,
	'after the crash every id is above every id the client received');

$node->stop;
done_testing();
