/* pytest-benchsdk's callgrind helper: callgrind's client requests as plain functions, for
   ctypes. Built on first use by pytest_benchsdk._instruments.build (the C compiler and the
   vendored valgrind.h / callgrind.h beside this file are all it needs). Outside valgrind
   every request is a few no-op instructions. */

#include "valgrind.h"
#include "callgrind.h"

int benchsdk_running_on_valgrind(void) { return RUNNING_ON_VALGRIND; }

void benchsdk_zero_stats(void) { CALLGRIND_ZERO_STATS; }

void benchsdk_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }

void benchsdk_stop_instrumentation(void) { CALLGRIND_STOP_INSTRUMENTATION; }

void benchsdk_dump_stats_at(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
