/*-------------------------------------------------------------------------
 *
 * decision.c
 *	  What a call must do when the common path cannot issue its id: the
 *	  generator's state machine, as one pure function.
 *
 * Built into the extension and, with FRONTEND defined, into the unit test,
 * which drives it through clock steps and layouts of every width.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "decision.h"

/*
 * Decide from the clock and the node's state.  In order:
 *
 * - the clock before the epoch: out of range;
 * - the clock in the tick of the next id or later: issue in the clock's
 *   tick (the common path does the same, but only well below the mark);
 * - the next id in a tick ahead of the clock, within the borrowing bound
 *   (never right after a start-up): issue there, borrowed;
 * - the clock in the tick before the next id's, which is sequence 0 (the
 *   last tick's sequence is used up, or it is the floor a start-up found):
 *   wait for the next tick;
 * - the clock further back: a clock step backwards (or one while the
 *   server was down), waited out up to the tolerance, refused beyond.
 *
 * An id to issue must then lie in the layout's lifetime, below the lease's
 * horizon, and below the mark.
 */
void
GenDecide(const GenSituation *s, GenDecision *d)
{
	const SnowflakeLayout *layout = s->layout;
	int64		next_tick = GenTickOf(layout, s->next);
	int64		now;

	memset(d, 0, sizeof(GenDecision));
	if (s->now_ms < layout->epoch_ms)
	{
		d->outcome = GEN_REFUSE_RANGE;
		return;
	}
	now = SnowflakeTickOf(layout, s->now_ms);

	if (now >= next_tick)
	{
		d->tick = now;
		d->first = now > next_tick ? GenStartOfTick(layout, s->next, now) : s->next;
	}
	else if (!s->restarted && s->max_borrow_ms > 0 &&
			 SnowflakeTickStart(layout, next_tick) - s->now_ms <= s->max_borrow_ms)
	{
		d->tick = next_tick;
		d->first = s->next;
		d->borrowed = true;
	}
	else
	{
		d->wait_until_ms = SnowflakeTickStart(layout, next_tick);
		if (now == next_tick - 1 && GenSequenceOf(layout, s->next) == 0)
		{
			d->outcome = GEN_WAIT_TICK;
			return;
		}
		d->behind_ms = s->clock_then_ms - s->now_ms;
		d->outcome = d->behind_ms > s->tolerance_ms ?
			GEN_REFUSE_ROLLBACK : GEN_WAIT_CLOCK;
		return;
	}

	if (d->tick > SnowflakeMaxTick(layout))
		d->outcome = GEN_REFUSE_RANGE;
	else if (d->tick >= s->horizon_tick)
		d->outcome = GEN_NEED_HORIZON;
	else if (d->tick >= s->mark_tick)
		d->outcome = GEN_NEED_MARK;
	else
		d->outcome = GEN_ISSUE;
}

bool
GenLayoutFollows(const SnowflakeLayout *old, const SnowflakeLayout *new, int64 mark_ms)
{
	int64		old_last = GenFirstTickAt(old, mark_ms) - 1;
	int64		new_first = GenFirstTickAt(new, mark_ms);

	if (old_last < 0)
		return true;			/* nothing was issued under the old one */
	if (old_last > SnowflakeMaxTick(old) || new_first < 0 ||
		new_first > SnowflakeMaxTick(new))
		return false;
	return SnowflakeCompose(new, new_first, 0, 0) >
		SnowflakeCompose(old, old_last, SnowflakeMaxNode(old),
						 SnowflakeMaxSequence(old));
}
