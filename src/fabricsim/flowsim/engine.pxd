# C types of flowsim/engine.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with engine.py: every attribute the classes set, the methods typed below.
cimport cython

cdef long long _ARRIVAL, _TIMER

cdef class _Conn:
    cdef public long long flow, index, slot
    cdef public double wire, done_s, cap, delivered
    cdef public object shares

cdef class FlowEngine:
    cdef public object sc, fabric, router, flows, policy, resolver, progress, rates
    cdef public object mss, hdr
    cdef public dict slot_conn
    cdef public double now
    cdef public long long events, seq, conns_started
    cdef public list heap, conns, labels, dependents, deps, tl_links, tl_tops
    cdef public object pending_conns, finish, started, entropy, waiting_deps
    cdef public object top_active, top_peak, _last_util
    cdef public bint record, dirty, stalled, limit_cut
    cdef public const long long[:] _src, _dst, _uplink
    cdef public const double[:] _start
    cdef public long long[:] _pending, _waiting, _act, _peak

    cdef _push(self, double t, long long kind, object payload)
    @cython.locals(src=cython.longlong, dst=cython.longlong, i=cython.Py_ssize_t,
                   first=cython.longlong, conn=_Conn)
    cdef _arrive(self, long long flow)
    cpdef _activate(self, _Conn conn, double cap)
    cdef tuple _incidence_of(self, _Conn conn)
    @cython.locals(i=cython.longlong, act=cython.longlong[:], top=cython.longlong[:])
    cdef _top_count(self, _Conn conn, long long delta)
    @cython.locals(conn=_Conn, flow=cython.longlong, nxt=cython.longlong, c=_Conn,
                   done=cython.double, ready=cython.double, d=cython.longlong)
    cpdef _complete(self, long long slot)
    cdef _recompute(self)
    @cython.locals(stuck=cython.bint, passes=cython.longlong, t_next=cython.double,
                   t_done=cython.double, t=cython.double, now0=cython.double,
                   events0=cython.longlong, kind=cython.longlong)
    cdef _loop(self, double limit)
    cdef _advance(self, double t, bint clamp)
    @cython.locals(slot=cython.longlong)
    cdef _process_completions(self)
