# C types of packetsim/core.py for the compiled build (setup.py; the .py is the implementation).
# Keep in step with core.py: every attribute a class sets, every method the hot path calls.
cimport cython

cdef class Port

# perf: prefetch(lst, i, n) asks the CPU to load the first n cache lines of the object lst[i]
# without waiting for them (no reference taken, nothing read): Sim.run asks for the next
# event's callable and argument while the current event runs.  At 1,024 hosts the loop
# waited on these loads (the object headers missed the caches); pure Python skips the call.
cdef extern from *:
    """
    static CYTHON_INLINE void fabricsim_prefetch(PyObject *lst, Py_ssize_t i, int n) {
        const char *o = (const char *)PyList_GET_ITEM(lst, i);
        for (int k = 0; k < n; k++) __builtin_prefetch(o + 64 * k);
    }
    """
    void prefetch "fabricsim_prefetch" (list lst, Py_ssize_t i, int n)

cdef bint COMPILED

cdef inline double _draw(object rand)

cdef class SharedBuffer:
    cdef public long long size, used, peak
    cdef public double alpha
    cpdef long long threshold(self)

cdef class Packet:
    cdef public int kind
    cdef public object pdc
    cdef public long long src, dst, psn, size, payload, entropy, ts, cack, sbase
    cdef public object sack
    cdef public tuple hops
    cdef public int hop
    cdef public bint ecn, ar, last_hop
    cdef public Port prev
    cdef public Packet nxt, bk

cdef class Element:
    cpdef receive(self, Packet pkt)
    cpdef wake(self)

cdef class Route:
    cdef public tuple links, hops, ctrl_hops, tops
    cdef public object name
    cdef public bint ok
    cdef public object user

cdef class RandomPool:
    cdef public object gen
    cdef public double[::1] buf
    cdef public long long block, i
    @cython.locals(i=cython.longlong)
    cpdef double random(self)

cdef class PacketPool:
    cdef public list free
    cpdef Packet get(self)
    cpdef put(self, Packet pkt)

cdef long long _SLOT_BITS, _SEQ_LIMIT, _BUCKET_MAX, _TIME_MAX
cdef unsigned long long _ALL

@cython.locals(n=cython.int, half=cython.int, one=cython.ulonglong)
cdef inline int _low_bit(unsigned long long w)

cdef class Sim:
    cdef public long long now, events, seq, size, nfree, cap, osize, wn, wb, nb, bk, bmax, width
    cdef public long long lo, cut, end
    cdef public bint stopped
    # the integer tables: array objects, read as C arrays
    cdef public long long[::1] heap, free, wheel, count
    cdef public unsigned long long[::1] bits
    cdef public list objs
    @cython.locals(slot=cython.longlong, seq=cython.longlong, key=cython.longlong)
    cpdef at(self, long long t_ps, object fn, object arg=*)
    @cython.locals(b=cython.longlong, c=cython.longlong, i=cython.longlong, one=cython.ulonglong)
    cdef bint _bucket(self, long long t, long long key)
    @cython.locals(i=cython.Py_ssize_t, up=cython.Py_ssize_t, tu=cython.longlong)
    cdef _push(self, Py_ssize_t base, Py_ssize_t n, long long t, long long key)
    @cython.locals(n=cython.longlong, slot=cython.longlong, t=cython.longlong,
                   mask=cython.longlong, el=Element)
    cpdef long long run(self, long long limit_ps)
    @cython.locals(wb=cython.longlong, nb=cython.longlong, b=cython.longlong,
                   w=cython.longlong, word=cython.ulonglong, one=cython.ulonglong,
                   c=cython.longlong,
                   i=cython.Py_ssize_t, k=cython.Py_ssize_t, size=cython.Py_ssize_t)
    cdef _turn(self)
    @cython.locals(cap=cython.Py_ssize_t, t=cython.longlong, key=cython.longlong)
    cdef _open(self, long long lo)
    cdef _pop_root(self)
    @cython.locals(size=cython.Py_ssize_t, t=cython.longlong, key=cython.longlong,
                   i=cython.Py_ssize_t, child=cython.Py_ssize_t, first=cython.Py_ssize_t,
                   stop=cython.Py_ssize_t, j=cython.Py_ssize_t, tc=cython.longlong,
                   tj=cython.longlong)
    cdef _pop(self, Py_ssize_t base, Py_ssize_t n)

cdef class Port(Element):
    cdef public Sim sim
    cdef public long long link
    cdef public double rate_bps
    cdef public long long delay_ps, ppb
    cdef public Packet head, tail, hhead, htail
    cdef public long long qbytes, hbytes, busy_until
    cdef public bint pending
    cdef public long long cap, hcap, kmin, kmax
    cdef public bint trimming, failed
    cdef public long long hdr
    cdef public object rand
    cdef public long long tx_bytes, tx_pkts, marks, trims, drops, data_drops, peak
    cdef public dict lbrec
    cdef public double tail_victim, pmax
    cdef public bint pfc, xoff_sent, paused
    cdef public long long ing, xoff, xon, hroom, peak_ing, pause_len, pause_tok, refresh_tok
    cdef public long long paused_since, pfc_pauses, pfc_paused_ps, pause_at
    cdef public SharedBuffer pool
    cpdef long long ser_ps(self, long long size)
    @cython.locals(pkt=Packet)
    cpdef list queued(self, bint priority)
    @cython.locals(last=Packet)
    cdef _push(self, Packet pkt)
    @cython.locals(last=Packet)
    cdef _hpush(self, Packet pkt)
    @cython.locals(victim=Packet, before=Packet)
    cdef Packet _swap_tail(self, Packet pkt)
    @cython.locals(now=cython.longlong, size=cython.longlong, t=cython.longlong,
                   h=cython.longlong, q=cython.longlong)
    cpdef receive(self, Packet pkt)
    @cython.locals(size=cython.longlong, t=cython.longlong, h=cython.longlong)
    cpdef send(self, Packet pkt, long long now)
    @cython.locals(pkt=Packet, nxt=Packet, size=cython.longlong, t=cython.longlong,
                   h=cython.longlong, q=cython.longlong)
    cpdef complete(self, object _)
    @cython.locals(up=Port, ing=cython.longlong, pool=SharedBuffer, used=cython.longlong,
                   xoff=cython.longlong)
    cdef bint _pfc_admit(self, Packet pkt)
    @cython.locals(up=Port, pool=SharedBuffer, xon=cython.longlong)
    cdef _pfc_release(self, Packet pkt)
    cpdef _send_pause(self, bint xoff)
    cpdef restart(self)
    cpdef wake(self)

cdef class HostPort(Port):
    cdef public object pull, ctrlq, activeq
    cpdef kick(self)
    @cython.locals(pkt=Packet)
    cpdef complete(self, object _)
    cpdef restart(self)
