/*-------------------------------------------------------------------------
 *
 * decision_test.c
 *	  Unit test of the generator's state machine (src/decision.c), built
 *	  without a server.
 *
 * First a table of cases, one per outcome.  Then a model of one node driven
 * through a simulated clock that runs, stalls, steps back a little and a
 * lot, jumps ahead and crashes, under random layouts up to the widest the
 * parser accepts (31 bits of node or sequence, 64-bit layouts, ticks up to
 * an hour, lifetimes to the limit of PostgreSQL's timestamps), with batches
 * of up to 2^31 ids.  The model acts on each decision as generator.c does,
 * and checks after every step what the generator promises: each id above
 * the one before (across crashes too), its node field intact, its tick in
 * the layout's lifetime, below the mark, not ahead of the clock unless
 * borrowed and then within the bound; refusals only for a clock behind by
 * more than the tolerance; the count of ids exact.
 *
 *   decision_test [seed [layouts]]
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <math.h>
#include <time.h>

#include "decision.h"
#include "unit.h"

/* uniform in [low, high] */
static int64
rng_range(int64 low, int64 high)
{
	return low + (int64) (rng() % (uint64) (high - low + 1));
}

static SnowflakeLayout
make_layout(int time_bits, int node_bits, int sequence_bits, bool sequence_last,
			int tick_ms, int64 epoch_ms)
{
	SnowflakeLayout l;

	memset(&l, 0, sizeof(l));
	strcpy(l.name, "test");
	l.time_bits = time_bits;
	l.node_bits = node_bits;
	l.sequence_bits = sequence_bits;
	l.sequence_last = sequence_last;
	l.tick_ms = tick_ms;
	l.epoch_ms = epoch_ms;
	l.nparts = 1;
	l.part_bits[0] = node_bits;
	return l;
}

/* A layout the parser would accept, favouring the widest fields. */
static SnowflakeLayout
random_layout(void)
{
	for (;;)
	{
		int			total = rng_range(63, 64);
		int			node = rng() % 3 == 0 ? 31 : (int) rng_range(1, 31);
		int			sequence = rng() % 3 == 0 ? 31 : (int) rng_range(1, 31);
		int			time = total - node - sequence;
		int			tick = rng() % 2 ? 1 : (int) rng_range(1, 3600000);
		int64		epoch = rng_range(0, INT64CONST(2000000000000));

		if (time < 1)
			continue;
		/* the parser's bound: every tick a time PostgreSQL can show */
		if (ldexp((double) tick, time) + (double) epoch > 9.0e15)
			continue;
		return make_layout(time, node, sequence, rng() % 2, tick, epoch);
	}
}

/* ---- the table of cases ------------------------------------------------ */

static void
test_cases(void)
{
	SnowflakeLayout l = make_layout(41, 10, 12, true, 1, 1000000);
	GenSituation s;
	GenDecision d;
	uint64		node_bits = (uint64) 7 << 12;

	memset(&s, 0, sizeof(s));
	s.layout = &l;
	s.mark_tick = 1000000;
	s.horizon_tick = SnowflakeMaxTick(&l) + 1;
	s.tolerance_ms = 5;

	/* the clock in a later tick: sequence 0 of the clock's tick */
	s.next = ((uint64) 100 << 22) | node_bits | 5;
	s.now_ms = 1000000 + 150;
	s.clock_then_ms = 1000000 + 100;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_ISSUE && d.tick == 150 && !d.borrowed &&
		  d.first == (((uint64) 150 << 22) | node_bits), "new tick");

	/* the same tick: next itself */
	s.now_ms = 1000000 + 100;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_ISSUE && d.first == s.next, "same tick");

	/* sequence used up: next is sequence 0 of tick 101, the clock in 100 */
	s.next = ((uint64) 101 << 22) | node_bits;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_WAIT_TICK && d.wait_until_ms == 1000000 + 101, "used up");

	/* ... unless borrowing allows tick 101, 1 ms ahead */
	s.max_borrow_ms = 1;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_ISSUE && d.borrowed && d.tick == 101, "borrowed");

	/* ... but never right after a start-up */
	s.restarted = true;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_WAIT_TICK, "no borrowing after a start-up");
	s.restarted = false;
	s.max_borrow_ms = 0;

	/* a step back within the tolerance is waited out */
	s.next = ((uint64) 100 << 22) | node_bits | 3;
	s.clock_then_ms = 1000000 + 100;
	s.now_ms = 1000000 + 97;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_WAIT_CLOCK && d.wait_until_ms == 1000000 + 100 &&
		  d.behind_ms == 3, "small step back");

	/* beyond it, refused */
	s.now_ms = 1000000 + 94;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_REFUSE_ROLLBACK && d.behind_ms == 6, "large step back");

	/* a tick at the mark needs the mark first */
	s.now_ms = 1000000 + 150;
	s.mark_tick = 150;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_NEED_MARK && d.tick == 150, "mark");

	/* a tick at a lease's horizon needs the horizon first, mark or not */
	s.horizon_tick = 150;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_NEED_HORIZON && d.tick == 150, "horizon at the mark");
	s.mark_tick = 1000000;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_NEED_HORIZON && d.tick == 150, "horizon below the mark");
	s.horizon_tick = 151;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_ISSUE && d.tick == 150, "below the horizon");
	s.horizon_tick = SnowflakeMaxTick(&l) + 1;

	/* before the epoch, and past the lifetime */
	s.mark_tick = INT64CONST(1) << 50;
	s.now_ms = 999999;
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_REFUSE_RANGE, "before the epoch");
	s.now_ms = 1000000 + (INT64CONST(1) << 41);
	GenDecide(&s, &d);
	CHECK(d.outcome == GEN_REFUSE_RANGE, "past the end");

	/* GenAfter: a tick used up moves next to the next tick's sequence 0 */
	CHECK(GenAfter(&l, ((uint64) 9 << 22) | node_bits | 4090, 6) ==
		  (((uint64) 10 << 22) | node_bits), "GenAfter at the end of a tick");
	CHECK(GenAfter(&l, ((uint64) 9 << 22) | node_bits | 4090, 5) ==
		  (((uint64) 9 << 22) | node_bits | 4095), "GenAfter within a tick");
}

/* ---- the tick, limit and layout helpers --------------------------------- */

static void
test_helpers(void)
{
	SnowflakeLayout ms = make_layout(41, 10, 12, true, 1, 1000000);
	SnowflakeLayout tens = make_layout(41, 10, 12, true, 10, 1000000);
	SnowflakeLayout small = make_layout(20, 10, 12, true, 1, 1000000);

	/* the first tick starting at or after a time */
	CHECK(GenFirstTickAt(&tens, 1000000 + 20) == 2, "a tick's start");
	CHECK(GenFirstTickAt(&tens, 1000000 + 21) == 3, "inside a tick");
	CHECK(GenFirstTickAt(&tens, 1000000 - 5) == 0, "before the epoch");

	/* limits stay within 0 .. the last tick + 1 */
	CHECK(GenLimitTick(&ms, 0) == 0, "a limit before the epoch");
	CHECK(GenLimitTick(&small, 1000000 + (INT64CONST(1) << 30)) ==
		  SnowflakeMaxTick(&small) + 1, "a limit past the lifetime");
	CHECK(GenLimitTick(&ms, 1000000 + 7) == 7, "a limit inside the lifetime");

	/* the common path's margin: a quarter of the interval */
	CHECK(GenFastLimitMs(5000, 1000) == 4750, "a quarter short");

	/* a layout change keeps ids increasing only if the new ids sort above */
	CHECK(GenLayoutFollows(&ms, &ms, 1000000 + 500), "the same layout follows");
	CHECK(GenLayoutFollows(&tens, &ms, 1000000 + 500), "shorter ticks follow");
	CHECK(!GenLayoutFollows(&ms, &tens, 1000000 + 500), "longer ticks do not");
	CHECK(!GenLayoutFollows(&tens, &small, 1000000 + (INT64CONST(1) << 25)),
		  "a layout past its lifetime does not");
	CHECK(GenLayoutFollows(&tens, &small, 1000000 - 1),
		  "nothing issued: anything follows");
}

/* ---- the model ---------------------------------------------------------- */

typedef struct Model
{
	const SnowflakeLayout *l;
	int32		node_value;

	/* the node, as generator.c keeps it */
	uint64		next;
	uint64		ids_before;
	uint64		slow_next;
	int64		slow_clock_ms;
	uint64		floor;
	bool		has_floor;

	/* the mark, as generator.c publishes it */
	int64		interval_ms;
	int64		mark_ms;
	int64		mark_tick;
	int64		fast_limit;
	int64		written_ms;		/* the clock when the mark was written */
	int64		floor_ms;		/* the mark found at the last start-up */

	/* the world */
	int64		clock_ms;
	int64		max_borrow_ms;
	int64		tolerance_ms;

	/* what the checks need */
	bool		issued_any;
	uint64		last_id;
	int64		issued_since_start;
	int64		issued_total;
} Model;

static void
publish_mark(Model *m, int64 mark_ms)
{
	m->written_ms = m->clock_ms;
	m->mark_ms = mark_ms;
	m->mark_tick = GenLimitTick(m->l, mark_ms);
	m->fast_limit = GenLimitTick(m->l, GenFastLimitMs(mark_ms, m->interval_ms));
}

static void
advance(Model *m, uint64 after, int64 count)
{
	m->ids_before += GenCountedBefore(m->l, m->next, after, count);
	m->next = after;
}

static void
check_id(Model *m, uint64 first, int64 n, int64 tick, bool borrowed)
{
	const SnowflakeLayout *l = m->l;
	uint64		last = first + (uint64) (n - 1) * (uint64) SnowflakeSequenceStep(l);
	SnowflakeFields f;

	CHECK(n >= 1 && n <= GenRoomAt(l, first), "n %lld", (long long) n);
	CHECK(!m->issued_any || first > m->last_id, "id %llu not above %llu",
		  (unsigned long long) first, (unsigned long long) m->last_id);
	CHECK(GenTickOf(l, first) == tick && GenTickOf(l, last) == tick, "one tick");
	CHECK(tick >= 0 && tick <= SnowflakeMaxTick(l), "tick %lld in the lifetime",
		  (long long) tick);
	CHECK(tick < m->mark_tick, "tick %lld below the mark %lld",
		  (long long) tick, (long long) m->mark_tick);
	CHECK((int64) last >= 0 || l->time_bits + SnowflakeTimeShift(l) == 64,
		  "positive in a 63-bit layout");
	if (borrowed)
		CHECK(SnowflakeTickStart(l, tick) - m->clock_ms <= m->max_borrow_ms,
			  "borrowed within the bound");
	else
		CHECK(tick == SnowflakeTickOf(l, m->clock_ms), "the clock's tick");
	memset(&f, 0, sizeof(f));
	f.node = (int32) ((last >> (l->sequence_last ? l->sequence_bits : 0)) &
					  (uint64) SnowflakeMaxNode(l));
	CHECK(f.node == m->node_value, "node %d kept", m->node_value);
	m->issued_any = true;
	m->last_id = last;
	m->issued_since_start += n;
	m->issued_total += n;
}

/*
 * One call, as GeneratorReserve makes it: the common path, else decisions
 * until an id is issued or the call is refused.  Waits move the simulated
 * clock.  Returns the final outcome.
 */
static GenOutcome
model_call(Model *m, int64 count)
{
	const SnowflakeLayout *l = m->l;

	for (int round = 0; round < 1000; round++)
	{
		int64		now = SnowflakeTickOf(l, m->clock_ms);
		int64		next_tick = GenTickOf(l, m->next);
		GenSituation s;
		GenDecision d;

		if (m->clock_ms >= l->epoch_ms && now >= next_tick && now < m->fast_limit)
		{
			uint64		at = now > next_tick ? GenStartOfTick(l, m->next, now) : m->next;
			int64		n = Min(count, GenRoomAt(l, at));

			check_id(m, at, n, now, false);
			advance(m, GenAfter(l, at, n), n);
			return GEN_ISSUE;
		}

		memset(&s, 0, sizeof(s));
		s.layout = l;
		s.now_ms = m->clock_ms;
		s.next = m->next;
		s.restarted = m->has_floor && m->next == m->floor;
		s.clock_then_ms = m->next == m->slow_next ? m->slow_clock_ms :
			SnowflakeTickStart(l, GenLastTick(l, m->next));
		s.mark_tick = m->mark_tick;
		s.horizon_tick = SnowflakeMaxTick(l) + 1;	/* no lease */
		s.max_borrow_ms = m->max_borrow_ms;
		s.tolerance_ms = m->tolerance_ms;
		GenDecide(&s, &d);

		switch (d.outcome)
		{
			case GEN_ISSUE:
				{
					int64		n = Min(count, GenRoomAt(l, d.first));
					uint64		after = GenAfter(l, d.first, n);

					CHECK(d.first >= m->next, "issue at next or above");
					check_id(m, d.first, n, d.tick, d.borrowed);
					advance(m, after, n);
					m->slow_next = after;
					m->slow_clock_ms = m->clock_ms;
					return GEN_ISSUE;
				}
			case GEN_WAIT_TICK:
			case GEN_WAIT_CLOCK:
				CHECK(d.wait_until_ms > m->clock_ms, "a wait ends later");
				CHECK(d.outcome == GEN_WAIT_TICK || d.behind_ms <= m->tolerance_ms,
					  "waits only within the tolerance");
				m->clock_ms = d.wait_until_ms;
				continue;
			case GEN_NEED_MARK:
				{
					int64		mark = GenMarkTargetMs(l, m->clock_ms, m->interval_ms, d.tick);

					publish_mark(m, Max(mark, m->mark_ms));
					continue;
				}
			case GEN_NEED_HORIZON:
				CHECK(false, "a horizon without a lease");
				return d.outcome;
			case GEN_REFUSE_ROLLBACK:
				CHECK(d.behind_ms > m->tolerance_ms && s.clock_then_ms > m->clock_ms,
					  "refused only beyond the tolerance");
				return d.outcome;
			case GEN_REFUSE_RANGE:
				CHECK(m->clock_ms < l->epoch_ms || d.tick > SnowflakeMaxTick(l),
					  "out of range only outside the lifetime");
				return d.outcome;
		}
	}
	CHECK(false, "a call that never ends");
	return GEN_REFUSE_RANGE;
}

/*
 * Start-up, as gen_load_mark does it: every id below the mark, or (clean)
 * below the start of next's tick or the one after.
 */
static void
model_restart(Model *m, bool clean)
{
	const SnowflakeLayout *l = m->l;
	int64		mark_ms = m->mark_ms;
	int64		written_ms = m->written_ms;
	uint64		floor;

	if (mark_ms == 0)
		return;					/* nothing was ever written, nor issued */
	if (clean)
	{
		mark_ms = Max(m->floor_ms, SnowflakeTickStart(l, GenEndTick(l, m->next)));
		written_ms = m->clock_ms;
	}
	floor = GenStartOfTick(l, m->next, GenLimitTick(l, mark_ms));
	m->next = m->floor = m->slow_next = floor;
	m->has_floor = true;
	m->slow_clock_ms = Min(written_ms, mark_ms);
	m->ids_before = 0;
	m->issued_since_start = 0;
	m->floor_ms = mark_ms;
	publish_mark(m, mark_ms);
	m->written_ms = written_ms;
}

static void
model_run(const SnowflakeLayout *l, int steps)
{
	Model		m;
	int64		span = SnowflakeLastMs(l) - l->epoch_ms;
	int64		tick = l->tick_ms;

	memset(&m, 0, sizeof(m));
	m.l = l;
	m.node_value = (int32) rng_range(0, SnowflakeMaxNode(l));
	m.next = (uint64) SnowflakeCompose(l, 0, m.node_value, 0);
	m.interval_ms = rng_range(10, 60000);
	m.max_borrow_ms = rng() % 2 ? 0 : rng_range(1, 60000);
	m.tolerance_ms = rng_range(0, 10000);

	/* somewhere in the lifetime, often near its end */
	switch (rng() % 3)
	{
		case 0:
			m.clock_ms = l->epoch_ms + rng_range(0, 100 * tick);
			break;
		case 1:
			m.clock_ms = l->epoch_ms + rng_range(0, span);
			break;
		default:
			m.clock_ms = SnowflakeLastMs(l) - rng_range(0, 50 * tick);
			break;
	}

	for (int i = 0; i < steps; i++)
	{
		int64		count;
		GenOutcome outcome;

		/* the world moves */
		switch (rng() % 16)
		{
			case 0:				/* a small step back */
				m.clock_ms = Max(l->epoch_ms,
								 m.clock_ms - rng_range(1, Max(1, m.tolerance_ms)));
				break;
			case 1:				/* a large one */
				m.clock_ms = Max(l->epoch_ms,
								 m.clock_ms - rng_range(m.tolerance_ms + 1,
														m.tolerance_ms + 10 * tick));
				break;
			case 2:
				m.clock_ms += rng_range(1, 100 * tick);		/* a jump ahead */
				break;
			case 3:
				model_restart(&m, rng() % 2);
				break;
			case 4:
				m.max_borrow_ms = rng() % 2 ? 0 : rng_range(1, 60000);
				break;
			default:
				m.clock_ms += rng_range(0, 2 * tick);	/* time runs */
				break;
		}

		/* a call: one id, a tick's worth, or a batch of up to 2^31 */
		switch (rng() % 4)
		{
			case 0:
				count = rng_range(1, PG_INT32_MAX);
				break;
			case 1:
				count = rng_range(1, 64);
				break;
			default:
				count = 1;
				break;
		}
		outcome = model_call(&m, count);
		CHECK((int64) m.ids_before + GenSequenceOf(l, m.next) == m.issued_since_start,
			  "ids counted exactly: %lld + %lld against %lld",
			  (long long) m.ids_before, (long long) GenSequenceOf(l, m.next),
			  (long long) m.issued_since_start);
		if (outcome == GEN_REFUSE_RANGE)
			break;
		if (outcome == GEN_REFUSE_ROLLBACK)
			m.clock_ms += m.tolerance_ms + 10 * tick + 1;	/* NTP puts it right */
	}
}

int
main(int argc, char **argv)
{
	uint64		seed = argc > 1 ? strtoull(argv[1], NULL, 10) : (uint64) time(NULL);
	int			layouts = argc > 2 ? atoi(argv[2]) : 3000;
	SnowflakeLayout presets[] = {
		make_layout(41, 10, 12, true, 1, INT64CONST(1735689600000)),
		make_layout(42, 10, 12, true, 1, INT64CONST(1420070400000)),
		make_layout(41, 13, 10, true, 1, INT64CONST(1314220021721)),
		make_layout(39, 16, 8, false, 10, INT64CONST(1735689600000)),
		make_layout(22, 10, 31, true, 3600000, INT64CONST(1735689600000)),
	};

	printf("decision_test: seed %llu, %d random layouts\n",
		   (unsigned long long) seed, layouts);
	rng_state = seed;

	test_cases();
	test_helpers();
	for (int i = 0; i < (int) lengthof(presets); i++)
		model_run(&presets[i], 20000);
	for (int i = 0; i < layouts; i++)
	{
		SnowflakeLayout l = random_layout();

		model_run(&l, 2000);
	}

	if (failures > 0)
	{
		printf("decision_test: %d checks failed (seed %llu)\n", failures,
			   (unsigned long long) seed);
		return 1;
	}
	printf("decision_test: all checks passed\n");
	return 0;
}
