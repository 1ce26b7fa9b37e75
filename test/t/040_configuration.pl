# Configuration: a server without the preload, worker ids, layouts and
# shards out of range (the server refuses to start), epochs the clock is
# outside of (the server starts, the calls say why), and valid custom
# settings.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

# Without shared_preload_libraries: CREATE EXTENSION and the decoders work,
# the generator says what is missing.
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init(utf8_init());
$plain->start;
is($plain->safe_psql('postgres', 'SHOW server_encoding'), 'UTF8', 'test servers are UTF-8, whatever the machine\'s locale');
$plain->safe_psql('postgres', 'CREATE EXTENSION snowflake');
for my $call ('SELECT snowflake_nextval()', 'SELECT * FROM snowflake_nextval_batch(3)',
	'SELECT * FROM snowflake_stats')
{
	like(psql_stderr($plain, $call),
		qr/ERROR:  55000: snowflake must be loaded via "shared_preload_libraries".*HINT:  Add "snowflake" to "shared_preload_libraries"/s,
		"without the preload, $call fails with SQLSTATE 55000 and a hint");
}
is($plain->safe_psql('postgres',
		"SET timezone = 'UTC'; SELECT worker_id, created_at FROM snowflake_decode((1::bigint << 22) | (9 << 12))"),
	'9|2025-01-01 00:00:00.001+00', 'the decoders work without the preload');
$plain->stop;

# Values that must stop the server from starting.
my %refused = (
	'snowflake.worker_id = 1024' =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "1024"\n.*DETAIL:  Layout "snowflake" has 10 bits of worker id, for worker ids 0 to 1023\./,
	'snowflake.worker_id = -1' =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "-1"\n.*DETAIL:  A worker id is a whole number from 0 to 1023 in plain decimal digits/,
	# a typo must not become another server's worker id: 010 is not 8 (octal)
	# nor 10, 0x10 not 16, 2.5 not 2
	'snowflake.worker_id = 010' =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "010"\n.*DETAIL:  A worker id is a whole number from 0 to 1023 in plain decimal digits, such as 7: no sign, leading zero, fraction or hexadecimal prefix\./,
	'snowflake.worker_id = 0x10' =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "0x10"\n.*DETAIL:  A worker id is a whole number from 0 to 1023 in plain decimal/,
	'snowflake.worker_id = 2.5' =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "2.5"\n.*DETAIL:  A worker id is a whole number from 0 to 1023 in plain decimal/,
	"snowflake.worker_id = '+5'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "\+5"\n.*DETAIL:  A worker id is a whole number from 0 to 1023 in plain decimal/,
	"snowflake.shards = '7, 010'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.shards": "7, 010"\n.*DETAIL:  Write numbers in plain decimal, without leading zeros: "010" could be read as octal\./,
	"snowflake.lease_worker_ids = '0-010'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.lease_worker_ids": "0-010"\n.*DETAIL:  Write numbers in plain decimal, without leading zeros: "010"/,
	"snowflake.epoch = '-999999999999999'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.epoch": "-999999999999999"\n.*DETAIL:  The epoch lies outside PostgreSQL's timestamps\./,
	"snowflake.layout = 'time:53 worker:5 sequence:5'\nsnowflake.epoch = '9999-01-01'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.layout": "time:53 worker:5 sequence:5"\n.*DETAIL:  A time field of 53 bits in ticks of 1 ms since 9999-01-01 .* runs past the year 294276/,
	"snowflake.epoch = '12345678901234567'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.epoch": "12345678901234567"\n.*DETAIL:  The epoch lies outside PostgreSQL's timestamps\./,
	"snowflake.epoch = 'soon'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.epoch": "soon"/,
	"snowflake.layout = 'time:41 worker:10 sequence:11'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.layout": "time:41 worker:10 sequence:11"\n.*DETAIL:  The fields add up to 62 bits/,
	"snowflake.layout = 'instagram'\nsnowflake.worker_id = 8192" =>
	  qr/FATAL:  invalid value for parameter "snowflake.worker_id": "8192"\n.*DETAIL:  Layout "instagram" has 13 bits of worker id, for worker ids 0 to 8191\./,
	"snowflake.shards = '5-3'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.shards": "5-3"\n.*DETAIL:  The range 5-3 is empty/,
	"snowflake.shards = '1000-1024'" =>
	  qr/FATAL:  invalid value for parameter "snowflake.shards": "1000-1024"\n.*DETAIL:  The range 1000-1024 is empty or beyond the largest shard of layout "snowflake", 1023\./,);
my $n = 0;

# A 16-digit count of milliseconds within PostgreSQL's timestamps is an
# epoch like any other (in the far future here: the calls say when ids can
# be issued).
{
	my $node = snowflake_node('epoch_digits', "snowflake.epoch = '1000000000000000'\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	is($node->safe_psql('postgres', 'SHOW snowflake.epoch'), '1000000000000000',
		'a 16-digit epoch in milliseconds within range is accepted');
	like(psql_stderr($node, 'SELECT snowflake_nextval()'), qr/ERROR:  22008: /,
		'and the calls say the epoch is ahead');
	$node->stop;
}

for my $setting (sort keys %refused)
{
	my $node = snowflake_node('refused' . $n++, "$setting\n");
	my $started = $node->start(fail_ok => 1);
	ok(!$started, "the server refuses to start with $setting");
	like(slurp_file($node->logfile), $refused{$setting}, "and the log names the setting");
	$node->stop if $started;
}

# The epoch in the future, or so far back that the time field is used up:
# the server starts (a check of the settings must not depend on the clock),
# the decoders work, the calls that issue ids say what is wrong.
for my $epoch ('2999-01-01', '1950-01-01')
{
	my $node = snowflake_node('epoch' . $n++, "snowflake.epoch = '$epoch'\n");
	ok($node->start(fail_ok => 1), "the server starts with snowflake.epoch = '$epoch'");
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	like(psql_stderr($node, 'SELECT snowflake_nextval()'),
		qr/ERROR:  22008: current time is outside the range of snowflake ids\n.*DETAIL:  The clock reads .*; ids can be issued from $epoch/s,
		"and the calls refuse to issue ids with SQLSTATE 22008");
	is($node->safe_psql('postgres', 'SELECT worker_id FROM snowflake_decode(4096)'),
		'1', 'the decoders work');
	$node->stop;
}

# With the clock in 2024 and an epoch of 2020 configured, the server starts
# and issues ids: no check compares the built-in default (2025) with the
# clock before the configured value is read.
{
	my $node = snowflake_node('clock2024', "snowflake.epoch = '2020-01-01'\n");
	my $offset = "$PostgreSQL::Test::Utils::tmp_check/clock2024.offset";
	step_clock($offset, '@2024-06-01 00:00:00');
	start_with_fake_clock($node, $offset);
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	is($node->safe_psql('postgres',
			q{SELECT date_trunc('day', created_at) FROM snowflake_decode(snowflake_nextval())}),
		'2024-06-01 00:00:00+00', 'a clock in 2024 and an epoch of 2020: the server starts and issues ids');
	$node->stop;
}

# A custom epoch and the largest worker id.
my $node = snowflake_node('custom',
	"snowflake.worker_id = 1023\nsnowflake.epoch = '2024-06-01 12:00:00+02'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is($node->safe_psql('postgres',
		"SET timezone = 'UTC'; SELECT worker_id, epoch FROM snowflake_stats"),
	'1023|2024-06-01 10:00:00+00', 'the epoch offset is honoured');
is($node->safe_psql('postgres', q{
	SELECT d.worker_id, abs(extract(epoch FROM d.created_at - clock_timestamp())) < 5,
		   (s.id >> 22) = (d.timestamp_ms - 1717236000000)
	  FROM (SELECT snowflake_nextval() AS id) s, snowflake_decode(s.id) d}),
	'1023|t|t', 'ids carry worker 1023 and time since the custom epoch');
$node->stop;

# An epoch as a count of milliseconds (Twitter's).
$node->append_conf('postgresql.conf', "snowflake.epoch = '1288834974657'\n");
$node->start;
is($node->safe_psql('postgres',
		"SET timezone = 'UTC'; SELECT epoch FROM snowflake_stats"),
	'2010-11-04 01:42:54.657+00', 'an epoch in milliseconds since 1970');
$node->stop;

done_testing();
