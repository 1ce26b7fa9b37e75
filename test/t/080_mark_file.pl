# The high-water mark file gone wrong: corrupt, truncated, of an impossible
# layout, written by another worker id, by 0.1.0, or under another epoch.  The server always starts; a
# file it cannot trust blocks the generator with a clear error until an
# operator removes it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SnowflakeTest;

my $node = snowflake_node('mark', "snowflake.worker_id = 7\n");
my $mark = $node->data_dir . '/snowflake.mark';
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $before = draw_max($node, 1000);
$node->stop;
is(-s $mark, 76, 'the mark is a file in the data directory: a 56-byte header, one 16-byte entry, a checksum');

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
		qr/DETAIL:  The file is 20 bytes long, shorter than the 56 bytes of its header\./ ],
	'an empty file' => [ sub { '' },
		qr/DETAIL:  The file is 0 bytes long, shorter than the 56 bytes of its header\./ ],
	'trailing bytes' => [ sub { shift() . 'x' },
		qr/DETAIL:  The file is 77 bytes long; its header says 76\./ ],
	'a newer format' => [ sub { my $b = shift; substr($b, 4, 4) = pack('L', 3); $b },
		qr/DETAIL:  The file has format version 3; this build reads versions 1 to 2\./ ],
	'a node field of 40 bits' => [ sub { with_crc(sub { substr($_[0], 16, 4) = pack('l', 40) }, shift) },
		qr/DETAIL:  The file records an impossible layout: The node fields have 40 bits; at most 31 fit a worker id\./ ],
	'a node beyond its layout' => [ sub { with_crc(sub { substr($_[0], 56, 4) = pack('l', 5000) }, shift) },
		qr/DETAIL:  The file records an impossible mark for node 5000/ ],
	'a foreign file' => [ sub { 'not a mark' . ("\0" x 54) },
		qr/DETAIL:  The file does not start with the magic number/ ],);
# CRC-32C (Castagnoli), as the file's checksum
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack('C*', $data))
	{
		$crc ^= $byte;
		$crc = ($crc >> 1) ^ ($crc & 1 ? 0x82F63B78 : 0) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

# Edit the bytes before the checksum, and put a matching checksum after.
sub with_crc
{
	my ($edit, $bytes) = @_;
	my $body = substr($bytes, 0, length($bytes) - 4);
	$edit->($body);
	return $body . pack('L', crc32c($body));
}

my $saved = slurp_file($mark);
is(substr($saved, -4), pack('L', crc32c(substr($saved, 0, -4))),
	'the checksum helper agrees with the server');
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
	qr/LOG:  the snowflake high-water mark has no entry for worker id 8: its ids start from the clock/,
	'and the log says so');
$before = draw_max($node, 1000);
$node->stop;
is(-s $mark, 56 + 2 * 16 + 4, 'the mark keeps worker id 7 next to 8');

# A mark written by 0.1.0 (format 1: one mark for every node of the
# server), an hour ahead of the clock: it holds back every node.
$node->start;
my $hour_ahead = $node->safe_psql('postgres',
	q{SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000});
$node->stop;
my $v2 = slurp_file($mark);
{
	my $v1 = pack('LLllllLLqqqL', 0x534E4F57, 1, 7, 41, 10, 12, 1, 2,
		1735689600000, $hour_ahead, $hour_ahead - 1000, 0);
	rewrite_mark(sub { $v1 . pack('L', crc32c($v1)) });
}
$node->start;
like(psql_stderr($node, 'SELECT snowflake_nextval()'),
	qr/ERROR:  58000: clock is \d+ ms behind the high-water mark/,
	'a format 1 mark is read, and applies to this worker id too');
$node->stop;
rewrite_mark(sub { $v2 });

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

# A FIFO where the file should be (a mistake, or a hostile neighbour with
# the server's operating-system user): start-up does not wait for a writer
# that never comes, and the calls refuse as for any file that is no mark.
unlink($mark) or die $!;
system('mkfifo', $mark) == 0 or die 'mkfifo failed';
my $fifo_started = time();
ok($node->start(fail_ok => 1), 'with a FIFO for a mark the server starts');
cmp_ok(time() - $fifo_started, '<', 60, 'at once');
like(psql_stderr($node, 'SELECT snowflake_nextval()'),
	qr/ERROR:  XX001: high-water mark file "snowflake.mark" is invalid\n.*DETAIL:  It is not a regular file\./,
	'and the calls refuse, saying why');
$node->stop;
unlink($mark) or die $!;

done_testing();
