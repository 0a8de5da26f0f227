#ifndef FX_CLOCK_H
#define FX_CLOCK_H

/*
 * Time, the few ways forgex reads it: a monotonic clock for durations and
 * deadlines (never goes back, not affected by setting the date), the wall
 * clock for what is recorded, and ISO-8601 UTC text for records and
 * events. None of these can fail on Linux. The prefix is clk_, not
 * clock_, which POSIX reserves for <time.h>.
 */

#include <stddef.h>
#include <time.h>

/** Seconds on the monotonic clock (CLOCK_MONOTONIC), for durations. */
double clk_mono_s(void);

/** The same in milliseconds. */
double clk_mono_ms(void);

/** Milliseconds since the epoch on the wall clock (CLOCK_REALTIME). */
long long clk_wall_ms(void);

/** `t` as "YYYY-MM-DDTHH:MM:SSZ" (UTC) in `out` (at least 21 bytes; cut to `size`). */
void clk_iso8601(char *out, size_t size, time_t t);

/** Now as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, milliseconds) in `out` (at least 25 bytes). */
void clk_iso8601_now_ms(char *out, size_t size);

#endif
