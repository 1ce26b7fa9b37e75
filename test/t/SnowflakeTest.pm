# Helpers shared by the TAP tests: a node with the library preloaded,
# drawing and comparing ids, and stepping a server's clock.
package SnowflakeTest;

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(basename);
use File::Path qw(mkpath);
use File::Temp ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use IPC::Run;
use POSIX ();
use Socket qw(SOCK_STREAM);
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT =
  qw(snowflake_node draw_max is_above psql_stderr step_clock start_with_fake_clock
  clock_behind_id clock_right kill_server stream_ids stream_largest
  lease_coordinator lease_coordinator_setup lease_node wait_for_lease freeze_server thaw_server
  draw_to_file repeated_ids require_password write_passfile utf8_init capture_proxy
  public_id_pairs decoded_pairs install_without_snowflake start_pgbench stop_pgbench lock_probe cancel_when probe_waits dump_schema
  start_writers stop_writers check_probe run_pending start_pgbouncer stop_pgbouncer);

# initdb's options for every test server, %init and its extra with them:
# UTF-8 and a fixed locale, whatever the machine's (a minimal system with no
# locale would make SQL_ASCII databases).
sub utf8_init
{
	my (%init) = @_;
	return (%init, extra => [ '--encoding=UTF8', '--locale=C.UTF-8', @{ $init{extra} // [] } ]);
}

# A copy of the PostgreSQL installation in PATH that lacks this extension:
# no library, no control file, no scripts.  Returns the copy's bin
# directory, for PATH, so that a server started from it cannot load the C
# edition at all.  The server finds its library and share directories
# relative to its own executable, resolving symlinks, so the programs are
# copied and put at the same paths under the copy's root; the rest are
# symlinks.
sub install_without_snowflake
{
	# (one copy per test file: the files run at once, and one must not
	# start servers from a copy the other is still making)
	my $root = "$PostgreSQL::Test::Utils::tmp_check/without_snowflake_" . basename($0, '.pl');
	my %dir;
	for my $what ('bindir', 'pkglibdir', 'sharedir')
	{
		($dir{$what} = `pg_config --$what`) =~ s/\s+\z//;
		die "pg_config --$what failed" if $? || $dir{$what} eq '';
	}
	return "$root$dir{bindir}" if -d "$root$dir{bindir}";

	mirror_without_snowflake($root, $dir{bindir}, 1);
	mirror_without_snowflake($root, $dir{pkglibdir}, 0);
	mirror_without_snowflake($root, $dir{sharedir}, 0);
	return "$root$dir{bindir}";
}

# $from's entries at the same path under $root, but for snowflake's: copies
# ($copy) or symlinks (the extension and bitcode directories mirrored one
# level down, where snowflake's files lie).
sub mirror_without_snowflake
{
	my ($root, $from, $copy) = @_;
	mkpath("$root$from");
	opendir(my $dh, $from) or die "could not read $from: $!";
	for my $entry (grep { !/^\.\.?\z/ && !/^snowflake\b/ } readdir $dh)
	{
		my $to = "$root$from/$entry";
		if ($copy)
		{
			system('cp', '-p', "$from/$entry", $to) == 0 or die "could not copy $from/$entry";
		}
		elsif ($entry eq 'extension' || $entry eq 'bitcode')
		{
			mirror_without_snowflake($root, "$from/$entry", 0);
		}
		else
		{
			symlink("$from/$entry", $to) or die "could not link $to: $!";
		}
	}
	closedir $dh;
	return;
}

# A new node with snowflake preloaded; $conf is appended to postgresql.conf,
# %init goes to init (allows_streaming => 1, say).  The caller starts it and
# creates the extension.
sub snowflake_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(utf8_init(%init));
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'snowflake'\njit = off\n" . ($conf // ''));
	return $node;
}

# Draw $n ids and return the largest, as a string (ids exceed a double).
sub draw_max
{
	my ($node, $n) = @_;

	return $node->safe_psql('postgres',
		"SELECT max(id) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, $n)) s"
	);
}

# Pass when id $new is above id $old (compared by the server: ids exceed
# what a double holds exactly).
sub is_above
{
	my ($node, $new, $old, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;

	is($node->safe_psql('postgres', "SELECT ${new}::bigint > ${old}::bigint"),
		't', $name);
}

# Run $sql with verbose errors (SQLSTATE in the message); return stderr.
sub psql_stderr
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $stderr;
}

# Stepping the clock of a running server with libfaketime: the server
# reads the offset from $offset_file at every clock call, and only the wall
# clock moves (PostgreSQL's latches and waits use the monotonic one).  While
# the offset changes, PostgreSQL's own timeouts (statement_timeout,
# lock_timeout, deadlock_timeout) fire early or never: tests keep them off.
my $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

# Write an offset such as "-3s" or "+0s", atomically: the server may read
# the file at any moment.
sub step_clock
{
	my ($offset_file, $offset) = @_;

	open(my $fh, '>', "$offset_file.tmp") or die $!;
	print $fh "$offset\n";
	close($fh) or die $!;
	rename("$offset_file.tmp", $offset_file) or die $!;
}

# Start $node with its clock under libfaketime (offset +0s unless the file
# says otherwise).  Keep the server's timeouts at 0 in such tests: they
# misbehave while the offset changes.
sub start_with_fake_clock
{
	my ($node, $offset_file) = @_;

	die "$libfaketime is missing: test/run installs libfaketime"
	  unless -f $libfaketime;
	step_clock($offset_file, '+0s') unless -f $offset_file;
	local $ENV{LD_PRELOAD} = $libfaketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $offset_file;
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	local $ENV{NO_FAKE_STAT} = '1';
	$node->start;
}

# Step the clock of $node, started by start_with_fake_clock, so that it reads
# $ms milliseconds before the time of id $id, and runs on from there.  Over
# a restart that leaves only the high-water mark to keep the next ids above
# $id: the restart itself cannot have moved the clock past it.
sub clock_behind_id
{
	my ($node, $offset_file, $id, $ms) = @_;
	my $id_ms = $node->safe_psql('postgres',
		"SELECT timestamp_ms FROM snowflake_decode(${id}::bigint)");

	# the offset is from the real clock, which this process reads
	step_clock($offset_file, sprintf('%+.3fs', ($id_ms - $ms) / 1000 - time()));
}

# Put the clock of a server started by start_with_fake_clock right again
# (offset 0), before it is stopped next.  Not every process of the server
# sees the offset: libfaketime reads the real clock while inside a select()
# it wraps, and the PostgreSQL 15 postmaster does its work in signal handlers
# that interrupt that select(); the children it forks there (every background
# worker, the mark writer among them) keep the real clock for good.  A mark
# such a process writes under a negative offset is ahead of the backends'
# clock by the offset too, and after the next crash the first call would wait
# that much longer, or be refused.
sub clock_right
{
	my ($offset_file) = @_;

	step_clock($offset_file, '+0s');
}

# Kill the postmaster and every backend with SIGKILL at once, as a power
# cut would leave them, and wait until they are gone and reaped (the next
# postmaster takes a PID that still exists, zombie or not, for a running
# server).
sub kill_server
{
	my ($node) = @_;
	my $postmaster = $node->{_pid};
	my @kids;

	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $fh, '<', $stat) or next;
		my $line = <$fh>;
		close($fh);
		push @kids, $1
		  if defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $postmaster;
	}
	$node->kill9;
	kill 'KILL', @kids;
	my $deadline = time() + 60;
	usleep(10_000) while grep({ kill(0, $_) } $postmaster, @kids) && time() < $deadline;
	die 'the killed server did not go away' if grep({ kill(0, $_) } $postmaster, @kids);
}

# Start a client streaming ids at full speed into $file; wait until at
# least $bytes have arrived.  Returns the IPC::Run harness.
sub stream_ids
{
	my ($node, $file, $bytes) = @_;
	my $stderr = '';
	# generate_series in the select list streams; in FROM it would be
	# materialised first
	my $client = IPC::Run::start(
		[
			'psql', '-X', '-d', $node->connstr('postgres'), '-c',
			'COPY (SELECT snowflake_nextval() FROM (SELECT generate_series(1, 2000000000)) s) TO STDOUT'
		],
		'>', $file, '2>', \$stderr);
	my $deadline = time() + 60;
	usleep(50_000) while (!-e $file || -s $file < $bytes) && time() < $deadline;
	return $client;
}

# The largest id in a stream file: the last complete line, the stream being
# increasing, which this checks (ids of equal length compare as strings).
# Returns (count, largest, increasing).
sub stream_largest
{
	my ($file) = @_;
	my ($count, $largest, $increasing) = (0, '', 1);

	open(my $fh, '<', $file) or die $!;
	while (my $line = <$fh>)
	{
		last unless $line =~ /^(\d+)\n$/;
		$increasing = 0
		  if (length($1) <=> length($largest) || $1 cmp $largest) <= 0;
		$largest = $1;
		$count++;
	}
	close($fh);
	return ($count, $largest, $increasing);
}

# ---- pgbouncer -------------------------------------------------------------

# pgbouncer in transaction pooling in front of database postgres of $node,
# with $pool server connections, on a unix socket of its own, trusting the
# roles @users (its log named after the test and $name).  Waits until it
# answers $users[0].  Returns a handle for stop_pgbouncer(), with the
# conninfo of its database in {via} (no user); the caller stops it, from
# an END block too.
sub start_pgbouncer
{
	my ($name, $node, $pool, @users) = @_;
	my ($pgbouncer) = grep { -x $_ } map { "$_/pgbouncer" } split(/:/, $ENV{PATH}), '/usr/sbin';
	my $dir = PostgreSQL::Test::Utils::tempdir_short();
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $test = basename($0, '.pl');

	PostgreSQL::Test::Utils::append_to_file("$dir/users.txt", join('', map { qq{"$_" ""\n} } @users));
	PostgreSQL::Test::Utils::append_to_file("$dir/pgbouncer.ini", <<"INI");
[databases]
postgres = host=@{[ $node->host ]} port=@{[ $node->port ]} dbname=postgres

[pgbouncer]
listen_addr =
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = $pool
max_db_connections = $pool
max_client_conn = 200
logfile = $PostgreSQL::Test::Utils::log_path/${test}_$name.log
pidfile = $dir/pgbouncer.pid
INI
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		# (the child leaves by _exit: die would run the test's END blocks here)
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', '/dev/null');
		exec($pgbouncer, "$dir/pgbouncer.ini") or print STDERR "exec $pgbouncer: $!\n";
		POSIX::_exit(127);
	}
	my $via = "host=$dir port=$port dbname=postgres";
	my $deadline = time() + 30;
	usleep(50_000)
	  while system('psql', '-X', '-q', '-d', "$via user=$users[0]", '-c', 'SELECT 1', '-o', '/dev/null') != 0
	  && time() < $deadline;
	return { pid => $pid, via => $via };
}

# Stop what start_pgbouncer() started, if it still runs.
sub stop_pgbouncer
{
	my ($bouncer) = @_;
	my $pid = $bouncer ? $bouncer->{pid} : undef;

	return unless $pid && waitpid($pid, POSIX::WNOHANG()) == 0;
	kill 'TERM', $pid;
	my $deadline = time() + 20;
	usleep(50_000) while waitpid($pid, POSIX::WNOHANG()) == 0 && time() < $deadline;
	if (waitpid($pid, POSIX::WNOHANG()) == 0) { kill 'KILL', $pid; waitpid($pid, 0); }
}

# ---- worker-id leases ------------------------------------------------------

# A coordinator: a plain server (no preload needed) set up by
# lease_coordinator_setup.
sub lease_coordinator
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(utf8_init());
	$node->start;
	lease_coordinator_setup($node);
	return $node;
}

# Make the running primary $node a coordinator: the extension, and a role
# "fleet" that may only execute the lease functions.  The one place that
# knows what the fleet's role needs (a server managed by other software,
# Patroni say, is set up through it too).  The test clusters log every
# statement: the fleet's sessions must not log their parameters (the lease
# secret), or the lease client sends none.
sub lease_coordinator_setup
{
	my ($node) = @_;

	$node->safe_psql('postgres', q{
		CREATE EXTENSION snowflake;
		CREATE ROLE fleet LOGIN;
		ALTER ROLE fleet SET log_parameter_max_length = 0;
		GRANT EXECUTE ON FUNCTION
			snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint),
			snowflake_lease_renew(integer, text[], bytea, integer, bigint),
			snowflake_lease_release(integer, text[], bigint) TO fleet;});
}

# An issuing server that leases its worker id from $coordinator, with a TTL
# of 2 s unless $conf says otherwise.  $coordinator may be a list (an array
# reference) of the members of an HA coordinator: the server then connects
# to whichever of them takes writes.  The caller starts it.
sub lease_node
{
	my ($name, $coordinator, $conf, %init) = @_;
	my @members = ref($coordinator) eq 'ARRAY' ? @$coordinator : ($coordinator);
	my $conninfo = 'host=' . join(',', map { $_->host } @members)
	  . ' port=' . join(',', map { $_->port } @members)
	  . ' dbname=postgres user=fleet'
	  . (@members > 1 ? ' target_session_attrs=read-write' : '');

	return snowflake_node($name,
		"snowflake.lease_conninfo = '$conninfo'\nsnowflake.lease_ttl_ms = 2000\n"
		  . ($conf // ''), %init);
}

# Wait until $node holds a lease; returns its worker id.
sub wait_for_lease
{
	my ($node) = @_;

	$node->poll_query_until('postgres',
		q{SELECT lease_state = 'held' AND worker_id IS NOT NULL FROM snowflake_stats})
	  or die $node->name . ' got no lease: '
	  . $node->safe_psql('postgres', 'SELECT lease_state FROM snowflake_stats');
	return $node->safe_psql('postgres', 'SELECT worker_id FROM snowflake_stats');
}

# The postmaster of a running node and all its children (each is its own
# process-group leader, so they are found by parent).
sub server_pids
{
	my ($node) = @_;
	my $postmaster = $node->{_pid};
	my @pids = ($postmaster);

	for my $stat (glob('/proc/[0-9]*/stat'))
	{
		open(my $fh, '<', $stat) or next;
		my $line = <$fh>;
		close($fh);
		push @pids, $1
		  if defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $postmaster;
	}
	return @pids;
}

# Freeze a server as a paused VM would be, and wake it; the monotonic clock
# runs on meanwhile.
sub freeze_server
{
	my ($node) = @_;
	my @pids = server_pids($node);

	kill 'STOP', @pids;
	return \@pids;
}

sub thaw_server
{
	my ($pids) = @_;

	kill 'CONT', @$pids;
}

# Start pgbench on database $db of $node running $script (its text) with
# $clients clients for up to 10 minutes, @opts added (-R 150, say); returns
# a handle for stop_pgbench().
sub start_pgbench
{
	my ($node, $db, $script, $clients, @opts) = @_;
	my ($fh, $file) = File::Temp::tempfile(DIR => PostgreSQL::Test::Utils::tempdir, SUFFIX => '.sql');
	print $fh $script;
	close($fh);
	my %b = (out => '', err => '');
	$b{h} = IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, '-T', '600',
			'-c', $clients, '-j', $clients, @opts, '-f', $file, $db ],
		'>', \$b{out}, '2>', \$b{err});
	return \%b;
}

# 3 pgbench clients running the writer script $writer (150 transactions a
# second in all) and a lock probe on @tables (lock_probe()), on database
# $db; returns their handles, for stop_writers(), once the probe runs.
sub start_writers
{
	my ($node, $db, $writer, @tables) = @_;
	my %b = (
		writers => start_pgbench($node, $db, $writer, 3, '-R', '150'),
		probe => start_pgbench($node, $db, lock_probe(@tables), 1));
	$node->poll_query_until($db, q{SELECT count(*) > 20 FROM shadow.probe_waits WHERE true})
	  or die 'the probe does not run';
	return \%b;
}

# Stop the clients of start_writers() a second later: a test per client,
# which fails if it failed.
sub stop_writers
{
	my ($b) = @_;
	sleep(1);
	for my $name (sort keys %$b)
	{
		my $err = stop_pgbench($b->{$name});
		Test::More::unlike($err, qr/aborted|ERROR/, "no $name client failed") or Test::More::diag($err);
	}
}

# A test that no probe of lock_probe() on database $db waited 2 s.
sub check_probe
{
	my ($node, $db) = @_;
	my ($probes, $longest) = probe_waits($node, $db);
	Test::More::cmp_ok($longest, '<', 2.0, "no writer's lock waited 2 s: longest ${longest} s over $probes probes");
}

# Run the index statements that the online conversion of $table lists.
sub run_pending
{
	my ($node, $db, $table) = @_;
	$node->safe_psql($db,
		"SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = '$table'::regclass \\gexec");
}

# Stop a pgbench of start_pgbench(); returns what it printed on stderr.
sub stop_pgbench
{
	my ($b) = @_;
	$b->{h}->signal('TERM');
	$b->{h}->finish;
	return $b->{err};
}

# A pgbench script that takes ROW EXCLUSIVE locks on @tables, as a writer
# would, every 50 ms, and records how long it waited in
# shadow.probe_waits (seconds float8).
sub lock_probe
{
	my (@tables) = @_;
	return join("\n",
		'SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset', 'BEGIN;',
		(map { "LOCK TABLE $_ IN ROW EXCLUSIVE MODE;" } @tables),
		'INSERT INTO shadow.probe_waits VALUES (extract(epoch FROM clock_timestamp()) - :t0);',
		'COMMIT;', '\sleep 50 ms', '');
}

# Run $sql on database $db of $node in the background, cancel it once the
# query $until returns true, and return what it printed on stderr.
sub cancel_when
{
	my ($node, $db, $sql, $until) = @_;
	my ($out, $err) = ('', '');
	my $h;
	{
		local $ENV{PGAPPNAME} = 'cancel_when';
		$h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr($db), '-c', $sql ], '>', \$out, '2>', \$err);
	}
	$node->poll_query_until($db, $until) or die "never true while $sql ran: $until";
	$node->safe_psql($db, q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'cancel_when'});
	$h->finish;
	return $err;
}

# The number of probes of lock_probe() and the longest wait, in seconds.
sub probe_waits
{
	my ($node, $db) = @_;
	return split /\|/,
	  $node->safe_psql($db, 'SELECT count(*), round(max(seconds)::numeric, 3) FROM shadow.probe_waits');
}

# pg_dump --schema-only of database $db but schema shadow, the columns of
# each table sorted: the online conversion puts the converted columns last.
sub dump_schema
{
	my ($node, $db) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_dump', '--schema-only', '-N', 'shadow', '-d', $node->connstr($db) ], '>', \$out, '2>', \$err)
	  or die "pg_dump failed: $err";
	$out =~ s/^\\(un)?restrict .*$//mg;
	$out =~ s{(CREATE TABLE [^\n]+ \(\n)(.*?)(\n\);)}
			 {$1 . join("\n", sort map { s/,$//r } split(/\n/, $2)) . $3}gse;
	return $out;
}

# Start a client drawing $n ids into $file with COPY; returns the harness.
sub draw_to_file
{
	my ($node, $n, $file) = @_;
	my $stderr = '';

	return IPC::Run::start(
		[
			'psql', '-X', '-d', $node->connstr('postgres'), '-c',
			"COPY (SELECT snowflake_nextval() FROM (SELECT generate_series(1, $n)) s) TO STDOUT"
		],
		'>', $file, '2>', \$stderr);
}

# How many ids appear more than once among the files (one id a line).
sub repeated_ids
{
	my (@files) = @_;
	my $repeats = `LC_ALL=C sort @files | uniq -d | wc -l`;

	chomp $repeats;
	return $repeats + 0;
}

# Make $role log in to $node with a password over the local socket (a rule
# ahead of the trust rules init writes), and reload.
sub require_password
{
	my ($node, $role) = @_;
	my $hba = $node->data_dir . '/pg_hba.conf';
	my $rules = PostgreSQL::Test::Utils::slurp_file($hba);

	open(my $fh, '>', $hba) or die $!;
	print $fh "local all $role scram-sha-256\n$rules";
	close($fh);
	$node->reload;
}

# A password file of one line for libpq: "host:port:db:user:password".
sub write_passfile
{
	my ($path, $line) = @_;

	open(my $fh, '>', $path) or die $!;
	print $fh "$line\n";
	close($fh);
	chmod(0600, $path) or die $!;
}

# A TCP proxy in front of $node's socket, as a man in the middle or a
# packet capture would see the lease calls: it forwards both ways and
# appends what clients send to the file $capture.  While the file $control
# says "lose renew", it drops the server's answers on a connection from
# the first call of snowflake_lease_renew on (the call goes through and
# commits), once, and then writes "lost" into $control.  Returns its port
# and its pid (a child process, ended by the caller or by the test's end).
sub capture_proxy
{
	my ($node, $capture, $control) = @_;
	my $listener = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => 0,
		Listen => 16,
		ReuseAddr => 1) or die "proxy: $!";
	my $port = $listener->sockport;
	my $parent = $$;
	my $pid = fork();

	die "fork: $!" unless defined $pid;
	if ($pid != 0)
	{
		close($listener);
		return ($port, $pid);
	}

	# the child: no END blocks of the test (POSIX::_exit), and a peer gone
	# is no reason to die
	$SIG{PIPE} = 'IGNORE';
	my $select = IO::Select->new($listener);
	my (%peer, %from_client, %dropping);
	open(my $cap, '>>', $capture) or POSIX::_exit(1);
	$cap->autoflush(1);
	my $close = sub {
		my ($s) = @_;
		my $o = $peer{"$s"};
		for my $x (grep { defined } ($s, $o))
		{
			$select->remove($x);
			delete $peer{"$x"};
			delete $from_client{"$x"};
			delete $dropping{"$x"};
			close($x);
		}
	};
	while (getppid() == $parent)
	{
		for my $s ($select->can_read(0.1))
		{
			if ($s == $listener)
			{
				my $c = $listener->accept or next;
				my $u = IO::Socket::UNIX->new(
					Type => SOCK_STREAM,
					Peer => $node->host . '/.s.PGSQL.' . $node->port);
				if (!$u)
				{
					close($c);
					next;
				}
				$peer{"$c"} = $u;
				$peer{"$u"} = $c;
				$from_client{"$c"} = 1;
				$select->add($c, $u);
				next;
			}
			my $buf;
			my $n = sysread($s, $buf, 65536);
			if (!$n)
			{
				$close->($s);
				next;
			}
			my $o = $peer{"$s"};
			if ($from_client{"$s"})
			{
				print $cap $buf;
				if ($buf =~ /snowflake_lease_renew/ && -e $control
					&& PostgreSQL::Test::Utils::slurp_file($control) =~ /^lose renew/)
				{
					$dropping{"$o"} = 1;
					open(my $fh, '>', $control) or POSIX::_exit(1);
					print $fh "lost\n";
					close($fh);
				}
			}
			elsif ($dropping{"$s"})
			{
				next;
			}
			while (length($buf) > 0)
			{
				my $w = syswrite($o, $buf);
				last unless defined $w && $w > 0;
				substr($buf, 0, $w) = '';
			}
		}
	}
	POSIX::_exit(0);
}


# The public ids of ids 1..1000 spread over the id range, as "id|public"
# lines joined by commas, made by $node.
my $public_id_sample = 'SELECT g * 9223372036854774 + g AS id FROM generate_series(1::bigint, 1000) g';
sub public_id_pairs
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(id || '|' || snowflake_public_id(id), ',' ORDER BY id) FROM ($public_id_sample) s");
}

# How many of "id|public" pairs $node decodes back to their ids
sub decoded_pairs
{
	my ($node, $pairs) = @_;
	my $values = join(',', map { my ($i, $p) = split /\|/; "($i, '$p')" } split /,/, $pairs);
	return $node->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE snowflake_id_from_public(p) = i) FROM (VALUES $values) v(i, p)");
}

1;
