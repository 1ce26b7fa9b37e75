# The high-water mark file gone wrong: corrupt, truncated, written by
# another worker id, or under another epoch.  The server always starts; a
# file it cannot trust blocks the generator with a clear error until an
# operator removes it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $node = snowflake_node('mark', "snowflake.worker_id = 7\n");
my $mark = $node->data_dir . '/snowflake.mark';
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $before = draw_max($node, 1000);
$node->stop;
is(-s $mark, 64, 'the mark is a 64-byte file in the data directory');

sub rewrite_mark
{
	my ($edit) = @_;
	open(my $fh, '<:raw', $mark) or die $!;
	local $/;
	my $bytes = <$fh>;
	close($fh);
	open($fh, '>:raw', $mark) or die $!;
	print $fh $edit->($bytes);
	close($fh) or die $!;
}

my %broken = (
	'a flipped byte' => [ sub { my $b = shift; substr($b, 44, 1) ^= "\x01"; $b },
		qr/DETAIL:  The file's checksum does not match its contents\./ ],
	'a truncated file' => [ sub { substr(shift, 0, 20) },
		qr/DETAIL:  The file is 20 bytes long, not 64\./ ],
	'an empty file' => [ sub { '' }, qr/DETAIL:  The file is 0 bytes long, not 64\./ ],
	'trailing bytes' => [ sub { shift() . 'x' }, qr/DETAIL:  The file is longer than 64 bytes\./ ],
	'a newer format' => [ sub { my $b = shift; substr($b, 4, 4) = pack('L', 2); $b },
		qr/DETAIL:  The file has format version 2; this build reads version 1\./ ],
	'a foreign file' => [ sub { 'not a mark' . ("\0" x 54) },
		qr/DETAIL:  The file does not start with the magic number/ ],);
my $saved = slurp_file($mark);
for my $case (sort keys %broken)
{
	my ($edit, $detail) = @{ $broken{$case} };
	rewrite_mark($edit);
	$node->start;
	my $stderr = psql_stderr($node, 'SELECT snowflake_nextval()');
	like($stderr, qr/ERROR:  XX001: high-water mark file "snowflake.mark" is invalid/,
		"with $case the server starts and calls fail with SQLSTATE XX001");
	like($stderr, $detail, "the detail says what is wrong with $case");
	like($stderr, qr/HINT:  .*remove the file/, 'the hint says how to recover');
	like(slurp_file($node->logfile), qr/WARNING:  snowflake ids cannot be issued: the high-water mark file "snowflake.mark" is invalid/,
		'the start-up log says so too');
	$node->stop;
	rewrite_mark(sub { $saved });
}

# Recovery as documented: remove the file once the clock is past the ids.
rewrite_mark(sub { 'garbage' });
unlink($mark) or die $!;
$node->start;
is_above($node, draw_max($node, 1), $before, 'with the file removed, ids are issued again');
$before = draw_max($node, 1000);
$node->stop;

# A data directory copied to a server with its own worker id.
$node->append_conf('postgresql.conf', "snowflake.worker_id = 8\n");
$node->start;
is($node->safe_psql('postgres', 'SELECT worker_id FROM snowflake_decode(snowflake_nextval())'),
	'8', 'a mark of another worker id does not block this one');
like(slurp_file($node->logfile),
	qr/LOG:  ignoring the snowflake high-water mark of worker id 7; this server is worker id 8/,
	'and the log says it was ignored');
$before = draw_max($node, 1000);
$node->stop;

# A later epoch would make new ids sort below the issued ones.
$node->append_conf('postgresql.conf', "snowflake.epoch = '2025-06-01'\n");
$node->start;
my $stderr = psql_stderr($node, 'SELECT snowflake_nextval()');
like($stderr, qr/ERROR:  55000: under the configured layout and epoch, ids would sort below the ids already issued/,
	'a later epoch is refused');
like($stderr, qr/DETAIL:  Ids were issued up to .* with 41 bits of time in ticks of 1 ms since 2025-01-01 00:00:00\+00, 10 of node and 12 of sequence; the configured layout is "snowflake" \(time:41 worker:10 sequence:12 tick:1ms epoch:1748736000000\)\./,
	'the detail names the layout and epoch of both');
like($stderr, qr/HINT:  Go back to the earlier "snowflake.layout" and "snowflake.epoch", or remove the file "snowflake.mark"/,
	'the hint names both ways out');
$node->stop;

# So would another layout: sonyflake's ticks are ten times longer.
$node->append_conf('postgresql.conf', "snowflake.epoch = '2025-01-01'\nsnowflake.layout = 'sonyflake'\n");
$node->start;
like(psql_stderr($node, 'SELECT snowflake_nextval()'),
	qr/ERROR:  55000: under the configured layout and epoch, ids would sort below/,
	'a layout whose ids sort lower is refused');
$node->stop;
$node->append_conf('postgresql.conf', "snowflake.layout = 'snowflake'\n");

# An earlier epoch only moves new ids further up.
$node->append_conf('postgresql.conf', "snowflake.epoch = '2024-01-01'\n");
$node->start;
is_above($node, draw_max($node, 1), $before, 'an earlier epoch is accepted: new ids sort above the old');
$node->stop;

done_testing();
