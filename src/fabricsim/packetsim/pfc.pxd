# C types of packetsim/pfc.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with pfc.py: every attribute a class sets, every method the hot path calls.
cimport cython

cdef class SharedBuffer:
    cdef public long long size, used, peak
    cdef public double alpha
    cpdef long long threshold(self)

cdef class Pfc:
    cdef public object port, sim
    cdef public long long delay_ps, xoff, xon, hroom, pause_len
    cdef public SharedBuffer pool
    cdef public long long ing, peak_ing, pause_at
    cdef public bint xoff_sent
    cdef public long long refresh_tok, pause_tok, paused_since, pauses, paused_total_ps
    cdef public object watch, outs
    cdef public bint dog, storm, in_deadlock
    cdef public long long epoch, last_frame, max_pause_ps
    @cython.locals(ing=cython.longlong, pool=SharedBuffer, used=cython.longlong,
                   xoff=cython.longlong)
    cpdef bint admit(self, long long size)
    @cython.locals(pool=SharedBuffer, xon=cython.longlong)
    cpdef release(self, long long size)
    cpdef send_pause(self, bint xoff)
