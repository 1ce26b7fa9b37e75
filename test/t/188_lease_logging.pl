# No lease secret in the coordinator's log.  The lease client reads the
# settings of its coordinator session before every call, and sends no
# secret to a session that would log the parameters of its statements
# (the test clusters log every statement): the issuing server says why and
# how to fix it for the fleet's role, and leases once that is done.  A
# reload of the coordinator's configuration that would log a failed call's
# parameters stops the next renewal, until it is undone.  (Under 0.3.0 the
# secret was in the log with every call, and one read from it, with the
# fleet's login, released a live lease: duplicates.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Utils;
use Test::More;
use SnowflakeTest;

my $coordinator = lease_coordinator('coordinator');
# the fleet's role as a new user's would be: no setting of its own
$coordinator->safe_psql('postgres', 'ALTER ROLE fleet RESET log_parameter_max_length');
is($coordinator->safe_psql('postgres', 'SHOW log_statement'), 'all', 'the coordinator logs every statement');

my $a = lease_node('a', $coordinator, "snowflake.lease_worker_ids = '7'\n");
$a->start;
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
my $secret_like = qr/\b[0-9a-f]{32}\b/;

# 1. Refused while the coordinator would log the parameters.
$a->poll_query_until('postgres', q{SELECT lease_state = 'refused' FROM snowflake_stats})
  or die 'server a is not refused by a coordinator that logs every statement';
my $where = $coordinator->host . ':' . $coordinator->port . '/postgres';
like(slurp_file($a->logfile),
	qr/LOG:  the snowflake lease coordinator \Q$where\E would log the lease secret: log_statement = all\n.*DETAIL:  No secret is sent to it, so no lease is claimed, renewed or released there\.\n.*HINT:  As a superuser on the coordinator, run ALTER ROLE fleet SET log_parameter_max_length = 0; the lease client's next session takes it\./s,
	'a coordinator that logs every statement is refused: the log says why, and how to fix it for the role');
like(psql_stderr($a, 'SELECT snowflake_nextval()'),
	qr/ERROR:  55000: snowflake_nextval\(\) has no worker id: the lease coordinator refused the claim\n.*DETAIL:  Since .*: the coordinator would log the lease secret: log_statement = all/s,
	'calls issue nothing, and say why');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM snowflake_lease'), '0', 'no lease was claimed');
like(slurp_file($coordinator->logfile), qr/current_setting\(s.name, true\)/, 'the coordinator logs the client\'s questions');
unlike(slurp_file($coordinator->logfile), $secret_like, 'and nothing like a secret');

# 2. The hint applied: a lease, statements still logged but not their
# parameters.
$coordinator->safe_psql('postgres', 'ALTER ROLE fleet SET log_parameter_max_length = 0');
is(wait_for_lease($a), 7, 'with the hint applied, server a leases worker id 7');
my $requests = $a->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats');
$a->poll_query_until('postgres', "SELECT lease_requests >= $requests + 3 FROM snowflake_stats")
  or die 'server a does not renew';
like(slurp_file($coordinator->logfile), qr/snowflake_lease_renew/, 'the coordinator logs the renewals');
unlike(slurp_file($coordinator->logfile), $secret_like, 'and nothing like a secret');

# 3. A reload that would log the parameters of a failed call: the next
# renewal is not made, and says why; undone, the renewals go on.
my $log_at = -s $a->logfile;
$coordinator->safe_psql('postgres', q{
	ALTER SYSTEM SET log_parameter_max_length_on_error = -1;
	SELECT pg_reload_conf();});
$a->wait_for_log(qr/would log the lease secret: log_parameter_max_length_on_error = -1\n.*HINT:  As a superuser on the coordinator, run ALTER ROLE fleet SET log_parameter_max_length_on_error = 0;/s,
	$log_at);
pass('a reload on the coordinator stops the next renewal, which says why');
$coordinator->safe_psql('postgres', q{
	ALTER SYSTEM RESET log_parameter_max_length_on_error;
	SELECT pg_reload_conf();});
$requests = $a->safe_psql('postgres', 'SELECT lease_requests FROM snowflake_stats');
$a->poll_query_until('postgres', "SELECT lease_requests >= $requests + 3 AND lease_state = 'held' AND worker_id = 7 FROM snowflake_stats")
  or die 'server a does not renew again';
pass('undone, the renewals go on, with the same lease');
unlike(slurp_file($coordinator->logfile), $secret_like, 'the coordinator\'s log holds nothing like a secret');
is($a->safe_psql('postgres', 'SELECT count(DISTINCT x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, 1000)) s'),
	'1000', 'server a issues ids');

$a->stop;
$coordinator->stop;
done_testing();
