# C types of flowsim/kernel.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with kernel.py: every attribute the class sets (its base's are in incidence.pxd),
# every method the engine calls.
cimport cython

from fabricsim.flowsim.incidence cimport Incidence

cdef long long _CAP, _UNKNOWN
cdef double _EPS, _DONE_S, _INF

cdef class MaxMinKernel(Incidence):
    cdef public long long nl, epoch, lepoch, nlast
    cdef public long long hsize, nactive, nseed, solves, global_solves
    cdef public long long set_total, fill_rounds, depoch
    cdef public double fallback
    cdef public double[:] capacity, tol, link_bytes, lrem, ldem, ht
    cdef public double[:] cap, rate, rtry, remaining, t_upd
    cdef public long long[:] lmark, lbuf, hs, hv
    cdef public long long[:] bneck, version, smark, sbuf, seed
    cdef public long long[:] abuf, satb, mfirst, mcnt, mslot, dmark, cbuf, fbuf
    cdef public double[:] mcoef
    cdef public signed char[:] active, frozen
    cdef public list free

    cdef _seed(self, long long slot)

    @cython.locals(slot=cython.longlong)
    cpdef long long add(self, long long[:] links, double[:] coefs, double cap_bps,
                        double wire_bytes, double now)
    cpdef reroute(self, long long slot, long long[:] links, double[:] coefs, double cap_bps,
                  double now)
    @cython.locals(left=cython.double, c=cython.Py_ssize_t)
    cpdef remove(self, long long slot, double now)
    cpdef double rate_bps(self, long long slot)
    cpdef double remaining_bytes(self, long long slot, double now)
    @cython.locals(dt=cython.double, r=cython.double, moved=cython.double, left=cython.double,
                   sent=cython.double, c=cython.Py_ssize_t)
    cdef _integrate(self, long long slot, double now)
    @cython.locals(slot=cython.longlong)
    cpdef finalize(self, double now)

    cpdef advance(self, double now, double t, bint clamp)
    @cython.locals(s=cython.longlong)
    cpdef double next_done(self, double now)
    @cython.locals(s=cython.longlong, out=list)
    cpdef list done(self, double now)
    @cython.locals(r=cython.double, t=cython.double, i=cython.longlong, up=cython.longlong,
                   v=cython.longlong)
    cdef _push_done(self, long long slot)
    @cython.locals(n=cython.longlong, t=cython.double, s=cython.longlong, v=cython.longlong,
                   i=cython.longlong, child=cython.longlong)
    cdef _heap_pop(self)
    @cython.locals(slot=cython.longlong)
    cdef _heap_rebuild(self)

    @cython.locals(ep=cython.longlong, n=cython.longlong, k=cython.longlong,
                   s=cython.longlong, limit=cython.double, grown=cython.longlong)
    cpdef settle(self, double now)
    @cython.locals(n=cython.longlong, s=cython.longlong)
    cdef long long _seed_all(self, long long ep)
    @cython.locals(le=cython.longlong, k=cython.longlong, s=cython.longlong,
                   c=cython.longlong, link=cython.longlong)
    cdef _touch(self, long long n)
    # perf: the water-filling helpers are inline (direct C calls, no virtual table; the C
    # compiler may inline them) and, where they cannot raise, noexcept (no error check)
    @cython.locals(integral=cython.bint, live=cython.longlong, nc=cython.longlong,
                   na=cython.longlong, cp=cython.longlong, level=cython.double,
                   step=cython.double, ns=cython.longlong, nf=cython.longlong)
    cdef _waterfill(self, long long n, long long ep)
    @cython.locals(k=cython.longlong, link=cython.longlong, used=cython.double,
                   start=cython.longlong, p=cython.longlong, s=cython.longlong)
    cdef inline void _residual(self, long long ep) noexcept
    @cython.locals(live=cython.longlong, k=cython.longlong, s=cython.longlong,
                   c=cython.longlong, link=cython.longlong)
    cdef inline long long _start_members(self, long long n) noexcept
    @cython.locals(nc=cython.longlong, k=cython.longlong, s=cython.longlong)
    cdef inline long long _list_capped(self, long long n)
    @cython.locals(na=cython.longlong, k=cython.longlong, link=cython.longlong)
    cdef inline long long _demand_links(self)
    @cython.locals(step=cython.double, k=cython.longlong, link=cython.longlong)
    cdef inline double _step(self, long long cp, long long nc, long long na, double level) noexcept
    @cython.locals(k=cython.longlong, s=cython.longlong)
    cdef inline void _unbounded(self, long long n) noexcept
    @cython.locals(ns=cython.longlong, k=cython.longlong, link=cython.longlong)
    cdef inline long long _saturate(self, long long na, double step) noexcept
    @cython.locals(nf=cython.longlong, s=cython.longlong)
    cdef inline long long _stop_capped(self, long long cp, long long nc, double level) noexcept
    @cython.locals(k=cython.longlong, link=cython.longlong, start=cython.longlong,
                   p=cython.longlong, s=cython.longlong, c=cython.longlong, b=cython.longlong)
    cdef inline long long _stop_saturated(self, long long ns, long long nf, double level) noexcept
    @cython.locals(f=cython.longlong, s=cython.longlong, c=cython.longlong,
                   link=cython.longlong, kept=cython.longlong, k=cython.longlong)
    cdef inline long long _drop_demand(self, long long nf, long long na, bint integral)
    @cython.locals(total=cython.longlong, k=cython.longlong, s=cython.longlong,
                   c=cython.longlong, at=cython.longlong, link=cython.longlong,
                   p=cython.longlong, integral=cython.bint, a=cython.double)
    cdef bint _list_members(self, long long n)
    @cython.locals(d=cython.double, start=cython.longlong, p=cython.longlong)
    cdef _demand(self, long long link)
    @cython.locals(grown=cython.longlong, k=cython.longlong, link=cython.longlong,
                   start=cython.longlong, stop=cython.longlong, used=cython.double,
                   max_s=cython.double, min_b=cython.double, others=cython.bint,
                   p=cython.longlong, s=cython.longlong, a=cython.double, r=cython.double,
                   sat=cython.bint, b=cython.longlong, bad=cython.bint)
    cdef long long _check(self, long long n, long long ep)
    @cython.locals(k=cython.longlong, s=cython.longlong, r=cython.double)
    cdef _apply(self, long long n, double now)

    @cython.locals(used=cython.double, start=cython.longlong, p=cython.longlong,
                   s=cython.longlong)
    cpdef double link_load_bps(self, long long link)
    @cython.locals(i=cython.Py_ssize_t)
    cdef _loads(self, long long[:] links, double[:] out)
