# Every preset generates: a server running each layout issues ids that
# decode, under that layout, to its worker id and the current time, and
# that increase.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('presets', "snowflake.worker_id = 1000\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$node->stop;

for my $preset ('twitter', 'discord', 'instagram', 'sonyflake', 'snowflake')
{
	# Another layout: the mark of the one before would (rightly) refuse
	# it when its ids sort lower; this test is about generation alone.
	unlink($node->data_dir . '/snowflake.mark');
	$node->append_conf('postgresql.conf', "snowflake.layout = '$preset'\n");
	$node->start;
	is($node->safe_psql('postgres', qq{
		SELECT count(*), bool_and(d.worker_id = 1000),
			   bool_and(abs(extract(epoch FROM d.created_at - clock_timestamp())) < 5),
			   bool_and(s.id > 0), bool_and(s.id > s.prev)
		  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
				  FROM (SELECT row_number() OVER () AS n, id
						  FROM (SELECT snowflake_nextval() AS id
								  FROM generate_series(1, 20000)) a) b) s,
			   snowflake_decode(s.id, '$preset') d
		 WHERE s.prev IS NOT NULL}),
		'19999|t|t|t|t', "$preset: ids decode to the worker id and the time, and increase");
	is($node->safe_psql('postgres', 'SELECT layout FROM snowflake_stats'),
		$preset, "$preset: the statistics name the layout");
	$node->stop;
}

done_testing();
