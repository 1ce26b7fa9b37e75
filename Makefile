EXTENSION = snowflake
EXTVERSION = 0.4.0

MODULE_big = snowflake
OBJS = src/snowflake.o src/layout.o src/decision.o src/config.o src/generator.o src/mark.o \
	src/markwriter.o src/lease.o src/functions.o src/uuidv7.o \
	src/ff1.o src/idtext.o src/publicid.o src/convert.o src/asowner.o src/leaselog.o src/leasechain.o src/keywrap.o \
	src/rootkey.o src/keyfile.o src/leasecoord.o

# The install script is assembled from one file per concern (sql/install/),
# in this order; the upgrade scripts are kept by hand, each frozen at its
# release.
INSTALL_PARTS = sql/install/core.sql sql/install/convert.sql sql/install/lease.sql \
	sql/install/publicid.sql sql/install/convert_online.sql sql/install/schema_check.sql
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql))

PG_CPPFLAGS = -DSNOWFLAKE_VERSION=\"$(EXTVERSION)\" -I$(libpq_srcdir)
# the lease client talks to the coordinator with libpq, as postgres_fdw does
SHLIB_LINK_INTERNAL = $(libpq)
# AES for the public ids' FF1 (src/ff1.c), from OpenSSL's libcrypto as the
# server's own pgcrypto and SSL use it (libssl-dev for the headers)
SHLIB_LINK += -lcrypto
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes
ifeq ($(WERROR),1)
PG_CFLAGS += -Werror
endif

# Every suite runs on a temporary instance with the library preloaded.
TEST_CONF = $(CURDIR)/test/snowflake.conf

REGRESS = layout layouts api errors reserved_prefix shards uuidv7 convert leases publicid \
	upgrade convert_online planted
# UTF-8, so that messages are converted for clients of other encodings
REGRESS_OPTS = --temp-instance=tmp_regress --temp-config=$(TEST_CONF) --encoding=UTF8

ISOLATION = concurrent shards_concurrent uuidv7_concurrent many_sessions \
	convert_race causal_order public_keys lease_claims
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_isolation \
	--temp-config=$(TEST_CONF) --encoding=UTF8

# The generator's state machine, unit-tested without a server
# (test/unit/decision_test.c): make unitcheck.
UNIT_TEST = test/unit/decision_test
# FF1 against NIST's sample vectors, and the text forms of ids
# (test/unit/ff1_test.c)
FF1_TEST = test/unit/ff1_test
# The lease client's check of the coordinator's logging settings
# (test/unit/leaselog_test.c)
LEASELOG_TEST = test/unit/leaselog_test
# The lease client's chain of secrets (test/unit/leasechain_test.c)
LEASECHAIN_TEST = test/unit/leasechain_test
# AES key wrap with padding, against RFC 5649's samples
# (test/unit/keywrap_test.c)
KEYWRAP_TEST = test/unit/keywrap_test

TAP_TESTS = 1
# The longest files first (in CI's runs), so that the three run at a time
# end together rather than behind the last long one.
TAP_FIRST = test/t/250_convert_online.pl test/t/220_ha_coordinator.pl \
	test/t/185_lease_fencing.pl test/t/040_configuration.pl test/t/190_lease_edges.pl \
	test/t/187_lease_trust.pl test/t/130_mark_writer.pl
PROVE_TESTS = $(TAP_FIRST) $(filter-out $(TAP_FIRST),$(sort $(wildcard test/t/*.pl)))

EXTRA_CLEAN = tmp_regress tmp_isolation output_iso results regression.diffs \
	regression.out $(UNIT_TEST) $(FF1_TEST) $(LEASELOG_TEST) \
	$(LEASECHAIN_TEST) $(KEYWRAP_TEST)

# Nothing here gains from JIT inlining, and bitcode needs a clang matching
# the server's LLVM.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The TAP files mostly wait (restarts, TTLs, clock steps): three at a time,
# each on servers of its own (after PGXS, which sets it empty).
PROVE_FLAGS = -j3 --timer

$(UNIT_TEST): test/unit/decision_test.c test/unit/unit.h src/decision.c src/decision.h src/layout.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(srcdir)/test/unit -I$(includedir_server) -I$(includedir) \
		-o $@ test/unit/decision_test.c src/decision.c -L$(pkglibdir) -lpgcommon -lpgport -lm

$(FF1_TEST): test/unit/ff1_test.c test/unit/unit.h src/ff1.c src/ff1.h src/idtext.c src/idtext.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(srcdir)/test/unit -I$(includedir_server) -I$(includedir) \
		-o $@ test/unit/ff1_test.c src/ff1.c src/idtext.c -L$(pkglibdir) -lpgcommon -lpgport -lcrypto -lm

$(LEASELOG_TEST): test/unit/leaselog_test.c test/unit/unit.h src/leaselog.c src/leaselog.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(srcdir)/test/unit -I$(includedir_server) -I$(includedir) \
		-o $@ test/unit/leaselog_test.c src/leaselog.c -L$(pkglibdir) -lpgcommon -lpgport -lm

$(LEASECHAIN_TEST): test/unit/leasechain_test.c test/unit/unit.h src/leasechain.c src/leasechain.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(srcdir)/test/unit -I$(includedir_server) -I$(includedir) \
		-o $@ test/unit/leasechain_test.c src/leasechain.c -L$(pkglibdir) -lpgcommon -lpgport -lcrypto -lm

$(KEYWRAP_TEST): test/unit/keywrap_test.c test/unit/unit.h src/keywrap.c src/keywrap.h
	$(CC) $(CFLAGS) -DFRONTEND -I$(srcdir)/src -I$(srcdir)/test/unit -I$(includedir_server) -I$(includedir) \
		-o $@ test/unit/keywrap_test.c src/keywrap.c -L$(pkglibdir) -lpgcommon -lpgport -lcrypto -lm

# (a blank line between two parts)
$(DATA_built): $(INSTALL_PARTS)
	awk 'FNR == 1 && NR != 1 { print "" } { print }' $^ > $@

.PHONY: unitcheck
unitcheck: $(UNIT_TEST) $(FF1_TEST) $(LEASELOG_TEST) $(LEASECHAIN_TEST) $(KEYWRAP_TEST)
	./$(UNIT_TEST)
	./$(FF1_TEST)
	./$(LEASELOG_TEST)
	./$(LEASECHAIN_TEST)
	./$(KEYWRAP_TEST)
