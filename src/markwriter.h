/*-------------------------------------------------------------------------
 *
 * markwriter.h
 *	  The mark writer: the background worker that extends the high-water
 *	  mark ahead of the clock (markwriter.c).
 *
 * Locking: none of its own; it takes a turn of the generator's
 * (GeneratorMarkWriterTurn), which locks what it touches.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_MARKWRITER_H
#define SNOWFLAKE_MARKWRITER_H

/* When preloading: register the background worker. */
extern void MarkWriterInit(void);

#endif							/* SNOWFLAKE_MARKWRITER_H */
