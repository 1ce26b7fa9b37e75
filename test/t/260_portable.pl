# The plain-SQL edition (sql/portable/snowflake.sql), on a server run from
# a copy of the installation that lacks the C edition (no library, no
# control file: neither LOAD nor CREATE EXTENSION finds it), installed by a
# role that is no superuser:
# - nothing compiled: every function it installs is SQL or PL/pgSQL;
# - no worker id: refused (55000); out of range: refused (22023); another
#   role may not set it;
# - 16 sessions drawing 100,000 ids each at once, 4 of them with one
#   snowflake_nextval_batch() each: all distinct, each session's
#   increasing, all of the configured worker id; a batch's ids lie at or
#   before the clock when it returns; Instagram's function, drawn the
#   same way, fails the checks (its ids go down within a session);
# - the state set at a tick's last sequences, ahead of the clock: the ids
#   go on above it, in order;
# - a jump held in progress (the sequence lock odd, the jump's lock held):
#   a draw waits, and returns a value above the state the jump leaves;
# - the jump's lock held by a session of another role, alone or in share:
#   a draw that needs the state moved waits 1 s, then names the holder
#   (55P03);
# - a clock behind the last id within 5 ms: waited out; beyond: refused
#   (58000) (the state is set ahead of the clock, as a clock stepped back
#   would leave it);
# - snowflake_convert_column() converts a serial key and the column
#   referencing it to this edition's ids, and a schema converted by either
#   edition dumps the same;
# - the database restored into another cluster: refused (55000) until that
#   server has a worker id of its own;
# - ids of either edition decode the same in the other (the C edition on a
#   second server), snowflake_from_timestamp() agrees, and text ids are the
#   same both ways, refusals included (a negative batch's too).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $script = "$FindBin::RealBin/../../sql/portable/snowflake.sql";

# Every program from the copy without the C edition, but the other
# server's, which runs the C edition.
my $with_snowflake = $ENV{PATH};
$ENV{PATH} = install_without_snowflake() . ":$ENV{PATH}";

my $node = PostgreSQL::Test::Cluster->new('portable');
$node->init(utf8_init());
$node->append_conf('postgresql.conf', "jit = off\nmax_connections = 40\n");
$node->start;
$node->psql('postgres', q{LOAD 'snowflake'}, stderr => \my $load_err);
like($load_err, qr/could not access file "snowflake"/, 'the server cannot load the C library: it has none');
$node->psql('postgres', 'CREATE EXTENSION snowflake', stderr => \my $create_err);
like($create_err, qr/extension "snowflake" is not available|could not open extension control file/,
	'nor create the extension');
$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE ROLE other LOGIN;
	CREATE DATABASE app OWNER app;
});
my $app = $node->connstr('app') . ' user=app';

sub app_psql
{
	# each statement a -c of its own, in one session: psql before 15 prints
	# only the last result of a -c holding several
	my (@sql) = @_;
	my ($stdout, $stderr);
	my $ret = IPC::Run::run([ 'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, map { ('-c', $_) } @sql ],
		'>', \$stdout, '2>', \$stderr);
	chomp $stdout;
	return wantarray ? ($ret ? 0 : 1, $stdout, $stderr) : $stdout;
}

my ($out, $err) = ('', '');
ok( IPC::Run::run([ 'psql', '-X', '-q', '-d', $app, '-v', 'schema=sf', '-f', $script ], '>', \$out, '2>', \$err),
	'the role that owns the database installs it with psql -f') or diag $err;
is($node->safe_psql('app', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}), '0',
	'no extension was created');
is( $node->safe_psql(
		'app', q{SELECT count(*), count(*) FILTER (WHERE l.lanname NOT IN ('sql', 'plpgsql'))
		  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		 WHERE p.pronamespace = 'sf'::regnamespace}),
	'14|0',
	'its 14 functions are SQL or PL/pgSQL: nothing compiled');
ok(IPC::Run::run([ 'psql', '-X', '-q', '-d', $app, '-v', 'schema=sf', '-f', $script ], '>', \$out, '2>', \$err),
	'running it again works') or diag $err;

my ($ret, $stdout, $stderr) = app_psql('SELECT sf.snowflake_nextval()');
like($stderr, qr/no worker id is set for snowflake ids in schema sf/, 'without a worker id, no id');
($ret, $stdout, $stderr) = app_psql('SELECT sf.snowflake_set_worker_id(1024)');
like($stderr, qr/worker id 1024 is out of range/, 'a worker id past 1023 is refused');
$node->psql('app', 'SELECT sf.snowflake_set_worker_id(3)', stderr => \$stderr, extra_params => [ '-U', 'other' ]);
like($stderr, qr/permission denied for function snowflake_set_worker_id/,
	'another role may not set the worker id');
is(app_psql('SELECT sf.snowflake_set_worker_id(7)'), '7', "the database's owner sets it");
is( app_psql(q{SELECT worker_id = 7 AND created_at BETWEEN now() - interval '1 minute' AND clock_timestamp()
	  FROM sf.snowflake_decode(sf.snowflake_nextval())}),
	't', 'an id decodes to the worker id and a time of a moment ago');
$node->psql('app', 'SELECT sf.snowflake_nextval()', stdout => \$stdout, stderr => \$stderr,
	extra_params => [ '-U', 'other' ]);
like($stdout, qr/^\d+$/, 'any role draws ids');
$node->psql('app', q{SELECT setval('sf._snowflake_state', 0)}, stderr => \$stderr, extra_params => [ '-U', 'other' ]);
like($stderr, qr/permission denied for sequence _snowflake_state/, 'but may not set the state');
$node->psql('app', q{SELECT nextval('sf._snowflake_gen')}, stderr => \$stderr, extra_params => [ '-U', 'other' ]);
like($stderr, qr/permission denied for sequence _snowflake_gen/, 'nor advance the sequence lock');

my $now_tick = q{(floor(date_part('epoch', clock_timestamp()) * 1000)::int8 - 1735689600000)};

# 16 sessions x 100,000 ids, each into a table of its own, in draw order;
# the last 4 sessions take theirs with one snowflake_nextval_batch() each
my $sessions = 16;
my $batches = 4;
my $n = 100_000;
app_psql(join ';', map { "CREATE UNLOGGED TABLE draw_$_ (n int, id bigint)" } 1 .. $sessions);
my @runs;
for my $s (1 .. $sessions)
{
	my $e = '';
	push @runs, IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, '-c',
		  $s > $sessions - $batches
		  ? "INSERT INTO draw_$s SELECT g, id FROM sf.snowflake_nextval_batch($n) WITH ORDINALITY b(id, g)"
		  : "INSERT INTO draw_$s SELECT g, sf.snowflake_nextval() FROM generate_series(1, $n) g" ],
		'>', \my $o, '2>', \$e);
}
my $failed = 0;
$_->finish or $failed++ for @runs;
is($failed, 0, "$sessions sessions drew $n ids each at once, $batches of them in a batch");
my $union = join ' UNION ALL ', map { "SELECT $_ AS s, n, id FROM draw_$_" } 1 .. $sessions;
is( app_psql("SELECT count(*), count(DISTINCT id) FROM ($union) u"),
	($sessions * $n) . '|' . ($sessions * $n),
	'all ' . ($sessions * $n) . ' ids are distinct');
is( app_psql(qq{SELECT count(*) FROM (SELECT id <= lag(id) OVER (PARTITION BY s ORDER BY n) AS down FROM ($union) u) d
	 WHERE down}),
	'0', "each session's ids increase");
is(app_psql("SELECT count(*) FROM ($union) u, sf.snowflake_decode(u.id) d WHERE d.worker_id <> 7"),
	'0', 'all carry worker id 7');

# Instagram's function (test/bench/instagram.sql), drawn the same way,
# fails the same checks: once its sequence passes a multiple of 1,024
# within a millisecond its ids go down, in the session that draws it
# (and, when a session loses its CPU between its sequence and its clock,
# two ids repeat).
ok( IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, '-f', "$FindBin::RealBin/../bench/instagram.sql" ],
		'>', \$out, '2>', \$err),
	"Instagram's function installs") or diag $err;
app_psql(join ';', map { "CREATE UNLOGGED TABLE ig_$_ (n int, id bigint)" } 1 .. $sessions);
@runs = ();
for my $s (1 .. $sessions)
{
	push @runs, IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $app, '-c',
		  "INSERT INTO ig_$s SELECT g, bench_instagram_next_id() FROM generate_series(1, 50000) g" ],
		'>', \my $o, '2>', \my $e);
}
$_->finish for @runs;
my $ig_union = join ' UNION ALL ', map { "SELECT $_ AS s, n, id FROM ig_$_" } 1 .. $sessions;
my ($ig_down, $ig_repeated) = split /\|/, app_psql(qq{
	SELECT (SELECT count(*) FROM (SELECT id <= lag(id) OVER (PARTITION BY s ORDER BY n) AS down FROM ($ig_union) u) d WHERE down),
	       (SELECT count(*) - count(DISTINCT id) FROM ($ig_union) u)});
cmp_ok($ig_down, '>', 0, "Instagram's function, drawn the same way: its ids go down within a session ($ig_down times)");
note "Instagram's function repeated $ig_repeated of " . ($sessions * 50000) . ' ids';

# A batch takes no tick ahead of the clock: the state set at the end of a
# tick 3 ms ahead, a batch of 100 from it (in the same statement) begins 4
# ms ahead, and returns once the clock is there (the clock read after the
# set is whole: PL/pgSQL returns it whole).  After a first batch, which
# compiles the functions, in the session.
is( app_psql('SELECT count(*) FROM sf.snowflake_nextval_batch(1)',
		qq{SELECT count(DISTINCT b.id), max(b.id) >> 22 <= $now_tick
	  FROM (SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 3) << 12) | 4095) AS v) s,
	       LATERAL sf.snowflake_nextval_batch(100 + 0 * (s.v % 2)::int4) b(id)}),
	"1\n100|t", "a batch's ids lie at or before the clock when it returns");
is(app_psql('SELECT count(DISTINCT id) FROM sf.snowflake_nextval_batch(20000) id'), '20000',
	'a batch of 20,000 ids (5 ticks\' worth) has 20,000');
is(app_psql('SELECT count(*) FROM sf.snowflake_nextval_batch(0)'), '0', 'a batch of 0 ids is none');

# A tick's ids used up: the state 4 ms ahead of the clock (as a burst
# leaves it), at the tick's last sequence but one, then 20 draws in the
# same session.  They wait for the clock to reach that tick, and go on
# above the state: into the next tick once the sequence is used up, or,
# when the clock has passed it meanwhile (a busy machine), at the clock.
my @burst = split /\n/, app_psql(
	"SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 4) << 12) | 4094)",
	q{SELECT ((s.id >> 22) << 12) | (s.id & 4095) || ' ' || d.worker_id || ' ' ||
	       coalesce((s.id > lag(s.id) OVER (ORDER BY i))::text, 'first')
	  FROM (SELECT i, sf.snowflake_nextval() AS id FROM generate_series(1, 20) i) s
	  CROSS JOIN LATERAL sf.snowflake_decode(s.id) d ORDER BY i});
my $set = shift @burst;
my ($first) = split / /, $burst[0];
cmp_ok($first, '>', $set & 9007199254740991, "past a tick's last sequence, ids go on above the state");
is(scalar(grep { / 7 (true|first)$/ } @burst), 20, 'the 20 ids increase, all of worker id 7');

# A jump in progress, held there: another session holds the jump's
# advisory lock, sets the state a little ahead of the clock and advances the
# sequence lock to odd, sleeps 0.3 s (less than the 1 s a draw waits for
# the lock), moves the state further on and sets the sequence lock even.
# A draw started right then (it waits for a lock that session releases in
# the same statement) returns a value above the state the jump leaves, not
# one drawn while the sequence lock was odd, which would be below it.
my ($xin, $xout, $xerr) = ('', '', '');
my $timer = IPC::Run::timer(180);
my $x = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $app ],
	'<', \$xin, '>', \$xout, '2>', \$xerr, $timer);
my $lock = q{1936617325, 'sf._snowflake_gen'::regclass::oid::int4};
$xin .= "SELECT 'locked:' || pg_advisory_lock($lock)::text || pg_advisory_lock(42)::text;\n";
$x->pump until $xout =~ /^locked:/m || $timer->is_expired;
my ($dout, $derr) = ('', '');
my $d = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-d', $app, '-c',
	  'SELECT sf.snowflake_nextval() FROM (SELECT pg_advisory_lock_shared(42)) l' ],
	'>', \$dout, '2>', \$derr);
$node->poll_query_until('app', q{SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 AND NOT granted)})
  or die 'the draw does not wait for lock 42';
$xin .= "SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 2) << 12) | 50);"
  . " SELECT 'odd:' || nextval('sf._snowflake_gen') % 2; SELECT pg_advisory_unlock(42);"
  . " SELECT pg_sleep(0.3);"
  . " SELECT 'set:' || setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 4) << 12) | 100);"
  . " SELECT 'even:' || nextval('sf._snowflake_gen') % 2; SELECT pg_advisory_unlock($lock);\n";
$x->pump until $xout =~ /^even:0$/m || $timer->is_expired;
like($xout, qr/^odd:1$/m, 'the sequence lock was odd while the jump was held');
($set) = $xout =~ /^set:(\d+)$/m;
$d->finish;
chomp $dout;
is($derr, '', 'the draw made while a jump was held in progress succeeded');
is( app_psql("SELECT ((($dout >> 22) << 12) | ($dout & 4095)) > (${set}::int8 & 9007199254740991)"),
	't', 'and returned a value above the state the jump left');
$xin .= "\\q\n";
$x->finish;

# Any role may take an advisory lock: a session of another role holding
# the jump's lock (alone, or in share) keeps the state from moving.  A draw
# that needs it moved waits 1 s, then says which process holds the lock
# (55P03), instead of waiting for good (statement_timeout is 20 s here).
for my $mode ('pg_advisory_lock', 'pg_advisory_lock_shared')
{
	my ($hin, $hout) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-d', $node->connstr('app') . ' user=other' ],
		'<', \$hin, '>', \$hout, '2>', \my $herr, $timer);
	$hin .= "SELECT 'held:' || pg_backend_pid() || ':' || $mode($lock)::text;\n";
	$h->pump until $hout =~ /^held:/m || $timer->is_expired;
	my ($holder) = $hout =~ /^held:(\d+):/m;
	my $started = time;
	($ret, $stdout, $stderr) = app_psql(
		"SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick - 1000) << 12)) > 0",
		q{SET statement_timeout = '20s'},
		'SELECT sf.snowflake_nextval()');
	like($stderr, qr/ERROR:  could not move the state of snowflake ids in schema sf: its lock is held by process $holder\n/,
		"a draw that needs the state moved while another role holds its lock ($mode) names the holder");
	cmp_ok(time - $started, '<', 15, 'after a bounded wait');
	$hin .= "\\q\n";
	$h->finish;
}
like(app_psql('SELECT sf.snowflake_nextval()'), qr/^\d+$/, 'once it is let go, ids come again');

# the clock behind the last id: 3 ms, waited out; 300 ms, refused
is( app_psql(
		"SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 3) << 12)) > 0",
		"SELECT (sf.snowflake_nextval() >> 22) + 1735689600000 <= $now_tick + 1735689600000"),
	"t\nt", 'a clock 3 ms behind the last id is waited out (or passed meanwhile)');
# (the draw comes a few ms after the state is set, more on a busy machine:
# a step of more than 5 ms and at most 300 is what it may find)
($ret, $stdout, $stderr) = app_psql(
	"SELECT setval('sf._snowflake_state', (7::int8 << 53) | (($now_tick + 300) << 12))",
	'SELECT sf.snowflake_nextval()');
my ($behind) = $stderr =~ /ERROR:  clock moved backwards by (\d+) ms\n/;
ok(defined $behind && $behind > 5 && $behind <= 300, 'a clock 300 ms behind is refused')
  or diag $stderr;
sleep 1;
like(app_psql('SELECT sf.snowflake_nextval()'), qr/^\d+$/, 'and ids come again once the clock has passed');

# The conversion from serial, the C edition's PL/pgSQL run with this
# edition's snowflake_nextval(): a table and one referencing it.
app_psql(
	'CREATE TABLE customers (id serial PRIMARY KEY, name text)',
	'CREATE TABLE orders (id serial PRIMARY KEY, customer_id int REFERENCES customers)',
	'INSERT INTO customers (name) SELECT g::text FROM generate_series(1, 100) g',
	'INSERT INTO orders (customer_id) SELECT 1 + g % 100 FROM generate_series(1, 300) g');
like(app_psql(q{SELECT string_agg(s, E'\n') FROM sf.snowflake_convert_column('customers') s}),
	qr/ALTER TABLE public\.customers ALTER COLUMN id SET DEFAULT sf\.snowflake_nextval\(\)/,
	'snowflake_convert_column() converts a serial column to this edition\'s ids');
is( app_psql(q{SELECT string_agg(format('%s.%s %s %s', c.table_name, c.column_name, c.data_type, coalesce(c.column_default, '-')), ', ' ORDER BY c.table_name)
	  FROM information_schema.columns c
	 WHERE (c.table_name, c.column_name) IN (('customers', 'id'), ('orders', 'customer_id'))}),
	'customers.id bigint sf.snowflake_nextval(), orders.customer_id bigint -',
	'the column and the one referencing it are bigint, the default is sf.snowflake_nextval()');
is( app_psql(q{WITH c AS (INSERT INTO customers (name) VALUES ('new') RETURNING id),
	                o AS (INSERT INTO orders (customer_id) SELECT id FROM c RETURNING customer_id)
	  SELECT o.customer_id > 100 AND d.worker_id = 7 FROM o, sf.snowflake_decode(o.customer_id) d}),
	't', 'a new row takes an id above the old ones, of worker id 7, and is referenced');

# the C edition on another server: each decodes the other's ids the same;
# the database restored there keeps worker id 7 of this server: refused
my $c;
{
	local $ENV{PATH} = $with_snowflake;
	$c = snowflake_node('c_edition', "snowflake.worker_id = 9\n");
	$c->start;
}
$c->safe_psql('postgres', q{CREATE ROLE app LOGIN; CREATE ROLE other LOGIN; CREATE DATABASE app OWNER app});
my $dump = "$PostgreSQL::Test::Utils::tmp_check/portable.dump";
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('app') ], 'pg_dump of the database');
$c->command_ok([ 'pg_restore', '-d', $c->connstr('app'), $dump ], 'restored on the other server');
$c->psql('app', 'SELECT sf.snowflake_nextval()', stderr => \$stderr, extra_params => [ '-U', 'app' ]);
like($stderr, qr/the worker id of schema sf was set on another server/,
	'a restored copy issues no id under the first server\'s worker id');
is($c->safe_psql('app', 'SET ROLE app; SELECT sf.snowflake_set_worker_id(8)'), '8',
	'until it has a worker id of its own');
$c->safe_psql('app', 'CREATE EXTENSION snowflake SCHEMA public');

# The same schema converted by each edition ends the same: pg_dump
# --schema-only of the two alike, but for the schema and the function
# named in the defaults.
my %dump;
for my $edition ('public', 'sf')
{
	$c->safe_psql('app', qq{SET ROLE app;
		CREATE SCHEMA conv_$edition;
		CREATE TABLE conv_$edition.customers (id serial PRIMARY KEY, name text);
		CREATE TABLE conv_$edition.orders (id bigserial PRIMARY KEY, customer_id int NOT NULL REFERENCES conv_$edition.customers);
		CREATE TABLE conv_$edition.profiles (customer_id int PRIMARY KEY REFERENCES conv_$edition.customers ON DELETE CASCADE);
		INSERT INTO conv_$edition.customers (name) VALUES ('a'), ('b');
		SELECT count(*) FROM $edition.snowflake_convert_column('conv_$edition.customers', drop_sequence => true);});
	IPC::Run::run([ 'pg_dump', '--schema-only', '-n', "conv_$edition", '-d', $c->connstr('app') ], '>', \$dump{$edition})
	  or die "pg_dump of conv_$edition failed";
	$dump{$edition} =~ s/^\\(un)?restrict \S+$//mg;	# (a key of its own in each dump)
	$dump{$edition} =~ s/conv_$edition/SCHEMA/g;
	$dump{$edition} =~ s/\b$edition\.snowflake_nextval\(\)/NEXTVAL()/g;
}
is($dump{sf}, $dump{public}, 'a schema converted by either edition dumps the same')
  or diag "C edition:\n$dump{public}\nSQL edition:\n$dump{sf}";
like($dump{sf}, qr/DEFAULT NEXTVAL\(\)/, 'with the new default');
my $mixed = $c->safe_psql('app', q{
	WITH ids(id) AS (
		SELECT snowflake_nextval() FROM generate_series(1, 500)   -- the C edition's
		UNION ALL
		SELECT sf.snowflake_nextval() FROM generate_series(1, 500)
		UNION ALL
		(SELECT id FROM draw_1 LIMIT 500))
	SELECT count(*) FILTER (WHERE (p.created_at, p.timestamp_ms, p.worker_id, p.sequence)
	                          IS DISTINCT FROM (c.created_at, c.timestamp_ms, c.worker_id, c.sequence)),
	       count(DISTINCT p.worker_id)
	  FROM ids, sf.snowflake_decode(ids.id) p, public.snowflake_decode(ids.id) c});
is($mixed, '0|3', 'both editions decode ids of worker ids 7, 8 and 9 alike');
is( $c->safe_psql('app', q{
	SELECT count(*) FROM (VALUES (timestamptz '2025-01-01 00:00:00+00'), (now()), (timestamptz '2031-05-06 07:08:09.123456+02'),
	                             (timestamptz '2094-09-07 15:47:35.551+00')) v(ts)
	 WHERE sf.snowflake_from_timestamp(ts) <> public.snowflake_from_timestamp(ts)
	    OR sf.snowflake_timestamp(sf.snowflake_from_timestamp(ts)) <> public.snowflake_timestamp(public.snowflake_from_timestamp(ts))}),
	'0', 'snowflake_from_timestamp() and snowflake_timestamp() agree');
is( $c->safe_psql('app', q{
	SELECT count(*) FROM (SELECT timestamptz '2025-01-01 00:00:00+00' + random() * interval '60 years' AS ts
	                        FROM generate_series(1, 20000)
	                      UNION ALL
	                      SELECT timestamptz '2026-06-01 00:00:00+00' + g * interval '1 ms'
	                        FROM generate_series(0, 20000) g) v
	 WHERE sf.snowflake_from_timestamp(ts) <> public.snowflake_from_timestamp(ts)}),
	'0', 'snowflake_from_timestamp() agrees over 40,001 times, 20,001 of them on a millisecond exactly');
is( $c->safe_psql('app', q{
	SELECT count(*) FROM (SELECT (random() * 9223372036854775807)::int8 AS id FROM generate_series(1, 20000)
	                      UNION ALL VALUES (0), (1), (31), (32), (9223372036854775807)) i
	 WHERE sf.snowflake_to_text(id) <> public.snowflake_to_text(id)
	    OR sf.snowflake_from_text(public.snowflake_to_text(id)) <> id
	    OR sf.snowflake_from_text(lower(translate(public.snowflake_to_text(id), '01', 'OI'))) <> id}),
	'0', 'text ids: the same text for 20,005 ids, read back in either case, with O and I for 0 and 1');
for my $bad ('00000000000U1', '8000000000000', '80000000000U0', 'abc', '0000000000000000', "00000000000\xc3\xa91", '-000000000001')
{
	my (%says);
	for my $edition ('sf', 'public')
	{
		$c->psql('app', "SELECT $edition.snowflake_from_text('$bad')", stderr => \my $e);
		($says{$edition}) = $e =~ /(ERROR:[^\n]*(?:\nDETAIL:[^\n]*)?)/;
	}
	ok(defined $says{sf} && $says{sf} eq $says{public}, "snowflake_from_text('$bad') is refused as the C edition refuses it")
	  or diag "sf: $says{sf}\npublic: $says{public}";
}
{
	my (%says);
	for my $edition ('sf', 'public')
	{
		$c->psql('app', "SELECT $edition.snowflake_nextval_batch(-1)", stderr => \my $e);
		($says{$edition}) = $e =~ /(ERROR:[^\n]*)/;
	}
	ok(defined $says{sf} && $says{sf} eq $says{public}, 'snowflake_nextval_batch(-1) is refused as the C edition refuses it')
	  or diag "sf: $says{sf}\npublic: $says{public}";
}
# The jump is PUBLIC's to call: a block it is handed is 0 to 4,096 ids, and
# a null one is refused too (least() passes over a null, so the jump would
# take it for a block up to the end of the tick).
for my $block ('NULL', '4097', '-1')
{
	$c->psql('app', "\\set VERBOSITY verbose\nSELECT sf._snowflake_jump(0, $block)", stderr => \$stderr);
	like($stderr, qr/ERROR:  22023: a block of snowflake ids is 0 to 4096 ids, not (?i:$block)/,
		"_snowflake_jump(0, $block) is refused");
}
for my $ts ("timestamptz '2024-12-31 23:59:59.999+00'", "timestamptz 'infinity'")
{
	$c->psql('app', "SELECT sf.snowflake_from_timestamp($ts)", stderr => \$stderr);
	like($stderr, qr/timestamp out of range for snowflake ids/, "snowflake_from_timestamp($ts) is refused");
}

$c->stop;
$node->stop;
done_testing();
