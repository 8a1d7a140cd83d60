# C types of lb/reps.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with reps.py: every attribute the class sets, every method the hot path calls.
cimport cython
from fabricsim.lb.spraying cimport SprayingStrategy

cdef class RepsSpraying(SprayingStrategy):
    cdef public long long size, head, count, recycled, value_set, freezing_timeout_ps
    cdef public long long window, freeze_start_ps, win_pos, reuse, freezes, explorations
    cdef public list buf
    cdef public object rand, clock
    cdef public bint freezing

    @cython.locals(r=cython.double)
    cpdef long long _explore(self, str reason)
    @cython.locals(head=cython.longlong)
    cpdef long long _take_oldest(self)
    @cython.locals(slots=cython.longlong, k=cython.longlong)
    cpdef long long _choose(self)
    @cython.locals(i=cython.longlong, head=cython.longlong)
    cpdef long long next_entropy(self)
    cpdef on_ack(self, long long entropy, bint ecn)
    cpdef on_path_failure(self, long long entropy)
