/*
 * aggacc.h -- one aggregate function's state over one window, shared by
 * the aggregate cursor (aggregate.c), which folds rows read from a
 * snapshot, and the rollups' accumulators at insert (rollacc.c), which
 * fold rows as the writer stores them: one fold and one result, so that a
 * window written from either is the same to the bit.
 */
#ifndef TS_AGGACC_H
#define TS_AGGACC_H

#include <stdint.h>

#include "tsstore.h"

/* The state of one function over one window (zeroed: no row yet). */
typedef struct ts__agg_acc {
	uint64_t count;
	__int128 isum;
	double dsum;
	ts_value min, max, first, last;
	int64_t first_ts, last_ts;
	int has_first;
	int overflow;             /* isum left even __int128: after block
	                           * statistics no rows can have (a damaged
	                           * footer), in a summary or in a row added */
} ts__agg_acc;

/* Fold value v of a row whose ts is ts into a (aggregate.c's definitions:
 * NaN is no value, ties of first and last to the least and greatest key,
 * which in ts order is the earlier and the later row). */
void ts__agg_acc_add(ts__agg_acc *a, const ts_value *v, int64_t ts);

/* The value of function fn (not mean's split parts: any ts_aggfn) over a,
 * for a column that is a double or not, named colname in the error of an
 * int64 sum's overflow.  Returns 0, TS_ERANGE or TS_EINVAL. */
int ts__agg_acc_result(ts_aggfn fn, int isdouble, const char *colname, const ts__agg_acc *a,
                       ts_value *v);

#endif
