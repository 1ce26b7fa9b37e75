EXTENSION = snowflake
EXTVERSION = 0.2.0

MODULE_big = snowflake
OBJS = src/snowflake.o src/layout.o src/generator.o src/mark.o src/functions.o src/uuidv7.o

DATA = $(wildcard sql/$(EXTENSION)--*.sql)

PG_CPPFLAGS = -DSNOWFLAKE_VERSION=\"$(EXTVERSION)\"
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes
ifeq ($(WERROR),1)
PG_CFLAGS += -Werror
endif

# Every suite runs on a temporary instance with the library preloaded.
TEST_CONF = $(CURDIR)/test/snowflake.conf

REGRESS = layout layouts api errors reserved_prefix shards uuidv7 convert upgrade
REGRESS_OPTS = --temp-instance=tmp_regress --temp-config=$(TEST_CONF)

ISOLATION = concurrent shards_concurrent uuidv7_concurrent causal_order
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_isolation \
	--temp-config=$(TEST_CONF)

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

EXTRA_CLEAN = tmp_regress tmp_isolation output_iso results regression.diffs \
	regression.out

# Nothing here gains from JIT inlining, and bitcode needs a clang matching
# the server's LLVM.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
